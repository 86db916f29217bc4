from __future__ import annotations

import pytest

from tfop.kube.clock import FakeClock
from tfop.kube.ratelimit import (
    MaxOf,
    OverallTokenBucket,
    PerItemExponentialBackoff,
    TokenBucket,
    default_controller_rate_limiter,
)


def test_backoff_doubles_per_failure_of_each_item() -> None:
    limiter = PerItemExponentialBackoff(0.005, 1000.0)
    assert [limiter.when("a") for _ in range(5)] == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08])
    assert limiter.when("b") == pytest.approx(0.005)
    assert limiter.num_requeues("a") == 5
    assert limiter.num_requeues("b") == 1
    assert limiter.num_requeues("never") == 0


def test_backoff_is_capped_and_never_overflows() -> None:
    limiter = PerItemExponentialBackoff(0.005, 1000.0)
    delays = [limiter.when("a") for _ in range(2000)]
    # 0.005 * 2**17 = 655 s is the last uncapped step; 0.005 * 2**18 would be 1310 s.
    assert delays[17] == pytest.approx(655.36)
    assert delays[18:] == [1000.0] * (2000 - 18)


def test_forget_restarts_the_backoff() -> None:
    limiter = PerItemExponentialBackoff(0.005, 1000.0)
    for _ in range(4):
        limiter.when("a")
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_token_bucket_serves_the_burst_then_reserves_growing_waits() -> None:
    clock = FakeClock()
    limiter = OverallTokenBucket(qps=10.0, burst=100, clock=clock)
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    # Each reservation beyond the burst waits one more token's time: 0.1 s, 0.2 s, 0.3 s ...
    assert [limiter.when(i) for i in range(3)] == pytest.approx([0.1, 0.2, 0.3])


def test_token_bucket_paces_callers_that_honour_the_waits() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10.0, burst=5, clock=clock)
    for _ in range(5):
        assert bucket.reserve() == 0.0
    # Each caller arrives when its previous reservation came due: one token per 0.1 s, never faster.
    for _ in range(20):
        wait = bucket.reserve()
        assert wait == pytest.approx(0.1)
        clock.step(wait)


def test_token_bucket_refills_up_to_the_burst_only() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10.0, burst=3, clock=clock)
    for _ in range(3):
        bucket.reserve()
    assert bucket.reserve() == pytest.approx(0.1)  # one token in debt
    clock.step(3600.0)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)


def test_try_take_never_borrows() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=1 / 300, burst=2, clock=clock)
    assert [bucket.try_take() for _ in range(4)] == [True, True, False, False]
    clock.step(299.0)
    assert not bucket.try_take()
    clock.step(1.0)
    assert bucket.try_take()
    assert not bucket.try_take()


def test_token_bucket_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="rate > 0"):
        TokenBucket(rate=0.0, burst=1)
    with pytest.raises(ValueError, match="burst >= 1"):
        TokenBucket(rate=1.0, burst=0)
    with pytest.raises(ValueError, match="base_delay <= max_delay"):
        PerItemExponentialBackoff(base_delay=2.0, max_delay=1.0)


def test_max_of_takes_the_longest_delay_and_informs_every_limiter() -> None:
    clock = FakeClock()
    backoff = PerItemExponentialBackoff(1.0, 100.0)
    bucket = OverallTokenBucket(qps=1.0, burst=1, clock=clock)
    limiter = MaxOf(backoff, bucket)
    assert limiter.when("a") == 1.0  # backoff 1 s, bucket 0 s
    assert limiter.when("b") == 1.0  # backoff 1 s, bucket 1 s (in debt)
    assert limiter.when("a") == 2.0  # backoff 2 s, bucket 2 s
    assert limiter.when("c") == 3.0  # backoff 1 s, bucket 3 s: the bucket wins
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert backoff.num_requeues("a") == 0


def test_default_controller_limiter_combines_backoff_and_overall_rate() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    # 100 distinct failing items: within the burst, each waits only its own first backoff step.
    assert [limiter.when(f"item-{i}") for i in range(100)] == pytest.approx([0.005] * 100)
    # The 101st retry is held to the overall 10 per second.
    assert limiter.when("item-100") == pytest.approx(0.1)
    clock.step(3600.0)
    # One item failing again and again grows its own backoff.
    delays = [limiter.when("hot") for _ in range(5)]
    assert delays == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08])
    assert limiter.num_requeues("hot") == 5
    limiter.forget("hot")
    assert limiter.num_requeues("hot") == 0
