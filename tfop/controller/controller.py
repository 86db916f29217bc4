"""The TFJob controller's wiring: informers feed a rate-limited queue of job keys; workers read a job and its
children from the cache, ask the pure planner what to do, and apply the plan through the API.

Nothing here decides behaviour; `reconcile.plan` does. This module only makes applying a plan safe: expectations
keep a worker from planning on a cache that has not seen its own writes, children are created in slow-start
batches, the status is written with optimistic concurrency, and every failure requeues the key with backoff
without touching any other job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from functools import partial
from itertools import zip_longest
from typing import Any

import structlog

from tfop import metrics
from tfop.api.constants import GROUP, KIND, LABEL_OPERATOR_NAME, OPERATOR_NAME, PLURAL, VERSION
from tfop.api.timestamps import parse_time
from tfop.controller.plan_types import ChildRef, Plan, PlannerConfig
from tfop.controller.reconcile import plan as plan_job
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError, Conflict, NotFound
from tfop.kube.events import NORMAL, WARNING, EventRecorder
from tfop.kube.expectations import Expectations
from tfop.kube.informer import Informer
from tfop.kube.resource import PODS, SERVICES, Resource
from tfop.kube.slowstart import create_in_batches
from tfop.kube.store import by_controller_uid, object_key
from tfop.kube.workqueue import RateLimitingQueue

log = structlog.get_logger("tfop.controller")

TFJOBS = Resource(GROUP, VERSION, PLURAL, KIND)
CHILD_SELECTOR = f"{LABEL_OPERATOR_NAME}={OPERATOR_NAME}"
BY_OWNER = "controller-uid"
Object = dict[str, Any]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class TFJobController:
    def __init__(self, client: KubeClient, recorder: EventRecorder, *, planner_config: PlannerConfig,
                 namespaces: Sequence[str] = (), threads: int = 4, create_concurrency: int = 16,
                 stall_after: float = 900.0, clock: Callable[[], datetime] = utc_now) -> None:
        self.client = client
        self.recorder = recorder
        self.planner_config = planner_config
        self.threads = threads
        self.clock = clock
        scopes: list[str | None] = list(namespaces) or [None]
        self.jobs = {ns: Informer(client, TFJOBS, namespace=ns) for ns in scopes}
        self.pods = {ns: Informer(client, PODS, namespace=ns, label_selector=CHILD_SELECTOR,
                                  indexers={BY_OWNER: by_controller_uid}) for ns in scopes}
        self.services = {ns: Informer(client, SERVICES, namespace=ns, label_selector=CHILD_SELECTOR,
                                      indexers={BY_OWNER: by_controller_uid}) for ns in scopes}
        self.queue: RateLimitingQueue[str] = RateLimitingQueue("tfjob")
        self.expectations = Expectations()
        self._creators = ThreadPoolExecutor(max_workers=create_concurrency, thread_name_prefix="create")
        self._workers: list[threading.Thread] = []
        # A healthy informer makes progress at least once per watch (5-10 min), a reconcile takes seconds:
        # silence longer than this means a hung connection or a stuck worker, which only a restart cures.
        self.stall_after = stall_after
        self._busy: dict[str, tuple[str, float]] = {}  # worker name -> (key, monotonic start)
        metrics.max_concurrent.labels(metrics.CONTROLLER).set(threads)

    # --- lifecycle -------------------------------------------------------------------------------------------
    @property
    def informers(self) -> list[Informer]:
        return [*self.jobs.values(), *self.pods.values(), *self.services.values()]

    def start_informers(self) -> None:
        for informer in self.jobs.values():
            informer.add_event_handler(self._job_added, self._job_updated, self._job_deleted)
        for informers, kind in ((self.pods, PODS.kind), (self.services, SERVICES.kind)):
            for informer in informers.values():
                informer.add_event_handler(partial(self._child_added, kind), partial(self._child_updated, kind),
                                           partial(self._child_deleted, kind))
        for informer in self.informers:
            informer.start()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        return all(i.wait_for_sync(None if deadline is None else max(0.0, deadline - time.monotonic()))
                   for i in self.informers)

    def start_workers(self) -> None:
        for number in range(self.threads):
            thread = threading.Thread(target=self._work, name=f"reconcile-{number}", daemon=True)
            thread.start()
            self._workers.append(thread)

    def stop(self, drain_timeout: float = 20.0) -> None:
        """Stop taking keys, let in-flight reconciles finish (bounded), then stop watching."""
        drained = self.queue.shutdown_with_drain(drain_timeout)
        for worker in self._workers:
            worker.join(timeout=1.0)
        self._creators.shutdown(wait=drained, cancel_futures=not drained)
        for informer in self.informers:
            informer.stop()

    def health_problem(self) -> str | None:
        """For /healthz: a dead or stalled informer or worker is a process that must be restarted."""
        now = time.monotonic()
        problems = []
        for informer in self.informers:
            name = f"informer {informer.resource.plural} ({informer.namespace or 'all namespaces'})"
            progress = informer.last_progress
            if not informer.is_alive():
                problems.append(f"{name} is not running")
            elif progress is not None and now - progress > self.stall_after:
                problems.append(f"{name} made no progress for {now - progress:.0f}s")
        for worker in self._workers:
            if not worker.is_alive() and not self.queue.shutting_down():
                problems.append(f"{worker.name} is not running")
        for thread_name, (key, since) in list(self._busy.items()):
            if now - since > self.stall_after:
                problems.append(f"{thread_name} has been reconciling {key} for {now - since:.0f}s")
        return "; ".join(problems) or None

    def readiness_problem(self) -> str | None:
        pending = [i.resource.plural for i in self.informers if not i.has_synced()]
        return f"caches not synced: {', '.join(pending)}" if pending else None

    # --- event handlers: map everything to the key of the job it concerns -------------------------------------
    def _job_added(self, job: Object) -> None:
        self.queue.add(object_key(job))

    def _job_updated(self, old: Object, new: Object) -> None:
        if old["metadata"].get("resourceVersion") != new["metadata"].get("resourceVersion"):
            self.queue.add(object_key(new))

    def _job_deleted(self, job: Object, stale: bool) -> None:
        key = object_key(job)
        self.expectations.forget(key)
        self.queue.add(key)

    def _child_added(self, kind: str, child: Object) -> None:
        key = _owner_key(child)
        if key:
            self.expectations.created(key, _child_id(kind, child))
            self.queue.add(key)

    def _child_updated(self, kind: str, old: Object, new: Object) -> None:
        key = _owner_key(new)
        if key:
            if new["metadata"].get("deletionTimestamp"):  # a delete is observed once the object is terminating
                self.expectations.deleted(key, new["metadata"]["uid"])
            self.queue.add(key)

    def _child_deleted(self, kind: str, child: Object, stale: bool) -> None:
        key = _owner_key(child)
        if key:
            self.expectations.deleted(key, child["metadata"]["uid"])
            self.queue.add(key)

    # --- workers ---------------------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown or key is None:
                return
            started = time.monotonic()
            self._busy[threading.current_thread().name] = (key, started)
            metrics.active_workers.labels(metrics.CONTROLLER).inc()
            try:
                requeue_after = self.reconcile(key)
            except Exception as error:  # noqa: BLE001 - one job's failure must never stop the worker
                self._failed(key, error)
            else:
                self.queue.forget(key)
                if requeue_after is not None:
                    self.queue.add_after(key, requeue_after)
                metrics.reconcile_total.labels(
                    metrics.CONTROLLER, "requeue_after" if requeue_after is not None else "success").inc()
            finally:
                del self._busy[threading.current_thread().name]
                metrics.active_workers.labels(metrics.CONTROLLER).dec()
                metrics.reconcile_time.labels(metrics.CONTROLLER).observe(time.monotonic() - started)
                self.queue.done(key)

    def _failed(self, key: str, error: Exception) -> None:
        self.queue.add_rate_limited(key)
        metrics.reconcile_total.labels(metrics.CONTROLLER, "error").inc()
        if isinstance(error, Conflict):  # someone wrote the job since we read it: retry on the newer copy
            log.debug("conflict, will retry", job=key)
            return
        metrics.reconcile_errors.labels(metrics.CONTROLLER).inc()
        details = {"error": error.message} if isinstance(error, ApiError) else {"exc_info": error}
        log.warning("reconcile failed, will retry", job=key, retries=self.queue.num_requeues(key), **details)

    # --- reconcile -------------------------------------------------------------------------------------------
    def reconcile(self, key: str) -> float | None:
        """Bring one job's children and status in line with its spec; returns seconds until it needs a look
        even if nothing changes (a deadline or TTL), or None."""
        namespace = key.partition("/")[0]
        job = _scoped(self.jobs, namespace).store.get(key)
        if job is None:
            self.expectations.forget(key)
            return None
        if not self.expectations.satisfied(key, job["metadata"].get("resourceVersion")):
            log.debug("waiting for the cache to see our writes", job=key,
                      outstanding=self.expectations.outstanding(key))
            return None
        uid = job["metadata"]["uid"]
        pods = _scoped(self.pods, namespace).store.by_index(BY_OWNER, uid)
        services = _scoped(self.services, namespace).store.by_index(BY_OWNER, uid)
        plan = plan_job(job, pods, services, self.clock(), self.planner_config)
        self._apply(key, job, plan)
        return plan.requeue_after

    def _apply(self, key: str, job: Object, plan: Plan) -> None:
        failures: list[ApiError] = []
        for resource, refs in ((PODS, plan.delete_pods), (SERVICES, plan.delete_services)):
            self._delete_children(key, job, resource, refs, failures)
        self._create_children(key, job, plan, failures)
        if plan.status is not None:
            self._write_status(key, job, plan.status)
        # Transitions are announced and counted only once their status is stored (the write above raises
        # otherwise), so a conflict that makes us plan again cannot announce or count one twice.
        for event in plan.events:
            self.recorder.record(job, event.type, event.reason, event.message)
        _count(job, plan, self.clock())
        if plan.delete_job:
            self._delete_job(job)
        if failures:
            raise failures[0]

    def _create_children(self, key: str, job: Object, plan: Plan, failures: list[ApiError]) -> None:
        """Each replica's pod and service side by side in one slow-start sequence: half the round trips of
        creating all pods, then all services, and a replica is reachable as soon as its pod exists."""
        pairs = zip_longest([(PODS, body) for body in plan.create_pods],
                            [(SERVICES, body) for body in plan.create_services])
        children = [child for pair in pairs for child in pair if child is not None]
        if not children:
            return
        namespace = job["metadata"]["namespace"]
        ids = [_child_id(resource.kind, body) for resource, body in children]
        self.expectations.expect_creates(key, ids)
        result = create_in_batches(lambda child: self.client.create(child[0], child[1], namespace), children,
                                   self._creators, name_of=lambda child: _child_id(child[0].kind, child[1]))
        created = set(result.created)
        for (resource, body), child_id in zip(children, ids):
            store = _scoped(self.pods if resource is PODS else self.services, namespace).store
            # Seen already (its watch event may have come before we expected it), failed, or never tried: in
            # each case no watch event is still owed for it.
            if child_id not in created or store.get_by_name(namespace, body["metadata"]["name"]) is not None:
                self.expectations.created(key, child_id)
        for resource in (PODS, SERVICES):
            names = [i.partition("/")[2] for i in result.created if i.startswith(f"{resource.kind}/")]
            if names:
                self.recorder.record(job, NORMAL, f"SuccessfulCreate{resource.kind}",
                                     f"Created {resource.kind.lower()}s: {', '.join(names)}")
            if resource is PODS and names:
                metrics.pods_created.labels(namespace).inc(len(names))
        if result.error is not None and result.failed is not None:
            failures.append(result.error)
            kind, _, name = result.failed.partition("/")
            self.recorder.record(job, WARNING, f"FailedCreate{kind}",
                                 f"Error creating {kind.lower()} {name}: {result.error.message}")

    def _delete_children(self, key: str, job: Object, resource: Resource, refs: list[ChildRef],
                         failures: list[ApiError]) -> None:
        if not refs:
            return
        namespace = job["metadata"]["namespace"]
        self.expectations.expect_deletes(key, [ref.uid for ref in refs])
        deleted = []
        for ref in refs:
            try:
                self.client.delete(resource, ref.name, namespace, uid=ref.uid, propagation_policy="Background")
                deleted.append(ref.name)
            except NotFound:
                self.expectations.deleted(key, ref.uid)  # gone already: no event will come
            except ApiError as error:
                self.expectations.deleted(key, ref.uid)
                failures.append(error)
                self.recorder.record(job, WARNING, f"FailedDelete{resource.kind}",
                                     f"Error deleting {resource.kind.lower()} {ref.name}: {error.message}")
        if deleted and resource is PODS:
            metrics.pods_deleted.labels(namespace).inc(len(deleted))
        if deleted:
            self.recorder.record(job, NORMAL, f"SuccessfulDelete{resource.kind}",
                                 f"Deleted {resource.kind.lower()}s: {', '.join(deleted)}")

    def _write_status(self, key: str, job: Object, status: Object) -> None:
        """PUT the status with the cached resourceVersion: a stale plan fails with Conflict instead of
        overwriting a newer status."""
        metadata = job["metadata"]
        body = {"apiVersion": job.get("apiVersion", TFJOBS.api_version), "kind": KIND,
                "metadata": {"name": metadata["name"], "namespace": metadata["namespace"],
                             "uid": metadata["uid"], "resourceVersion": metadata["resourceVersion"]},
                "spec": job.get("spec"), "status": status}
        self.client.replace(TFJOBS, metadata["name"], body, metadata["namespace"], subresource="status")
        self.expectations.expect_newer(key, metadata["resourceVersion"])

    def _delete_job(self, job: Object) -> None:
        metadata = job["metadata"]
        try:
            self.client.delete(TFJOBS, metadata["name"], metadata["namespace"], uid=metadata["uid"],
                               propagation_policy="Background")
        except NotFound:
            return
        metrics.jobs_deleted.labels(metadata["namespace"]).inc()
        log.info("deleted finished job after its TTL", job=object_key(job))


def _count(job: Object, plan: Plan, now: datetime) -> None:
    """The metrics a plan's transitions move."""
    namespace = job["metadata"]["namespace"]
    counters = plan.counters
    for name, metric in metrics.JOB_COUNTERS.items():
        amount = getattr(counters, name)
        if amount and name != "deleted":  # counted by _delete_job, which knows whether it deleted
            metric.labels(namespace).inc(amount)
    for exit_class, amount in counters.restarts_by_exit_class:
        metrics.restarts.labels(namespace, exit_class).inc(amount)
    status = plan.status or {}
    if counters.successful or counters.failed:
        started, completed = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
        if started is not None and completed is not None:
            outcome = "succeeded" if counters.successful else "failed"
            metrics.job_duration.labels(outcome).observe(max(0.0, (completed - started).total_seconds()))
    if counters.started_running:
        created = parse_time(job["metadata"].get("creationTimestamp"))
        if created is not None:
            metrics.job_start_latency.observe(max(0.0, (now - created).total_seconds()))


def _child_id(kind: str, body: Object) -> str:
    """Pods and services share names; expectations tell them apart by kind."""
    return f"{kind}/{body['metadata']['name']}"


def _owner_key(child: Object) -> str | None:
    """The key of the TFJob that controls `child`, if any."""
    for ref in child["metadata"].get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == KIND and ref.get("apiVersion", "").startswith(GROUP + "/"):
            return f"{child['metadata']['namespace']}/{ref['name']}"
    return None


def _scoped(informers: dict[str | None, Informer], namespace: str) -> Informer:
    informer = informers.get(namespace) or informers.get(None)
    if informer is None:
        raise LookupError(f"namespace {namespace} is not watched")
    return informer
