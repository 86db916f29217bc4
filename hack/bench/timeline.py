"""What the bench sees happen in one run's namespace, stamped with time.monotonic() as watch events arrive.

The same observer for every contender, so each figure includes the same watch delay: children appearing, pods
created, scheduled (bound to a node) and running (kwok runs them once bound), jobs' Running and Succeeded
conditions. A pod is tied to its TFJob by the controller ownerReference's uid, which tfop, the Go operator and the
limit client all set, whatever they name the children; with tfop's Jobs backend the pod's controller is a batch Job
whose controller is the TFJob, and the Job counts as the child.
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
BATCH_JOBS = Resource("batch", "v1", "jobs", "Job")


@dataclass
class PodSeen:
    name: str
    owner_uid: str  # its controller: the TFJob, or a batch Job (tfop's Jobs backend)
    replica_type: str
    created_at: float
    scheduled_at: float | None = None
    running_at: float | None = None


class Timeline:
    def __init__(self, client: KubeClient, namespace: str, tfjobs: Resource, batch_jobs: bool = False) -> None:
        self.namespace = namespace
        self.children_created: dict[str, float] = {}  # uid of a Pod, Service or Job the TFJob owns -> first seen
        self.pods: dict[str, PodSeen] = {}
        self.batch_job_owner: dict[str, str] = {}  # batch Job uid -> its TFJob's uid
        self.jobs_running: dict[str, float] = {}  # job uid -> when its Running condition was first True
        self.jobs_succeeded: dict[str, float] = {}
        self._changed = threading.Condition()
        resources = [PODS, SERVICES, tfjobs, *((BATCH_JOBS,) if batch_jobs else ())]
        self._informers = [Informer(client, resource, namespace=namespace, watch_timeout_range=(600, 900))
                           for resource in resources]
        handlers = [self._pod, self._service, self._job, self._batch_job]
        for informer, handler in zip(self._informers, handlers, strict=False):
            informer.add_event_handler(handler, _on_update(handler))

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
        """TFJob uid -> its pods (through its batch Jobs with the Jobs backend)."""
        with self._changed:
            grouped: dict[str, list[PodSeen]] = {}
            for pod in self.pods.values():
                job_uid = self.batch_job_owner.get(pod.owner_uid, pod.owner_uid)
                grouped.setdefault(job_uid, []).append(pod)
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

    def pod_curves(self, since: float) -> dict[str, list[float]]:
        """Seconds after `since` at which each pod was created, scheduled and running, each list sorted."""
        with self._changed:
            pods = list(self.pods.values())
        return {stage: sorted(round(at - since, 3) for pod in pods if (at := getattr(pod, f"{stage}_at")) is not None)
                for stage in ("created", "scheduled", "running")}

    # --- event handlers (informer threads) -------------------------------------------------------------------
    def _pod(self, pod: Object) -> None:
        now = time.monotonic()
        metadata = pod["metadata"]
        owner = _controller_uid(metadata)
        if owner is None:
            return
        with self._changed:
            seen = self.pods.get(metadata["uid"])
            if seen is None:
                replica_type = (metadata.get("labels") or {}).get(LABEL_REPLICA_TYPE, "")
                seen = self.pods[metadata["uid"]] = PodSeen(metadata["name"], owner, replica_type.lower(), now)
                if owner not in self.batch_job_owner:  # a Job-made pod is not the operator's child
                    self.children_created.setdefault(metadata["uid"], now)
            if seen.scheduled_at is None and (pod.get("spec") or {}).get("nodeName"):
                seen.scheduled_at = now
            if seen.running_at is None and (pod.get("status") or {}).get("phase") == "Running":
                seen.running_at = now
                if seen.scheduled_at is None:
                    seen.scheduled_at = now
            self._changed.notify_all()

    def _service(self, service: Object) -> None:
        now = time.monotonic()
        metadata = service["metadata"]
        if _controller_uid(metadata) is None:
            return
        with self._changed:
            self.children_created.setdefault(metadata["uid"], now)
            self._changed.notify_all()

    def _batch_job(self, job: Object) -> None:
        now = time.monotonic()
        metadata = job["metadata"]
        owner = _controller_uid(metadata)
        if owner is None:
            return
        with self._changed:
            if metadata["uid"] not in self.batch_job_owner:
                self.batch_job_owner[metadata["uid"]] = owner
                self.children_created[metadata["uid"]] = now
                for pod_uid, pod in self.pods.items():  # pods seen before their Job are not children
                    if pod.owner_uid == metadata["uid"]:
                        self.children_created.pop(pod_uid, None)
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


def _on_update(handler: Callable[[Object], None]) -> Callable[[Object, Object], None]:
    return lambda old, new: handler(new)


def _controller_uid(metadata: Object) -> str | None:
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref["uid"])
    return None
