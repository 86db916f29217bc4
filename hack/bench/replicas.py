"""Every pod of the bench's namespace as a watch shows it, for `bench.nodeloss`: which pods run where, and after a
rack is lost, which replicas were replaced (the same name, a new uid, running on a node that was not lost) and
whether any other replica was touched (deleted, marked for deletion, or under a new uid)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from tfop.kube.client import KubeClient
from tfop.kube.informer import Informer
from tfop.kube.resource import PODS
from tfop.objects import Object

SYNC_SECONDS = 300.0  # the first list of ~14,000 pods on a loaded machine


# The condition the controller-manager's taint eviction controller writes on a pod before it deletes it.
TAINT_EVICTION = ("DisruptionTarget", "DeletionByTaintManager")


@dataclass(frozen=True)
class PodSeen:
    uid: str
    node: str
    running: bool
    deleting: bool
    evicted: bool = False  # marked by the taint eviction controller: deleted by Kubernetes, not by the operator


def _seen(pod: dict[str, Any]) -> PodSeen:
    status = pod.get("status") or {}
    return PodSeen(pod["metadata"]["uid"], (pod.get("spec") or {}).get("nodeName") or "",
                   status.get("phase") == "Running", bool(pod["metadata"].get("deletionTimestamp")),
                   any((entry.get("type"), entry.get("reason")) == TAINT_EVICTION
                       for entry in status.get("conditions") or []))


def _slim(pod: Object) -> Object:
    """What the watch keeps of a pod: its store holds one per replica, ~14,000 at the default scale."""
    metadata, status = pod["metadata"], pod.get("status") or {}
    return {"metadata": {key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion",
                                                        "deletionTimestamp") if key in metadata},
            "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName")},
            "status": {"phase": status.get("phase"),
                       "conditions": [entry for entry in status.get("conditions") or []
                                      if entry.get("type") == TAINT_EVICTION[0]]}}


class Replicas:
    """Pods by name as their events tell them (`apply`, in event order), and what became of the replicas since a
    baseline (`lose`, `restart_all`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.pods: dict[str, PodSeen] = {}
        self._baseline: dict[str, PodSeen] = {}  # the pods when the rack was lost
        self._lost: set[str] = set()  # the names of the replicas on the lost nodes
        self._lost_nodes: frozenset[str] = frozenset()
        self.created_at: dict[str, float] = {}  # name -> time.time() its replacement was first seen
        self.replaced_at: dict[str, float] = {}  # name -> time.time() its replacement was first seen running
        self.marked_at: dict[str, float] = {}  # name -> time.time() its pod at the baseline was seen deleting or gone
        self.touched: set[str] = set()  # names of replicas elsewhere that were deleted or changed uid
        # Of those, the ones Kubernetes' taint eviction controller deleted: a timer it set for an earlier rack's
        # pod fires on the replacement of the same name (kube-controller-manager v1.36, tainteviction).
        self.evicted: set[str] = set()


    def running(self) -> int:
        with self._lock:
            return sum(pod.running and not pod.deleting for pod in self.pods.values())

    def lose(self, nodes: frozenset[str]) -> dict[str, PodSeen]:
        """From now on, count replacements of the replicas on `nodes`, and forget an earlier rack's; returns them
        as they are now."""
        with self._lock:
            return self._count_from(nodes, {name for name, pod in self.pods.items() if pod.node in nodes})

    def restart_all(self) -> dict[str, PodSeen]:
        """From now on, count replacements of every replica (a restart together: the same name, a new uid,
        running on any node) and when each one's pod of now was marked for deletion; returns them as they are."""
        with self._lock:
            return self._count_from(frozenset(), set(self.pods))

    def _count_from(self, nodes: frozenset[str], lost: set[str]) -> dict[str, PodSeen]:
        """A new baseline, the pods of now, with what was counted since the last one forgotten: from now on the
        replicas `lost` (their pods on `nodes`, if any are named) are counted as they are replaced; returns their
        pods of now. The lock is held."""
        self.created_at.clear()
        self.replaced_at.clear()
        self.marked_at.clear()
        self.touched.clear()
        self.evicted.clear()
        self._lost_nodes = nodes
        self._baseline = dict(self.pods)
        self._lost = lost
        return {name: self.pods[name] for name in lost}

    def replaced(self) -> int:
        with self._lock:
            return len(self.replaced_at)

    def unchanged_elsewhere(self) -> tuple[int, int]:
        """(replicas off the lost nodes now as they were at the loss, how many there were)."""
        with self._lock:
            others = {name: pod for name, pod in self._baseline.items() if name not in self._lost}
            same = sum(name in self.pods and self.pods[name].uid == pod.uid and not self.pods[name].deleting
                       for name, pod in others.items())
            return same, len(others)

    def apply(self, kind: str, pod: dict[str, Any]) -> None:
        name, now = pod["metadata"]["name"], time.time()
        with self._lock:
            if kind == "DELETED":
                if name in self.pods and self.pods[name].uid == pod["metadata"]["uid"]:
                    self._forget(name)
                self._mark(name, pod["metadata"]["uid"], now)
                return
            seen = _seen(pod)
            self.pods[name] = seen
            if not self._baseline:
                return
            before = self._baseline.get(name)
            if name in self._lost:
                if seen.deleting:
                    self._mark(name, seen.uid, now)
                if before is not None and seen.uid != before.uid:
                    self.created_at.setdefault(name, now)  # by the operator: the rest is the scheduler's and kwok's
                    if seen.running and not seen.deleting and seen.node not in self._lost_nodes:
                        self.replaced_at.setdefault(name, now)
            elif before is not None and (seen.uid != before.uid or seen.deleting):
                self._touch(name, seen)

    def _mark(self, name: str, uid: str, now: float) -> None:
        """The replica's pod at the baseline is going (marked for deletion, or gone): when first seen so."""
        before = self._baseline.get(name)
        if before is not None and name in self._lost and uid == before.uid:
            self.marked_at.setdefault(name, now)

    def _forget(self, name: str) -> None:
        last = self.pods.pop(name)
        if self._baseline and name in self._baseline and name not in self._lost:
            self._touch(name, last)

    def _touch(self, name: str, seen: PodSeen) -> None:
        self.touched.add(name)
        if seen.evicted:
            self.evicted.add(name)


class ReplicaWatch(Replicas):
    """The namespace's pods by name, kept current by an informer (its thread calls `apply` in event order)."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        super().__init__()
        self.client = client
        self.namespace = namespace
        self._informer = Informer(client, PODS, namespace=namespace, transform=_slim)
        self._informer.add_event_handler(on_add=lambda pod: self.apply("ADDED", pod),
                                         on_update=lambda _old, pod: self.apply("MODIFIED", pod),
                                         on_delete=lambda pod, _stale: self.apply("DELETED", pod))
        self._informer.start()
        if not self._informer.wait_for_sync(SYNC_SECONDS):
            self._informer.stop()
            raise RuntimeError(f"the pods of {namespace} were not listed in {SYNC_SECONDS:.0f} s")

    def close(self) -> None:
        self._informer.stop()
