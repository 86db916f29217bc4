from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tfop.kube.errors import AlreadyExists, Invalid
from tfop.kube.slowstart import create_in_batches, object_name


def bodies(count: int) -> list[dict[str, Any]]:
    return [{"metadata": {"name": f"pod-{i}"}} for i in range(count)]


class Recorder:
    """Records which creates ran in which batch (batches are separated by the executor's map returning)."""

    def __init__(self, fail: frozenset[str] = frozenset(), exists: frozenset[str] = frozenset()) -> None:
        self.fail, self.exists = fail, exists
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        with self.lock:
            self.calls.append(name)
        if name in self.fail:
            raise Invalid(422, "Invalid", f"{name} is invalid", None)
        if name in self.exists:
            raise AlreadyExists(409, "AlreadyExists", f"{name} exists", None)
        return body


def test_all_succeed_in_doubling_batches() -> None:
    with ThreadPoolExecutor(4) as pool:
        result = create_in_batches(Recorder(), bodies(7), pool, name_of=object_name)
    assert result.created == [f"pod-{i}" for i in range(7)]
    assert (result.failed, result.error, result.skipped) == (None, None, [])


def test_stops_after_the_batch_with_the_first_failure() -> None:
    recorder = Recorder(fail=frozenset({"pod-4"}))
    with ThreadPoolExecutor(4) as pool:
        result = create_in_batches(recorder, bodies(20), pool, name_of=object_name)
    # batches: [0], [1, 2], [3..6] (contains the failure), then nothing more
    assert sorted(recorder.calls) == [f"pod-{i}" for i in range(7)]
    assert result.failed == "pod-4" and isinstance(result.error, Invalid)
    assert result.created == ["pod-0", "pod-1", "pod-2", "pod-3", "pod-5", "pod-6"]
    assert result.skipped == [f"pod-{i}" for i in range(7, 20)]


def test_a_failing_first_create_costs_one_request() -> None:
    recorder = Recorder(fail=frozenset({"pod-0"}))
    with ThreadPoolExecutor(4) as pool:
        result = create_in_batches(recorder, bodies(100), pool, name_of=object_name)
    assert recorder.calls == ["pod-0"] and len(result.skipped) == 99


def test_already_exists_counts_as_created() -> None:
    with ThreadPoolExecutor(2) as pool:
        result = create_in_batches(Recorder(exists=frozenset({"pod-1"})), bodies(3), pool, name_of=object_name)
    assert result.created == ["pod-0", "pod-1", "pod-2"] and result.error is None
