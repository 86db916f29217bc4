from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any
from unittest.mock import Mock

from pytest_mock import MockerFixture

from tfop.kube.errors import AlreadyExists, Invalid
from tfop.kube.slowstart import create_in_batches, object_name


def bodies(count: int) -> list[dict[str, Any]]:
    return [{"metadata": {"name": f"pod-{i}"}} for i in range(count)]


def fake_create(mocker: MockerFixture, fail: frozenset[str] = frozenset(),
                exists: frozenset[str] = frozenset()) -> Mock:
    """Stands in for the client's create: refuses the names in `fail` as invalid, finds those in `exists` there
    already, and creates the rest; the mock records every call."""

    def create(body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        if name in fail:
            raise Invalid(422, "Invalid", f"{name} is invalid", None)
        if name in exists:
            raise AlreadyExists(409, "AlreadyExists", f"{name} exists", None)
        return body

    mock: Mock = mocker.Mock(side_effect=create)
    return mock


def called_names(create: Mock) -> list[str]:
    return [call.args[0]["metadata"]["name"] for call in create.call_args_list]


def test_all_succeed_in_doubling_batches(mocker: MockerFixture) -> None:
    with ThreadPoolExecutor(4) as pool:
        result = create_in_batches(fake_create(mocker), bodies(7), pool, name_of=object_name)
    assert result.created == [f"pod-{i}" for i in range(7)]
    assert (result.failed, result.error, result.skipped) == (None, None, [])


def test_stops_after_the_batch_with_the_first_failure(mocker: MockerFixture) -> None:
    create = fake_create(mocker, fail=frozenset({"pod-4"}))
    with ThreadPoolExecutor(4) as pool:
        result = create_in_batches(create, bodies(20), pool, name_of=object_name)
    # batches: [0], [1, 2], [3..6] (contains the failure), then nothing more
    assert sorted(called_names(create)) == [f"pod-{i}" for i in range(7)]
    assert result.failed == "pod-4" and isinstance(result.error, Invalid)
    assert result.created == ["pod-0", "pod-1", "pod-2", "pod-3", "pod-5", "pod-6"]
    assert result.skipped == [f"pod-{i}" for i in range(7, 20)]


def test_a_failing_first_create_costs_one_request(mocker: MockerFixture) -> None:
    create = fake_create(mocker, fail=frozenset({"pod-0"}))
    with ThreadPoolExecutor(4) as pool:
        result = create_in_batches(create, bodies(100), pool, name_of=object_name)
    assert called_names(create) == ["pod-0"] and len(result.skipped) == 99


def test_already_exists_counts_as_created(mocker: MockerFixture) -> None:
    with ThreadPoolExecutor(2) as pool:
        result = create_in_batches(fake_create(mocker, exists=frozenset({"pod-1"})), bodies(3), pool,
                                   name_of=object_name)
    assert result.created == ["pod-0", "pod-1", "pod-2"] and result.error is None


def test_a_failure_stops_only_its_group(mocker: MockerFixture) -> None:
    """Items of the other groups keep filling the growing batches."""
    items = [{"metadata": {"name": f"{group}-{i}"}} for i in range(4) for group in ("a", "b")]
    create = fake_create(mocker, fail=frozenset({"a-0"}))
    with ThreadPoolExecutor(1) as pool:  # one thread: calls happen in batch order
        result = create_in_batches(create, items, pool, name_of=object_name,
                                   group_of=lambda body: object_name(body)[0])
    # batches: [a-0] fails; [b-0, b-1]; [b-2, b-3]; group a is skipped after its failure
    assert called_names(create) == ["a-0", "b-0", "b-1", "b-2", "b-3"]
    assert result.failures == [("a-0", result.error)] and isinstance(result.error, Invalid)
    assert result.created == ["b-0", "b-1", "b-2", "b-3"]
    assert result.skipped == ["a-1", "a-2", "a-3"]
