"""The TFJobs of `bench.resize`'s namespace and their pods as two watches show them, and, once a resize step
begins, when each job was first seen with the new count recorded in its status, (by restart) with its old pods gone,
with its pods done, with its status done, and done (both: bench/resize_done.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.resize_done import Target, old_pods_gone, pods_done, recorded, status_done
from tfop.api.constants import ANNOTATION_TF_CLUSTER, LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from tfop.controller.children import TFJOBS
from tfop.kube.client import KubeClient
from tfop.kube.informer import Informer
from tfop.kube.resource import PODS
from tfop.objects import Object

SYNC_SECONDS = 300.0
POD_LABELS = (LABEL_JOB_NAME, LABEL_REPLICA_TYPE, LABEL_REPLICA_INDEX)


def slim_pod(pod: Object) -> Object:
    """What the predicate reads; TF_CONFIG in the spec is left out (it grows with the replicas squared)."""
    metadata = pod["metadata"]
    kept = {key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
            if key in metadata}
    labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
    kept["labels"] = {key: labels[key] for key in POD_LABELS if key in labels}
    if ANNOTATION_TF_CLUSTER in annotations:
        kept["annotations"] = {ANNOTATION_TF_CLUSTER: annotations[ANNOTATION_TF_CLUSTER]}
    return {"metadata": kept, "status": {"phase": (pod.get("status") or {}).get("phase")}}


def slim_job(job: Object) -> Object:
    metadata = job["metadata"]
    return {"metadata": {key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion")},
            "status": job.get("status") or {}}


@dataclass
class StepTimes:
    """time.time() of the first moment each was seen, by job name."""

    recorded: dict[str, float] = field(default_factory=dict)
    old_pods_gone: dict[str, float] = field(default_factory=dict)  # by restart only
    pods: dict[str, float] = field(default_factory=dict)
    status: dict[str, float] = field(default_factory=dict)
    done: dict[str, float] = field(default_factory=dict)
    terminating: set[str] = field(default_factory=set)  # uids of pods seen being deleted, before they went


class ResizeWatch:
    """Each informer's thread calls its handler in event order; every figure is read under one lock."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self._lock = threading.Lock()
        self.jobs: dict[str, Object] = {}
        self.pods: dict[str, dict[str, Object]] = {}  # job name -> pod name -> pod
        self._targets: dict[str, Target] = {}
        self.times = StepTimes()
        pods = Informer(client, PODS, namespace=namespace, transform=slim_pod)
        pods.add_event_handler(on_add=lambda pod: self._pod_changed(pod, gone=False),
                               on_update=lambda _old, pod: self._pod_changed(pod, gone=False),
                               on_delete=lambda pod, _stale: self._pod_changed(pod, gone=True))
        jobs = Informer(client, TFJOBS, namespace=namespace, transform=slim_job)
        jobs.add_event_handler(on_add=lambda job: self._job_changed(job, gone=False),
                               on_update=lambda _old, job: self._job_changed(job, gone=False),
                               on_delete=lambda job, _stale: self._job_changed(job, gone=True))
        self._informers = [pods, jobs]
        for informer in self._informers:
            informer.start()
        for informer in self._informers:
            if not informer.wait_for_sync(SYNC_SECONDS):
                self.close()
                raise RuntimeError(f"the {informer.resource.plural} of {namespace} were not listed in "
                                   f"{SYNC_SECONDS:.0f} s")

    def steady(self, replicas: Mapping[str, int]) -> int:
        """How many jobs run at `replicas` with a status that says so (pods done in place, nothing to replace)."""
        target = Target(replicas, by_restart=False)
        with self._lock:
            return sum(status_done(job, target.workers) and pods_done(self.pods.get(name, {}).values(), target)
                       for name, job in self.jobs.items())

    def begin(self, replicas: Mapping[str, int], by_restart: bool) -> None:
        """From now on, time each job's resize to `replicas`, against its pods as they are now."""
        with self._lock:
            self.times = StepTimes()
            self._targets = {name: Target(replicas, by_restart,
                                          frozenset(pod["metadata"]["uid"] for pod in self.pods.get(name, {}).values()))
                             for name in self.jobs}

    def finish(self) -> StepTimes:
        """Stop timing; the step's times, which no informer thread writes from now on."""
        with self._lock:
            self._targets = {}
            return self.times

    def done(self) -> int:
        with self._lock:
            return len(self.times.done)

    def job_names(self) -> set[str]:
        with self._lock:
            return set(self.jobs)

    def last_resizes(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict((job.get("status") or {}).get("lastResize") or {}) for job in self.jobs.values()]

    def uids(self) -> dict[str, str]:
        """Every pod's uid by name, now."""
        with self._lock:
            return {name: pod["metadata"]["uid"] for pods in self.pods.values() for name, pod in pods.items()}

    def close(self) -> None:
        for informer in self._informers:
            informer.stop()

    def _pod_changed(self, pod: Object, *, gone: bool) -> None:
        metadata, now = pod["metadata"], time.time()
        job = metadata["labels"].get(LABEL_JOB_NAME)
        if not isinstance(job, str):
            return
        with self._lock:
            pods = self.pods.setdefault(job, {})
            if not gone:
                pods[metadata["name"]] = pod
                if metadata.get("deletionTimestamp") and self._targets:
                    self.times.terminating.add(metadata["uid"])
            elif uid_of(pods.get(metadata["name"])) == metadata["uid"]:  # not a newer pod of that name
                del pods[metadata["name"]]
            self._time(job, now)

    def _job_changed(self, job: Object, *, gone: bool) -> None:
        name, now = job["metadata"]["name"], time.time()
        with self._lock:
            if gone:
                self.jobs.pop(name, None)
                return
            self.jobs[name] = job
            self._time(name, now)

    def _time(self, name: str, now: float) -> None:
        target, job, times = self._targets.get(name), self.jobs.get(name), self.times
        if target is None or job is None or name in times.done:
            return
        if recorded(job, target.workers):
            times.recorded.setdefault(name, now)
        pods = self.pods.get(name, {}).values()
        if old_pods_gone(pods, target):
            times.old_pods_gone.setdefault(name, now)
        are_done, says_done = pods_done(pods, target), status_done(job, target.workers)
        if are_done:
            times.pods.setdefault(name, now)
        if says_done:
            times.status.setdefault(name, now)
        if are_done and says_done:
            times.done[name] = now


def uid_of(pod: Object | None) -> str | None:
    return None if pod is None else str(pod["metadata"]["uid"])
