from __future__ import annotations

import gc
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from tfop.kube.clock import FakeClock
from tfop.kube.metrics import KubeMetrics
from tfop.kube.ratelimit import PerItemExponentialBackoff, default_controller_rate_limiter
from tfop.kube.workqueue import RateLimitingQueue

# This module's own registry: what it reads is what its queues did, whatever other tests do.
REGISTRY = CollectorRegistry()
METRICS = KubeMetrics.create(REGISTRY)


def unique_name() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


def make_queue(clock: FakeClock, name: str | None = None) -> RateLimitingQueue[str]:
    return RateLimitingQueue(name or unique_name(), default_controller_rate_limiter(clock), clock=clock,
                             metrics=METRICS.workqueues)


class Background:
    """Runs a call on a thread and keeps its result."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.result: Any = None
        self._call = call
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.result = self._call()

    def join(self) -> Any:
        self.thread.join(10.0)
        assert not self.thread.is_alive(), "background call did not finish"
        return self.result


def sample(metric: str, name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(metric, {"name": name, **labels})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_items_come_out_in_order_and_once(clock: FakeClock) -> None:
    queue = make_queue(clock)
    for item in ["a", "b", "a", "c", "b"]:
        queue.add(item)
    assert len(queue) == 3
    assert [queue.get()[0] for _ in range(3)] == ["a", "b", "c"]
    assert queue.get(timeout=0) == (None, False)


def test_item_added_while_processing_waits_for_done(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.get()
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0
    assert queue.get(timeout=0) == (None, False)  # nobody else may hold "a" now
    queue.done("a")
    assert len(queue) == 1
    assert queue.get(timeout=0) == ("a", False)
    queue.done("a")
    assert len(queue) == 0


def test_done_without_readd_does_not_requeue(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.get()
    queue.done("a")
    queue.done("a")  # a second done is harmless
    assert len(queue) == 0


def test_no_two_workers_hold_the_same_item() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(unique_name())
    held: set[str] = set()
    clashes: list[str] = []
    processed: Counter[str] = Counter()
    guard = threading.Lock()

    def work() -> None:
        while True:
            item, shutdown = queue.get()
            if shutdown:
                return
            assert item is not None
            with guard:
                if item in held:
                    clashes.append(item)
                held.add(item)
            time.sleep(0)  # let other workers run while this one holds the item
            with guard:
                held.discard(item)
                processed[item] += 1
            queue.done(item)

    workers = [threading.Thread(target=work, daemon=True) for _ in range(8)]
    for worker in workers:
        worker.start()
    for i in range(5000):
        queue.add(f"key-{i % 5}")
        if i % 50 == 0:
            time.sleep(0)
    assert queue.shutdown_with_drain(timeout=10.0)
    for worker in workers:
        worker.join(10.0)
        assert not worker.is_alive()
    assert clashes == []
    assert set(processed) == {f"key-{i}" for i in range(5)}
    assert len(queue) == 0


def test_get_blocks_until_an_item_arrives(clock: FakeClock) -> None:
    queue = make_queue(clock)
    getter = Background(queue.get)
    assert clock.wait_for_waiters(1)
    queue.add("a")
    assert getter.join() == ("a", False)


def test_get_times_out_on_the_queue_clock(clock: FakeClock) -> None:
    queue = make_queue(clock)
    getter = Background(lambda: queue.get(timeout=5.0))
    assert clock.wait_for_waiters(1)
    clock.step(4.9)
    assert getter.thread.is_alive()
    clock.step(0.1)
    assert getter.join() == (None, False)


def test_shutdown_wakes_every_getter_and_refuses_new_items(clock: FakeClock) -> None:
    queue = make_queue(clock)
    getters = [Background(queue.get) for _ in range(3)]
    assert clock.wait_for_waiters(3)
    queue.shutdown()
    assert [getter.join() for getter in getters] == [(None, True)] * 3
    assert queue.shutting_down()
    queue.add("late")
    queue.add_after("late", 1.0)
    queue.add_rate_limited("late")
    assert len(queue) == 0
    assert queue.get() == (None, True)


def test_items_queued_before_shutdown_are_still_handed_out(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.shutdown()
    assert queue.get() == ("a", False)
    assert queue.get() == (None, True)


def test_delayed_items_arrive_in_deadline_order(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_after("late", 5.0)
    queue.add_after("soon", 2.0)
    queue.add_after("middle", 3.0)
    assert clock.wait_for_waiters(1)  # the delay thread is waiting
    assert len(queue) == 0
    clock.step(1.999)
    assert len(queue) == 0
    clock.step(0.001)
    assert queue.get(timeout=0) == ("soon", False)
    clock.step(1.0)
    assert queue.get(timeout=0) == ("middle", False)
    assert len(queue) == 0
    clock.step(2.0)
    assert queue.get(timeout=0) == ("late", False)
    queue.shutdown()


def test_earlier_deadline_wins_and_later_one_does_not_postpone(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_after("a", 10.0)
    queue.add_after("a", 2.0)  # earlier: wins
    queue.add_after("b", 3.0)
    queue.add_after("b", 30.0)  # later: ignored
    assert clock.wait_for_waiters(1)
    clock.step(2.0)
    assert queue.get(timeout=0) == ("a", False)
    queue.done("a")
    clock.step(1.0)
    assert queue.get(timeout=0) == ("b", False)
    queue.done("b")
    clock.step(30.0)
    assert len(queue) == 0  # the superseded deadlines left nothing behind
    queue.shutdown()


def test_non_positive_delay_adds_at_once(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_after("a", 0.0)
    queue.add_after("b", -1.0)
    assert len(queue) == 2


def test_reparking_an_item_many_times_keeps_the_heap_small(clock: FakeClock) -> None:
    queue = make_queue(clock)
    for i in range(10_000):
        queue.add_after("a", 10_000.0 - i)
    assert len(queue._delays) <= 2 + 64
    clock.wait_for_waiters(1)
    clock.step(1.0)
    assert queue.get(timeout=0) == ("a", False)
    queue.shutdown()


def test_a_batched_add_to_an_idle_item_queues_it_at_once(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_batched("a", 0.5)
    assert queue.get(timeout=0) == ("a", False)
    queue.shutdown()


def test_batched_adds_after_a_run_wait_for_the_period_from_its_end(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_batched("a", 0.5)
    assert queue.get(timeout=0) == ("a", False)
    clock.step(0.25)  # the run takes 0.25 s
    queue.done("a")
    clock.step(0.125)  # (steps a float adds up exactly)
    for _ in range(4):  # a burst of changes
        queue.add_batched("a", 0.5)
        clock.step(0.0625)
    assert clock.wait_for_waiters(1)
    assert len(queue) == 0
    clock.step(0.0625)  # 0.4375 s after the run ended
    assert len(queue) == 0
    clock.step(0.0625)
    assert queue.get(timeout=0) == ("a", False)  # one run for the whole burst
    queue.done("a")
    assert len(queue) == 0
    queue.shutdown()


def start_run(queue: RateLimitingQueue[str], item: str) -> None:
    """`item` queued and taken by a worker: its run has begun."""
    queue.add(item)
    assert queue.get(timeout=0) == (item, False)


def test_a_batched_add_during_a_run_parks_the_item_when_the_run_ends(clock: FakeClock) -> None:
    queue = make_queue(clock)
    start_run(queue, "a")
    for _ in range(2):
        queue.add_batched("a", 0.5)
    clock.step(2.0)  # however long the run takes, the next one starts 0.5 s after its end
    queue.done("a")
    assert len(queue) == 0
    assert clock.wait_for_waiters(1)
    clock.step(0.5)
    assert queue.get(timeout=0) == ("a", False)
    queue.shutdown()


def test_a_plain_add_is_not_held_back_by_a_batch(clock: FakeClock) -> None:
    queue = make_queue(clock)
    start_run(queue, "a")
    queue.add_batched("a", 0.5)
    queue.add("a")  # e.g. the job itself changed: its next run starts when this one ends
    queue.done("a")
    assert queue.get(timeout=0) == ("a", False)
    queue.done("a")
    start_run(queue, "a")  # right after a run, a plain add waits for nothing
    queue.shutdown()


def test_items_idle_longer_than_the_period_are_forgotten(clock: FakeClock) -> None:
    queue = make_queue(clock)
    for item in ("a", "b", "c"):
        queue.add_batched(item, 0.5)
        assert queue.get(timeout=0) == (item, False)
        queue.done(item)
        clock.step(0.3)
    # a's run ended 0.9 s ago and b's 0.6 s ago: both past the period, so the next end lets them go.
    queue.add("d")
    assert queue.get(timeout=0) == ("d", False)
    queue.done("d")
    assert list(queue._ended) == ["c", "d"]
    queue.add_batched("a", 0.5)
    assert queue.get(timeout=0) == ("a", False)
    queue.shutdown()


def test_rate_limited_retries_back_off_until_forgotten(clock: FakeClock) -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(unique_name(), PerItemExponentialBackoff(1.0, 8.0), clock=clock)
    waits = []
    for _ in range(5):
        queue.add_rate_limited("a")
        assert clock.wait_for_waiters(1)
        waited = 0
        while len(queue) == 0:
            clock.step(1.0)
            waited += 1
        waits.append(waited)
        assert queue.get(timeout=0) == ("a", False)
        queue.done("a")
    assert waits == [1, 2, 4, 8, 8]
    assert queue.num_requeues("a") == 5
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.shutdown()


def test_drain_waits_for_items_in_flight(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.add("b")
    queue.get()  # a
    queue.get()  # b
    drain = Background(queue.shutdown_with_drain)
    assert clock.wait_for_waiters(1)
    assert queue.shutting_down()
    queue.add("c")  # refused while draining
    queue.done("a")
    assert drain.thread.is_alive()
    queue.done("b")
    assert drain.join() is True
    assert len(queue) == 0


def test_drain_gives_up_after_its_timeout(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.get()
    drain = Background(lambda: queue.shutdown_with_drain(timeout=30.0))
    assert clock.wait_for_waiters(1)
    clock.step(29.0)
    assert drain.thread.is_alive()
    clock.step(1.0)
    assert drain.join() is False


def test_shutdown_ends_a_drain_early(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.get()
    drain = Background(queue.shutdown_with_drain)
    assert clock.wait_for_waiters(1)
    queue.shutdown()
    assert drain.join() is False


def test_metrics_follow_the_queue(clock: FakeClock) -> None:
    name = unique_name()
    queue = make_queue(clock, name)
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert sample("workqueue_adds_total", name) == 2
    assert sample("workqueue_depth", name) == 2
    clock.step(0.5)
    queue.get()  # "a" waited 0.5 s
    assert sample("workqueue_depth", name) == 1
    assert sample("workqueue_queue_duration_seconds_count", name) == 1
    assert sample("workqueue_queue_duration_seconds_sum", name) == pytest.approx(0.5)
    assert sample("workqueue_queue_duration_seconds_bucket", name, le="0.1") == 0
    assert sample("workqueue_queue_duration_seconds_bucket", name, le="1.0") == 1
    assert sample("workqueue_queue_duration_seconds_bucket", name, le="+Inf") == 1
    clock.step(2.0)
    queue.get()  # "b" waited 2.5 s
    clock.step(3.0)
    # "a" has been processed for 5 s, "b" for 3 s.
    assert sample("workqueue_unfinished_work_seconds", name) == pytest.approx(8.0)
    assert sample("workqueue_longest_running_processor_seconds", name) == pytest.approx(5.0)
    queue.done("a")
    assert sample("workqueue_work_duration_seconds_count", name) == 1
    assert sample("workqueue_work_duration_seconds_bucket", name, le="1.0") == 0
    assert sample("workqueue_work_duration_seconds_bucket", name, le="10.0") == 1
    assert sample("workqueue_longest_running_processor_seconds", name) == pytest.approx(3.0)
    queue.done("b")
    assert sample("workqueue_unfinished_work_seconds", name) == 0
    assert sample("workqueue_longest_running_processor_seconds", name) == 0
    assert sample("workqueue_retries_total", name) == 0
    queue.add_rate_limited("a")
    queue.add_rate_limited("b")
    assert sample("workqueue_retries_total", name) == 2
    queue.shutdown()


def test_queues_with_the_same_name_share_their_series() -> None:
    name = unique_name()
    clock = FakeClock()
    first = make_queue(clock, name)
    second = make_queue(clock, name)  # must not raise "Duplicated timeseries"
    first.add("a")
    second.add("a")
    second.add("b")
    assert sample("workqueue_adds_total", name) == 3
    assert sample("workqueue_depth", name) == 3
    del first
    gc.collect()
    # Counters never go back; gauges forget the queue that is gone.
    assert sample("workqueue_adds_total", name) == 3
    assert sample("workqueue_depth", name) == 2
    second.add("c")
    assert sample("workqueue_adds_total", name) == 4
