from __future__ import annotations

from unittest.mock import Mock

import pytest
from pytest_mock import MockerFixture

from tfop.kube.expectations import Expectations


@pytest.fixture
def clock(mocker: MockerFixture) -> Mock:
    """The monotonic clock Expectations reads; a test moves it by setting `return_value`."""
    mock: Mock = mocker.Mock(return_value=0.0)
    return mock


def test_unobserved_creates_and_deletes_hold_the_key_until_seen(clock: Mock) -> None:
    expectations = Expectations(ttl=300, clock=clock)
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


def test_observations_of_unexpected_objects_and_other_keys_change_nothing(clock: Mock) -> None:
    expectations = Expectations(clock=clock)
    expectations.expect_creates("ns/a", ["x"])
    expectations.created("ns/b", "x")
    expectations.created("ns/a", "y")
    expectations.deleted("ns/a", "x")
    assert not expectations.satisfied("ns/a")
    assert expectations.satisfied("ns/b")


def test_expectations_expire_so_a_lost_event_cannot_wedge_a_key(clock: Mock) -> None:
    expectations = Expectations(ttl=300, clock=clock)
    expectations.expect_creates("ns/job", ["a"])
    clock.return_value = 299.0
    assert not expectations.satisfied("ns/job")
    expectations.expect_deletes("ns/job", ["uid"])  # a new write restarts the clock
    clock.return_value = 500.0
    assert not expectations.satisfied("ns/job")
    clock.return_value = 600.0
    assert expectations.satisfied("ns/job")
    assert expectations.outstanding("ns/job") == (0, 0)


def test_forget_drops_a_deleted_jobs_expectations(clock: Mock) -> None:
    expectations = Expectations(clock=clock)
    expectations.expect_creates("ns/job", ["a"])
    expectations.forget("ns/job")
    assert expectations.satisfied("ns/job")


def test_a_written_object_waits_until_the_cache_moves_past_the_version_it_replaced(clock: Mock) -> None:
    expectations = Expectations(clock=clock)
    expectations.expect_newer("ns/job", "41")
    assert not expectations.satisfied("ns/job", cached_version="41")
    assert expectations.satisfied("ns/job", cached_version="42")
    assert expectations.satisfied("ns/job", cached_version="41")  # satisfied once: the entry is gone


def test_a_newer_version_does_not_release_unobserved_creates(clock: Mock) -> None:
    expectations = Expectations(clock=clock)
    expectations.expect_newer("ns/job", "41")
    expectations.expect_creates("ns/job", ["a"])
    assert not expectations.satisfied("ns/job", cached_version="42")
    expectations.created("ns/job", "a")
    assert expectations.satisfied("ns/job", cached_version="42")
