"""The tolerations a pod gets when tfop replaces its replica on a lost node itself.

A pod with no toleration of its own for the `not-ready` and `unreachable` NoExecute taints gets the apiserver's
300 s ones (DefaultTolerationSeconds), and when its node is tainted the controller-manager's taint eviction
controller sets a timer to delete the pod by name 300 s later. tfop replaces a lost replica after the job's grace
(30 s by default) under the same name. The timer is cancelled only if the controller's worker, handling the old
pod's deletion, finds no pod of that name; when the replacement is already in its cache it cancels nothing, and
the timer deletes the replacement (kube-controller-manager v1.36.3: 38 of 702 replacements of one rack in
`bench.nodeloss`, each a second restart of its replica five minutes after the first). Tolerated without a limit,
the pod gets no timer, and the job's grace alone decides when its replica moves. A template that tolerates either
taint for NoExecute itself keeps its own toleration, whose timer may then fire on a replacement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
NO_EXECUTE = "NoExecute"


def tolerate_node_loss(spec: dict[str, Any]) -> None:
    """Adds to a pod spec an unlimited NoExecute toleration of each node-loss taint it does not tolerate yet."""
    tolerations = list(spec.get("tolerations") or [])
    for key in (TAINT_NOT_READY, TAINT_UNREACHABLE):
        if not any(_covers(toleration, key) for toleration in tolerations if isinstance(toleration, Mapping)):
            tolerations.append({"key": key, "operator": "Exists", "effect": NO_EXECUTE})
    spec["tolerations"] = tolerations


def _covers(toleration: Mapping[str, Any], key: str) -> bool:
    """Whether `toleration` tolerates the NoExecute taint `key` (an empty key with Exists tolerates every taint;
    an empty effect, every effect)."""
    key_matches = toleration.get("key") == key or (not toleration.get("key") and toleration.get("operator") == "Exists")
    return key_matches and toleration.get("effect") in (None, "", NO_EXECUTE)
