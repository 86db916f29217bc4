"""Applying a plan through the API, one writer per thing written: the children (apply/child_writes.py), then
the status, written with optimistic concurrency and held back briefly when it only moves counts, then the
events, the log lines (apply/job_story.py) and the counters (apply/job_metrics.py) that follow only once the
status announcing them is stored, then the pods whose ends that status records released from tfop's finalizer,
then the TTL delete of the job itself."""

from __future__ import annotations

from datetime import datetime

import structlog

from tfop.api.constants import (
    KIND,
)
from tfop.api.fields import mapping_at
from tfop.controller.apply.child_writes import CacheOf, ChildChanges, ChildWriter
from tfop.controller.apply.job_metrics import count_transitions
from tfop.controller.apply.job_story import log_lifecycle
from tfop.controller.children import CHILD_KINDS, TFJOBS, ChildKinds
from tfop.controller.plan.types import (
    Plan,
    StatusWait,
)
from tfop.controller.ps_server_configmap import ConfigMapData
from tfop.kube.client import KubeClient
from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.errors import NotFound
from tfop.kube.events import EventRecorder
from tfop.kube.expectations import Expectations
from tfop.kube.holdback import HoldBack
from tfop.kube.store import object_key
from tfop.metrics import FRAMEWORK, OperatorMetrics
from tfop.objects import Object

log = structlog.get_logger("tfop.controller")

# How long a status that only moves counts and messages may wait for the next (a state change never waits).
STATUS_HOLD_SECONDS = 5.0


class PlanApplier:
    def __init__(self, client: KubeClient, recorder: EventRecorder, expectations: Expectations,
                 metrics: OperatorMetrics, cache_of: CacheOf, *, create_concurrency: int = 16,
                 kinds: ChildKinds = CHILD_KINDS, status_hold: float = STATUS_HOLD_SECONDS,
                 clock: Clock = SYSTEM_CLOCK, progress_files: ConfigMapData | None = None) -> None:
        self.client = client
        self.recorder = recorder
        self.expectations = expectations
        self.metrics = metrics
        self.children = ChildWriter(client, recorder, expectations, metrics, cache_of,
                                    create_concurrency=create_concurrency, kinds=kinds, progress_files=progress_files)
        self.held_statuses: HoldBack[str] = HoldBack(status_hold, clock)

    def shutdown(self, *, wait: bool) -> None:
        self.children.shutdown(wait=wait)

    def change_children(self, key: str, job: Object, plan: Plan) -> ChildChanges:
        """Patches, deletes and creates what the plan says, in that order."""
        return self.children.write(key, job, plan)

    def record(self, key: str, job: Object, plan: Plan, now: datetime) -> float | None:
        """The plan's status, then its events and counters, then the pods it releases and the TTL delete; or, if
        its status may wait, none of it. Returns the seconds a held status may still wait (the key needs a look
        then), or None."""
        if plan.status is not None and plan.status_waits is StatusWait.FOR_CREATES:
            # Planned before its children existed, it is stale once they do. The next plan says all this: the
            # creates' watch events queue the job again (even those seen during this pass: the key was being
            # processed, so it is queued once this pass is done), and a create refused or failed requeues it.
            return None
        if plan.status is not None and plan.status_waits is StatusWait.BRIEFLY:
            remaining = self.held_statuses.remaining(key)
            if remaining > 0:
                return remaining
        self.held_statuses.close(key)
        if plan.status is not None:
            self._write_status(key, job, plan.status.to_json())
        # Transitions are announced and counted only once their status is stored (the write above raises
        # otherwise), so a conflict that makes us plan again cannot announce or count one twice; and at once,
        # before the releases' requests, so the counters trail the status they follow by no round trip.
        for event in plan.events:
            if not event.quiet:
                self.recorder.record(job, event.type, event.reason, event.message)
        log_lifecycle(key, plan)
        count_transitions(self.metrics, job, plan, now)
        # Only now is how the released pods' replicas ended stored; a force-deleted pod went before its delete, a
        # retired one with it.
        forced = {ref.uid for ref in plan.delete if ref.grace_period_seconds == 0}
        errors = self.children.release(key, job, [ref for ref in plan.release if ref.uid not in forced
                                                  and ref.uid not in plan.release_with_delete])
        if plan.delete_job:
            self._delete_job(job)
        if errors:
            raise errors[0]  # the key is retried with backoff; the next plan releases them again
        return None


    def _write_status(self, key: str, job: Object, status: Object) -> None:
        """PUT the status with the cached resourceVersion: a stale plan fails with Conflict instead of
        overwriting a newer status."""
        metadata = job["metadata"]
        body = {"apiVersion": job.get("apiVersion", TFJOBS.api_version), "kind": KIND,
                "metadata": {"name": metadata["name"], "namespace": metadata["namespace"],
                             "uid": metadata["uid"], "resourceVersion": metadata["resourceVersion"]},
                "spec": job.get("spec"), "status": status}
        written = self.client.replace(TFJOBS, metadata["name"], body, metadata["namespace"], subresource="status")
        # A write that changed nothing keeps its resourceVersion and makes no watch event: waiting for the cache
        # to move past it would stall the job until the expectation expires.
        if mapping_at(written, "metadata").get("resourceVersion") != metadata["resourceVersion"]:
            self.expectations.expect_newer(key, metadata["resourceVersion"])

    def _delete_job(self, job: Object) -> None:
        metadata = job["metadata"]
        try:
            self.client.delete(TFJOBS, metadata["name"], metadata["namespace"], uid=metadata["uid"],
                               propagation_policy="Background")
        except NotFound:
            return
        self.metrics.jobs_deleted.labels(metadata["namespace"], FRAMEWORK).inc()
        log.info("job deleted after its TTL", job=object_key(job))
