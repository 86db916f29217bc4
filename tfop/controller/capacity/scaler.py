"""The capacity auto-scaler's loop: every `checkEverySeconds`, read the caches (cluster.py), decide (decide.py),
and write each resize as the job's Worker count with its reason (tfop.kubeflow.org/resize-reason) in one merge
patch, conditional on the job's resourceVersion: a job changed meanwhile is looked at again next time. The
planner's resize policy does the rest (restart together or in place, the Resized event, status.lastResize).

Callers may rely on: nothing is written before its caches have synced, and only while `start`ed (the leader);
a failed write or look is logged and retried at the next look, never raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

import structlog

from tfop.api.constants import ANNOTATION_RESIZE_REASON
from tfop.controller.capacity.cluster import (
    BY_NODE,
    elastic_job,
    node_rooms,
    pod_node,
    slim_node,
    slim_pod,
    waiting_pods,
    worker_key,
)
from tfop.controller.capacity.decide import decide
from tfop.controller.capacity.model import Memory, Resize
from tfop.controller.children import TFJOBS
from tfop.controller.owners import owner_key
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.kube.client import KubeClient
from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.errors import ApiError
from tfop.kube.informer import Informer
from tfop.kube.resource import NODES, PODS
from tfop.kube.store import Store, object_key
from tfop.objects import Object

log = structlog.get_logger("tfop.capacity")
BY_JOB = "tfjob"


def _job_of(pod: Object) -> list[str]:
    key = owner_key(pod)
    return [key] if key else []


class CapacityScaler:
    def __init__(self, client: KubeClient, config: ControllerConfig, job_stores: Callable[[], list[Store]], *,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        """`job_stores`: the controller's caches of TFJobs (the jobs this operator runs)."""
        self.client = client
        self.config = config
        self.settings = config.capacity_scaling
        self.job_stores = job_stores
        self.clock = clock
        self.nodes = Informer(client, NODES, transform=slim_node)
        self.pods = Informer(client, PODS, transform=slim_pod, indexers={BY_NODE: pod_node, BY_JOB: _job_of})
        self.memory = Memory()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start_informers(self) -> None:
        self.nodes.start()
        self.pods.start()

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="capacity-scaler", daemon=True)
        self._thread.start()
        log.info("capacity auto-scaler started", grow_after=self.settings.grow_after,
                 shrink_after=self.settings.shrink_after, give_up_after=self.settings.give_up_after)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def stop_informers(self) -> None:
        self.nodes.stop()
        self.pods.stop()

    def _run(self) -> None:
        while not self._stop.wait(self.settings.check_every):
            if not (self.nodes.has_synced() and self.pods.has_synced()):
                continue
            try:
                self.look()
            except Exception:  # a look must never end the loop: the next one starts afresh
                log.exception("capacity look failed")

    def look(self) -> list[Resize]:
        """One look: decide, and write what was decided. Returns the resizes written."""
        now = datetime.fromtimestamp(self.clock.wall(), UTC)
        jobs = {object_key(job): job for store in self.job_stores() for job in store.list()}
        elastic = [found for key, job in jobs.items()
                   if (found := elastic_job(job, self.config, self.pods.store.by_index(BY_JOB, key))) is not None]
        rooms = node_rooms(self.nodes.store.list(), lambda name: self.pods.store.by_index(BY_NODE, name))
        waiting = waiting_pods(self.pods.store.list(), jobs)
        decision = decide(now, self.settings, rooms, elastic, waiting, self.memory)
        if decision.memory.idle_since is not None and self.memory.idle_since is None:
            log.info("capacity idle: elastic jobs grow if it stays so", grow_after=self.settings.grow_after)
        self.memory = decision.memory
        return [resize for resize in decision.resizes if self._write(jobs[resize.job], resize)]

    def _write(self, job: Object, resize: Resize) -> bool:
        key = worker_key(job)
        metadata = job["metadata"]
        patch = {"metadata": {"resourceVersion": metadata["resourceVersion"],
                              "annotations": {ANNOTATION_RESIZE_REASON: resize.reason}},
                 "spec": {"tfReplicaSpecs": {key: {"replicas": resize.after}}}}
        try:
            self.client.patch(TFJOBS, metadata["name"], patch, metadata["namespace"])
        except ApiError as error:
            log.info("capacity resize not written; looking again next time", job=object_key(job),
                     reason=resize.reason, error=str(error))
            return False
        log.info("capacity resize", job=object_key(job), workers_before=resize.before, workers=resize.after,
                 reason=resize.reason)
        return True
