"""The TFJob controller: the generic runtime (tfop/kube/runtime.py) watching TFJobs and the child kinds of
controller/children.py, a reconcile that reads a job and its children from the cache, asks the pure planner what
to do, and hands the plan to the applier: one plan and one apply per pass. Nothing here decides behaviour;
`plan/planner.py` does."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime

import structlog

from tfop.api import kueue as kueue_api
from tfop.api.constants import FINAL_CONDITIONS, POD_SUCCEEDED
from tfop.api.kueue import INTEGRATION_OWN, managed_elsewhere, pod_priority_class, priority_class, queue_name
from tfop.api.tensorboard import claim_names
from tfop.controller.apply.applier import PlanApplier
from tfop.controller.cache_transforms import (
    BY_NODE,
    GLOBAL_DEFAULT,
    global_default,
    node_health_transform,
    pod_node,
    slim_claim,
    slim_flavor,
    slim_job,
    slim_pod_priority_class,
    slim_priority_class,
)
from tfop.controller.children import (
    POD_PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    TFJOBS,
    WORKLOAD_PRIORITY_CLASSES,
    ChildKind,
    child_id,
    child_kinds,
    made_by_tfop,
)
from tfop.controller.kueue_positions import QueuePositions
from tfop.controller.owners import HELD_BY_JOB_NAME, controller_uid, held_by_job_name, owner_key
from tfop.controller.plan.children.batch_job import made_by_job
from tfop.controller.plan.children.desired import replica_slot_of
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.observed.workload import QueuePosition, observe_workload
from tfop.controller.plan.planner import plan as plan_job
from tfop.controller.plan.status import condition_is_true, conditions_of, is_terminating
from tfop.controller.plan.types import POD, WORKLOAD, ChildRef, CreateRefusal, PlanContext
from tfop.controller.progress_reports import ProgressReports
from tfop.controller.ps_server_configmap import ConfigMapData
from tfop.kube.client import KubeClient
from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.events import EventRecorder
from tfop.kube.expectations import Expectations
from tfop.kube.lanes import Lane
from tfop.kube.resource import NODES, PERSISTENT_VOLUME_CLAIMS, PODS
from tfop.kube.runtime import Change, ControllerRuntime, FailedPassError, Result, Watch
from tfop.kube.store import Store, by_controller_uid, object_key
from tfop.metrics import OperatorMetrics
from tfop.objects import Object

log = structlog.get_logger("tfop.controller")


CONTROLLER_NAME = "tfjob"
# A job's children change in bursts (its 14 pods and services created, then scheduled, then started): their
# changes reach a job's pass at most once per this many seconds, so a burst makes one or two passes, not one
# per change; a lone change (an exit, a lost pod) is passed on at once. Short beside the lag a user sees.
CHILD_EVENTS_BATCH = 0.5


class TFJobController:
    def __init__(self, client: KubeClient, recorder: EventRecorder, *, config: ControllerConfig,
                 metrics: OperatorMetrics | None = None, namespaces: Sequence[str] = (), threads: int = 4,
                 create_concurrency: int = 16, stall_after: float = 900.0, clock: Clock = SYSTEM_CLOCK,
                 gang_problem: str | None = None, progress_files: ConfigMapData | None = None) -> None:
        """`gang_problem` (from `preflight.gang_scheduler_problem`): why the configured gang scheduler cannot be
        used. Its PodGroups are then not watched, and every job waits with that reason in its status.
        `progress_files`: the progress endpoint's CA and callback for the namespaces' ConfigMap, with the endpoint
        on."""
        self.config = config
        # The latest progress each job's pods reported (tfop/progress/ puts them), read as an observation.
        self.progress = ProgressReports()
        self.leading = threading.Event()  # set while this process's workers run
        self.gang_problem = gang_problem
        self.own_kueue = config.kueue_integration == INTEGRATION_OWN
        self.kinds = child_kinds(config.gang if gang_problem is None else None, own_kueue=self.own_kueue)
        self.clock = clock
        self.metrics = metrics or OperatorMetrics.create()
        self.expectations = Expectations()
        # Per job, what the apiserver refused of its last plan's creates, for the next plan to see; one worker per
        # key means one pass at a time reads and writes a job's entry.
        self.refusals: dict[str, tuple[CreateRefusal, ...]] = {}
        watches = [Watch(TFJOBS, object_key, transform=slim_job, observe=self._job_changed),
                   *(self._child_watch(kind) for kind in self.kinds)]
        if config.node_loss.watch_nodes:
            # Nodes are watched, not owned: a node's change concerns the jobs with pods on it.
            watches.append(Watch(NODES, lambda node: None, keys_of=self._jobs_on_node,
                                 transform=node_health_transform(config.node_loss.unhealthy_conditions)))
        # The access modes of the claim a job's TensorBoard reads its logs from (plan/job/tensorboard.py): watched,
        # not owned; a claim's change (made, bound) concerns the jobs of its namespace that ask for a TensorBoard
        # and name it.
        watches.append(Watch(PERSISTENT_VOLUME_CLAIMS, lambda claim: None, keys_of=self._jobs_naming_claim,
                             transform=slim_claim))
        if self.own_kueue:
            # Read when an admission names them, or a job names its priority; a job whose flavor or class is not
            # cached yet looks again shortly.
            watches.append(Watch(RESOURCE_FLAVORS, lambda flavor: None, transform=slim_flavor))
            watches.append(Watch(WORKLOAD_PRIORITY_CLASSES, lambda priority_class: None,
                                 transform=slim_priority_class))
            watches.append(Watch(POD_PRIORITY_CLASSES, lambda priority_class: None,
                                 indexers={GLOBAL_DEFAULT: global_default}, transform=slim_pod_priority_class))
        self.runtime = ControllerRuntime(client, CONTROLLER_NAME, self.reconcile, watches, namespaces=namespaces,
                                         threads=threads, stall_after=stall_after, metrics=self.metrics.kube,
                                         key_name="job")
        self.applier = PlanApplier(client, recorder, self.expectations, self.metrics, self._cache_of,
                                   create_concurrency=create_concurrency, kinds=self.kinds, clock=clock,
                                   progress_files=progress_files)
        # Where the pending Workloads stand in their queues: read while leading, told in the jobs' messages.
        self.positions = (QueuePositions(client, self._cached_workloads, owner_key, self.runtime.queue.add,
                                         every=config.kueue_positions_every)
                          if self.own_kueue and config.kueue_positions_every > 0 else None)

    def _child_watch(self, kind: ChildKind) -> Watch:
        indexers = {kind.owner_index: by_controller_uid,
                    **({BY_NODE: pod_node, HELD_BY_JOB_NAME: held_by_job_name} if kind.kind == POD else {})}
        return Watch(kind.resource, owner_key, label_selector=kind.label_selector, indexers=indexers,
                     transform=kind.transform, batch=CHILD_EVENTS_BATCH,
                     observe=lambda change, key, child: self._child_changed(kind.kind, change, key, child))

    def _jobs_on_node(self, node: Object) -> set[str]:
        name = node["metadata"]["name"]
        return {key for store in self.runtime.stores(PODS) for pod in store.by_index(BY_NODE, name)
                if (key := owner_key(pod)) is not None}

    def _claims_of(self, job: Object, namespace: str) -> dict[str, Object]:
        """The cached claims the templates of a job that asks for a TensorBoard name, by name."""
        names = claim_names(job)
        if not names:
            return {}
        store = self.runtime.store(PERSISTENT_VOLUME_CLAIMS, namespace)
        return {name: claim for name in names if (claim := store.get(f"{namespace}/{name}")) is not None}

    def _jobs_naming_claim(self, claim: Object) -> list[str]:
        namespace, name = claim["metadata"].get("namespace", ""), claim["metadata"]["name"]
        try:
            jobs = self.runtime.store(TFJOBS, namespace).list()
        except LookupError:
            return []
        return [object_key(job) for job in jobs if name in claim_names(job)]

    def _flavors_of(self, workloads: list[Object]) -> dict[str, Object]:
        """The cached ResourceFlavors the admissions of the job's Workloads name, by name."""
        if not self.own_kueue:
            return {}
        store = self.runtime.store(RESOURCE_FLAVORS, "")
        names = {flavor for workload in workloads
                 for assignment in observe_workload(workload).assignments.values() for flavor in assignment.flavors}
        return {name: flavor for name in names if (flavor := store.get(name)) is not None}

    def _priority_classes_of(self, job: Object) -> dict[str, int]:
        """The value of the cached WorkloadPriorityClass the job names, by name."""
        name = priority_class(job)
        if not self.own_kueue or name is None:
            return {}
        value = _class_value(self.runtime.store(WORKLOAD_PRIORITY_CLASSES, "").get(name))
        return {name: value} if value is not None else {}

    def _pod_priority_classes_of(self, job: Object) -> tuple[dict[str, int], str | None]:
        """For a queued job that names no WorkloadPriorityClass: the values of the cached PriorityClasses its
        Workload's priority may come from (its pods' class; with none named, the global default), by name, and
        the name of the global default (the lowest valued, then first by name, of those so marked)."""
        if not self.own_kueue or queue_name(job) is None or priority_class(job) is not None:
            return {}, None
        store = self.runtime.store(POD_PRIORITY_CLASSES, "")
        named = pod_priority_class(job)
        if named is not None:
            value = _class_value(store.get(named))
            return ({named: value} if value is not None else {}), None
        defaults = sorted((value, found["metadata"]["name"]) for found in store.by_index(GLOBAL_DEFAULT, "true")
                          if (value := _class_value(found)) is not None)
        if not defaults:
            return {}, None
        value, name = defaults[0]
        return {name: value}, name

    def _unowned_prebuilt(self, job: Object, namespace: str, owned: list[Object]) -> Object | None:
        """The cached Workload MultiKueue made for this copy of a job, until the job controls it (the plan adopts
        it)."""
        name = kueue_api.prebuilt_workload(job) if self.own_kueue else None
        owns = name is None or any(workload["metadata"]["name"] == name for workload in owned)
        return None if owns else self._cache_of(WORKLOAD, namespace).get(f"{namespace}/{name}")

    def _cached_workloads(self) -> list[Object]:
        return [workload for store in self.runtime.stores(self.kinds[WORKLOAD].resource) for workload in store.list()]

    def _queue_position(self, namespace: str, workloads: list[Object]) -> QueuePosition | None:
        if self.positions is None:
            return None
        return next((found for workload in workloads
                     if (found := self.positions.of(namespace, workload["metadata"]["name"])) is not None), None)

    def _nodes_of(self, pods: list[Object]) -> dict[str, Object] | None:
        """The cached nodes the pods are on, by name (a node not in the cache is left out: deleted)."""
        if not self.config.node_loss.watch_nodes:
            return None
        store = self.runtime.store(NODES, "")
        names = {name for pod in pods if (name := (pod.get("spec") or {}).get("nodeName"))}
        return {name: node for name in names if (node := store.get(name)) is not None}

    # --- lifecycle: the runtime's --------------------------------------------------------------------------
    def start_informers(self) -> None:
        self.runtime.start_informers()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.runtime.wait_for_sync(timeout)

    def start_workers(self) -> None:
        self.runtime.start_workers()
        if self.positions is not None:
            self.positions.start()
        self.leading.set()

    def stop(self, drain_timeout: float = 20.0) -> None:
        """Stop taking jobs, let in-flight reconciles finish (bounded), then stop watching."""
        self.leading.clear()
        if self.positions is not None:
            self.positions.stop()
        drained = self.runtime.stop_workers(drain_timeout)
        self.applier.shutdown(wait=drained)
        self.runtime.stop_informers()

    def health_problem(self) -> str | None:
        return self.runtime.health_problem()

    def readiness_problem(self) -> str | None:
        return self.runtime.readiness_problem()

    def gang_readiness_problem(self) -> str | None:
        return self.gang_problem

    # --- what the cache has seen -----------------------------------------------------------------------------
    def _job_changed(self, change: Change, key: str, job: Object) -> None:
        if change is Change.ADDED:
            self.metrics.know_namespace(key.partition("/")[0])
            manager = managed_elsewhere(job)  # immutable (CRD rule), so said once per job and operator start
            if manager is not None:
                dispatched = self.own_kueue and kueue_api.dispatched_by_multikueue(job)  # its Workload kept here
                log.debug("job dispatched by MultiKueue" if dispatched else "job managed by another controller: "
                          "leaving it alone", job=key, managed_by=manager)
        if change is Change.DELETED:
            self.expectations.forget(key)
            self.refusals.pop(key, None)
            self.applier.held_statuses.close(key)
            self.progress.forget(key)
            log.info("job deleted", job=key)

    def _child_changed(self, kind: str, change: Change, key: str, child: Object) -> None:
        if change is Change.ADDED:
            self.expectations.created(key, child_id(kind, child["metadata"]["name"]))
        elif change is Change.DELETED or child["metadata"].get("deletionTimestamp"):
            # A delete is observed once the object is terminating, or gone.
            self.expectations.deleted(key, child["metadata"]["uid"])
        if change is Change.DELETED and kind == POD and (child.get("status") or {}).get("phase") == POD_SUCCEEDED:
            self._finished_pod_gone(key, child)

    def _finished_pod_gone(self, key: str, pod: Object) -> None:
        """Told when the job still runs (not its own clean-up, nor its deletion): the pod GC or a user removing a
        finished pod used to make its replica run again."""
        slot = replica_slot_of(Child.of(pod))
        job = self.runtime.store(TFJOBS, key.partition("/")[0]).get(key)
        if slot is None or made_by_job(pod) or job is None or is_terminating(job) or any(
                condition_is_true(conditions_of(job.get("status")), final) for final in FINAL_CONDITIONS):
            return
        self.metrics.finished_pods_gone.labels(key.partition("/")[0]).inc()
        log.info("a finished replica's pod is gone; its end is kept in the status, it is not made again", job=key,
                 replica=f"{slot.replica_type} {slot.index}", pod=pod["metadata"]["name"])

    def _cache_of(self, kind: str, namespace: str) -> Store:
        return self.runtime.store(self.kinds[kind].resource, namespace)

    # --- what the progress endpoint asks ---------------------------------------------------------------------
    def cached_pod(self, namespace: str, name: str) -> Object | None:
        """None too for a namespace this operator does not watch (--namespace)."""
        try:
            return self._cache_of(POD, namespace).get(f"{namespace}/{name}")
        except LookupError:
            return None

    def cached_job(self, key: str) -> Object | None:
        try:
            return self.runtime.store(TFJOBS, key.partition("/")[0]).get(key)
        except LookupError:
            return None

    def progress_reported(self, key: str) -> None:
        """A report came for the job: a pass writes it (at once, or with the status held back briefly)."""
        self.runtime.queue.add(key)

    # --- reconcile -------------------------------------------------------------------------------------------
    def reconcile(self, key: str) -> Result:
        """Bring one job's children and status in line with its spec. Returns the seconds until it needs a look
        even if nothing changes (a deadline or TTL), and the lane of its next pass: the priority lane when that pass
        will only observe (see `_next_lane`)."""
        namespace = key.partition("/")[0]
        job = self.runtime.store(TFJOBS, namespace).get(key)
        if job is None:
            self.expectations.forget(key)
            self.refusals.pop(key, None)
            self.applier.held_statuses.close(key)
            self._release_strays(key, namespace, owner_uid=None)
            return Result()  # the normal lane, which the runtime does not remember
        if not self.expectations.satisfied(key, job["metadata"].get("resourceVersion")):
            log.debug("waiting for the cache to see our writes", job=key,
                      outstanding=self.expectations.outstanding(key))
            return Result(lane=self._next_lane(key, deleted=False))
        uid = job["metadata"]["uid"]
        self._release_strays(key, namespace, owner_uid=uid)
        children = {kind.kind: self._cache_of(kind.kind, namespace).by_index(kind.owner_index, uid)
                    for kind in self.kinds}
        foreign: dict[str, tuple[str, ...]] = {}
        for kind in self.kinds:
            if kind.label_selector is None:  # others' objects of the kind cached too: never the job's children
                others = sorted(child["metadata"]["name"] for child in children[kind.kind] if not made_by_tfop(child))
                if others:
                    foreign[kind.kind] = tuple(others)
                    children[kind.kind] = [child for child in children[kind.kind] if made_by_tfop(child)]
        for kind in self.kinds:
            if kind.grandchildren is not None:
                grand = self.kinds[kind.grandchildren]
                cache = self._cache_of(grand.kind, namespace)
                for child in children[kind.kind]:
                    children[grand.kind].extend(cache.by_index(grand.owner_index, child["metadata"]["uid"]))
        now = datetime.fromtimestamp(self.clock.wall(), UTC)
        pod_classes, default_class = self._pod_priority_classes_of(job)
        prebuilt = self._unowned_prebuilt(job, namespace, children.get(WORKLOAD, []))
        # What the apiserver refused of the previous pass's plan is observed state, like what the cache holds.
        context = PlanContext(job, children, now, self.config, refusals=self.refusals.pop(key, ()),
                              gang_problem=self.gang_problem, nodes=self._nodes_of(children.get(POD, [])),
                              flavors=self._flavors_of([*children.get(WORKLOAD, []), *filter(None, [prebuilt])]),
                              priority_classes=self._priority_classes_of(job), pod_priority_classes=pod_classes,
                              default_priority_class=default_class, progress=self.progress.latest(key),
                              foreign=foreign, claims=self._claims_of(job, namespace),
                              prebuilt_workload=prebuilt,
                              queue_position=self._queue_position(namespace, children.get(WORKLOAD, [])))
        plan = plan_job(context)
        changes = self.applier.change_children(key, job, plan)
        held = self.applier.record(key, job, plan, now)
        if changes.refusals:
            self.refusals[key] = tuple(changes.refusals)
        if changes.errors:
            if plan.requeue_after is not None:  # a timer of the plan's (a grace ending) outlasts the backoff
                raise FailedPassError(changes.errors[0], plan.requeue_after)
            raise changes.errors[0]  # the key is retried with backoff; everything else was done
        if changes.refusals:
            return Result(0.0)  # a permanent refusal: plan again at once, knowing it, so the status tells it
        timers = [after for after in (plan.requeue_after, held) if after is not None]
        return Result(min(timers) if timers else None, self._next_lane(key, deleted=bool(plan.delete)))

    def _release_strays(self, key: str, namespace: str, *, owner_uid: str | None) -> None:
        """Pods named for the job that still hold tfop's finalizer but that no job of this name controls (the job
        is gone: deleted in the background, or orphaning its pods; or a new job took the name) are released, or
        the garbage collector, or whoever deletes them, would wait for ever. A failure is retried with the key."""
        strays = [pod for pod in self._cache_of(POD, namespace).by_index(HELD_BY_JOB_NAME, key)
                  if owner_uid is None or controller_uid(pod) != owner_uid]
        if strays:
            log.info("releasing pods no job controls", job=key, pods=len(strays))
            errors = self.applier.children.release(key, None, [ChildRef.of(POD, pod) for pod in strays], namespace)
            if errors:
                raise errors[0]

    def _next_lane(self, key: str, *, deleted: bool) -> Lane:
        """Where the job's next pass waits. This pass made every child it planned (a refusal or an error returns
        earlier), so the next one has nothing left to create unless a child goes away meanwhile: until the cache
        shows our creates it returns at once, then it writes what it observes. It goes ahead of other jobs' create
        passes, so a job's Running condition does not wait for their burst. A pass after deletes may create their
        replacements (a restarted replica): it waits in the normal lane, as does a job's first pass. A job whose
        state changes meanwhile (a pod fails) may have its next pass create in the priority lane; one worker per
        key bounds what that costs the others."""
        return Lane.NORMAL if deleted or self.expectations.outstanding(key)[1] else Lane.PRIORITY


def _class_value(priority_class: Object | None) -> int | None:
    """A cached (Workload)PriorityClass's value; None for none, or a value that is not an integer."""
    value = None if priority_class is None else priority_class.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
