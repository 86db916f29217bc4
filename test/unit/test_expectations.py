from __future__ import annotations

from tfop.kube.expectations import Expectations


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_unobserved_creates_and_deletes_hold_the_key_until_seen() -> None:
    expectations = Expectations(ttl=300, clock=Clock())
    assert expectations.satisfied("ns/job")
    expectations.expect_creates("ns/job", ["a", "b"])
    expectations.expect_deletes("ns/job", ["uid-1"])
    expectations.created("ns/job", "a")
    expectations.deleted("ns/job", "uid-1")
    assert not expectations.satisfied("ns/job")
    assert expectations.outstanding("ns/job") == (1, 0)
    expectations.created("ns/job", "b")
    assert expectations.satisfied("ns/job")
    assert expectations.outstanding("ns/job") == (0, 0)


def test_observations_of_unexpected_objects_and_other_keys_change_nothing() -> None:
    expectations = Expectations(clock=Clock())
    expectations.expect_creates("ns/a", ["x"])
    expectations.created("ns/b", "x")
    expectations.created("ns/a", "y")
    expectations.deleted("ns/a", "x")
    assert not expectations.satisfied("ns/a")
    assert expectations.satisfied("ns/b")


def test_expectations_expire_so_a_lost_event_cannot_wedge_a_key() -> None:
    clock = Clock()
    expectations = Expectations(ttl=300, clock=clock)
    expectations.expect_creates("ns/job", ["a"])
    clock.now = 299.0
    assert not expectations.satisfied("ns/job")
    expectations.expect_deletes("ns/job", ["uid"])  # a new write restarts the clock
    clock.now = 500.0
    assert not expectations.satisfied("ns/job")
    clock.now = 600.0
    assert expectations.satisfied("ns/job")
    assert expectations.outstanding("ns/job") == (0, 0)


def test_forget_drops_a_deleted_jobs_expectations() -> None:
    expectations = Expectations(clock=Clock())
    expectations.expect_creates("ns/job", ["a"])
    expectations.forget("ns/job")
    assert expectations.satisfied("ns/job")


def test_a_written_object_waits_until_the_cache_moves_past_the_version_it_replaced() -> None:
    expectations = Expectations(clock=Clock())
    expectations.expect_newer("ns/job", "41")
    assert not expectations.satisfied("ns/job", cached_version="41")
    assert expectations.satisfied("ns/job", cached_version="42")
    assert expectations.satisfied("ns/job", cached_version="41")  # satisfied once: the entry is gone


def test_a_newer_version_does_not_release_unobserved_creates() -> None:
    expectations = Expectations(clock=Clock())
    expectations.expect_newer("ns/job", "41")
    expectations.expect_creates("ns/job", ["a"])
    assert not expectations.satisfied("ns/job", cached_version="42")
    expectations.created("ns/job", "a")
    assert expectations.satisfied("ns/job", cached_version="42")
