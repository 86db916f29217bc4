"""Which DELETE answers say the object is gone (its name free) rather than marked for deletion
(tfop.kube.client.removed_by_delete). The pods' answers are those kube-apiserver v1.36.3 gave for a pod bound to a
node, deleted with a uid precondition."""

from __future__ import annotations

from typing import Any

import pytest

from tfop.kube.client import removed_by_delete

MARKED = "2026-11-27T17:04:43Z"
ROWS: dict[str, tuple[dict[str, Any], bool]] = {
    "a pod deleted with grace 0 and no finalizer: removed": (
        {"kind": "Pod", "metadata": {"name": "plain", "deletionTimestamp": MARKED,
                                     "deletionGracePeriodSeconds": 0}}, True),
    "the same pod held by a finalizer: still there": (
        {"kind": "Pod", "metadata": {"name": "held", "deletionTimestamp": MARKED, "deletionGracePeriodSeconds": 0,
                                     "finalizers": ["example.com/hold"]}}, False),
    "a pod deleted gracefully: its kubelet has 30 s to confirm": (
        {"kind": "Pod", "metadata": {"name": "graceful", "deletionTimestamp": MARKED,
                                     "deletionGracePeriodSeconds": 30}}, False),
    "a Service (no graceful deletion): removed": ({"kind": "Service", "metadata": {"name": "svc"}}, True),
    "a Status of success: removed": ({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"},
                                     True),
    "a Status that is not a success": ({"kind": "Status", "metadata": {}, "status": "Failure"}, False),
}


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_removed_by_delete(row: tuple[dict[str, Any], bool]) -> None:
    answer, removed = row
    assert removed_by_delete(answer) is removed
