"""What the bench sees happen in one run's namespace, stamped with time.monotonic() as watch events arrive.

The same observer for every contender, so each figure includes the same watch delay: children appearing, pods
running (kwok runs them once the scheduler binds them), jobs' Running and Succeeded conditions. Children are
tied to their job by the controller ownerReference's uid, which tfop, the Go operator and the limit client all
set, whatever they name the children.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfop.kube.client import KubeClient
from tfop.kube.informer import Informer
from tfop.kube.resource import PODS, SERVICES, Resource

Object = dict[str, Any]
LABEL_REPLICA_TYPE = "training.kubeflow.org/replica-type"  # tfop and the Go operator both set it


@dataclass
class PodSeen:
    name: str
    job_uid: str
    replica_type: str
    running_at: float | None = None


class Timeline:
    def __init__(self, client: KubeClient, namespace: str, tfjobs: Resource) -> None:
        self.namespace = namespace
        self.children_created: dict[str, float] = {}  # uid of a Pod or Service -> when first seen
        self.pods: dict[str, PodSeen] = {}
        self.jobs_running: dict[str, float] = {}  # job uid -> when its Running condition was first True
        self.jobs_succeeded: dict[str, float] = {}
        self._changed = threading.Condition()
        self._informers = [Informer(client, resource, namespace=namespace, watch_timeout_range=(600, 900))
                           for resource in (PODS, SERVICES, tfjobs)]
        pods, services, jobs = self._informers
        pods.add_event_handler(self._pod, lambda old, new: self._pod(new))
        services.add_event_handler(self._service, lambda old, new: self._service(new))
        jobs.add_event_handler(self._job, lambda old, new: self._job(new))

    def start(self, timeout: float = 30.0) -> None:
        for informer in self._informers:
            informer.start()
        for informer in self._informers:
            if not informer.wait_for_sync(timeout):
                raise TimeoutError(f"the bench's watch on {informer.resource.plural} did not sync")

    def stop(self) -> None:
        for informer in self._informers:
            informer.stop()

    def wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Block until `done()` holds (checked after every event); TimeoutError naming `what` otherwise."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
                self._changed.wait(min(left, 1.0))

    # --- derived figures -------------------------------------------------------------------------------------
    def pods_of_job(self) -> dict[str, list[PodSeen]]:
        with self._changed:
            grouped: dict[str, list[PodSeen]] = {}
            for pod in self.pods.values():
                grouped.setdefault(pod.job_uid, []).append(pod)
            return grouped

    def running_pods(self) -> int:
        with self._changed:
            return sum(1 for pod in self.pods.values() if pod.running_at is not None)

    def nth_created(self, count: int) -> float:
        """When the count-th child appeared (the moment the workload's children were all there)."""
        with self._changed:
            return sorted(self.children_created.values())[count - 1]

    def created_curve(self) -> list[float]:
        with self._changed:
            return sorted(self.children_created.values())

    # --- event handlers (informer threads) -------------------------------------------------------------------
    def _pod(self, pod: Object) -> None:
        now = time.monotonic()
        metadata = pod["metadata"]
        owner = _controller_uid(metadata)
        if owner is None:
            return
        with self._changed:
            self.children_created.setdefault(metadata["uid"], now)
            seen = self.pods.get(metadata["uid"])
            if seen is None:
                replica_type = (metadata.get("labels") or {}).get(LABEL_REPLICA_TYPE, "")
                seen = self.pods[metadata["uid"]] = PodSeen(metadata["name"], owner, replica_type.lower())
            if seen.running_at is None and (pod.get("status") or {}).get("phase") == "Running":
                seen.running_at = now
            self._changed.notify_all()

    def _service(self, service: Object) -> None:
        now = time.monotonic()
        metadata = service["metadata"]
        if _controller_uid(metadata) is None:
            return
        with self._changed:
            self.children_created.setdefault(metadata["uid"], now)
            self._changed.notify_all()

    def _job(self, job: Object) -> None:
        now = time.monotonic()
        uid = job["metadata"]["uid"]
        conditions = {c.get("type"): c.get("status") for c in (job.get("status") or {}).get("conditions") or []}
        with self._changed:
            if conditions.get("Running") == "True":
                self.jobs_running.setdefault(uid, now)
            if conditions.get("Succeeded") == "True":
                self.jobs_running.setdefault(uid, now)  # finished before we saw it running counts as running
                self.jobs_succeeded.setdefault(uid, now)
            self._changed.notify_all()


def _controller_uid(metadata: Object) -> str | None:
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref["uid"])
    return None
