"""Watches the run's namespace (TFJobs and pods, through tfop's own informers, which re-list after a 410 or an
apiserver restart) and keeps what the invariants read: every pod's life, every job's end, the state right now."""

from __future__ import annotations

import threading
import time
from typing import Any

from chaos.observations import JobEnd, JobView, PodLife, controller_uid, epoch, job_end, job_view, pod_is_live, pod_task
from tfop.kube.client import KubeClient
from tfop.kube.informer import Informer
from tfop.kube.resource import PODS, Resource
from tfop.kube.store import by_controller_uid

TFJOBS = Resource("kubeflow.org", "v1", "tfjobs", "TFJob")
OWNER_INDEX = "owner"


class Observer:
    def __init__(self, client: KubeClient, namespace: str) -> None:
        self._lock = threading.Lock()
        self.lives: dict[str, PodLife] = {}
        self.ends: dict[str, JobEnd] = {}  # by job name (names are never reused within a run)
        self.jobs = Informer(client, TFJOBS, namespace=namespace)
        self.pods = Informer(client, PODS, namespace=namespace, indexers={OWNER_INDEX: by_controller_uid})
        self.jobs.add_event_handler(self._job_seen, lambda _, new: self._job_seen(new))
        self.pods.add_event_handler(self._pod_seen, lambda _, new: self._pod_seen(new), self._pod_gone)

    def start(self) -> None:
        self.jobs.start()
        self.pods.start()
        for informer in (self.jobs, self.pods):
            informer.wait_for_sync(120)

    def stop(self) -> None:
        self.jobs.stop()
        self.pods.stop()

    def _job_seen(self, job: dict[str, Any]) -> None:
        end = job_end(job)
        if end is None:
            return
        with self._lock:
            first = self.ends.get(end.name)
            # The end as first seen; the restarts as last seen (a status may still move them after the condition).
            self.ends[end.name] = end if first is None else JobEnd(
                first.name, first.uid, first.condition, first.reason, first.finished_at, end.restarts)

    def _pod_seen(self, pod: dict[str, Any]) -> None:
        task, meta = pod_task(pod), pod["metadata"]
        if task is None:
            return
        now = time.time()
        with self._lock:
            life = self.lives.get(meta["uid"])
            if life is None:
                life = self.lives[meta["uid"]] = PodLife(meta["uid"], meta["name"], controller_uid(pod), task,
                                                         epoch(meta["creationTimestamp"]))
            if pod_is_live(pod):
                if life.live_from is None:
                    life.live_from = now
            elif life.live_from is not None and life.live_to is None:
                life.live_to = now

    def _pod_gone(self, pod: dict[str, Any], _stale: bool) -> None:
        with self._lock:
            life = self.lives.get(pod["metadata"]["uid"])
            if life is not None and life.live_from is not None and life.live_to is None:
                life.live_to = time.time()

    def views(self) -> list[JobView]:
        return [job_view(job, self.pods.store.by_index(OWNER_INDEX, job["metadata"]["uid"]))
                for job in self.jobs.store.list()]

    def job(self, name: str) -> dict[str, Any] | None:
        return self.jobs.store.get(f"{self.namespace}/{name}")

    @property
    def namespace(self) -> str:
        return self.jobs.namespace or ""

    def pods_of(self, job_uid: str) -> list[dict[str, Any]]:
        return self.pods.store.by_index(OWNER_INDEX, job_uid)

    def snapshot(self) -> tuple[list[PodLife], dict[str, JobEnd]]:
        with self._lock:
            return list(self.lives.values()), dict(self.ends)
