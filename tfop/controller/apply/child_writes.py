"""Writing a plan's children: merge patches, deletes with uid preconditions sent together, and creates in
slow-start batches with their bodies built as they are sent; expectations keep the next pass from planning on a
cache that has not seen these writes. One event per plan for what it created, one for what it deleted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from tfop.api.constants import FINALIZER_REPLICA_TRACKING
from tfop.controller.children import ChildKinds, Scope, child_id
from tfop.controller.plan.children.desired import total_replicas
from tfop.controller.plan.children.progress_reporting import PROGRESS_CONFIGMAP
from tfop.controller.plan.slots import replica_ranges
from tfop.controller.plan.types import (
    JOB,
    POD,
    ChildPatch,
    ChildRef,
    CreateRefusal,
    Creation,
    Plan,
    PodAnnotation,
)
from tfop.controller.ps_server_configmap import ConfigMapData, ConfigMapKeeper, server_script_keeper
from tfop.kube.client import KubeClient, removed_by_delete
from tfop.kube.errors import ApiError, BadRequest, Conflict, Invalid, NotFound, TooLarge
from tfop.kube.events import NORMAL, WARNING, EventRecorder
from tfop.kube.expectations import Expectations
from tfop.kube.fair_pool import FairPool
from tfop.kube.slowstart import create_in_batches
from tfop.kube.store import Store, object_key
from tfop.metrics import OperatorMetrics
from tfop.objects import Object

log = structlog.get_logger("tfop.controller")

REASON_SUCCESSFUL_CREATE = "SuccessfulCreate"  # as Kubernetes' own controllers call them
REASON_SUCCESSFUL_DELETE = "SuccessfulDelete"

# A strategic merge patch removes one value of a list of primitives and keeps the others' finalizers.
RELEASE_DIRECTIVE = "$deleteFromPrimitiveList/finalizers"

CacheOf = Callable[[str, str], Store]  # (kind, namespace) -> the cache of that kind's children


@dataclass
class ChildChanges:
    """What sending a plan's deletes and creates came to."""

    refusals: list[CreateRefusal] = field(default_factory=list)
    errors: list[ApiError] = field(default_factory=list)  # worth retrying: failed deletes, transient refusals
    removed: set[str] = field(default_factory=set)  # uids of the children the apiserver says are gone


def is_permanent_refusal(error: ApiError) -> bool:
    """Whether sending the same body again must get the same answer: the object itself is invalid (422), cannot be
    decoded (400), or is larger than etcd stores (a pod whose TF_CONFIG and template together pass its 1.5 MiB).
    Anything else (quota, admission that denies, throttling, a failing server) may pass later."""
    return isinstance(error, (Invalid, BadRequest, TooLarge))



# Every pod of a job lists every replica in its TF_CONFIG (some 65 bytes each): a pod of a 2,000-replica job is
# about 130 KB against a few for a small job's, and costs the apiserver, etcd and every watcher as much more. A
# job's creates weigh one more for each this many replicas: beside other jobs, a job of 2,000 holds one of the
# request pool's threads instead of half of them (tfop/kube/fair_pool.py).
REPLICAS_PER_CREATE_WEIGHT = 250


def create_weight(job: Object) -> int:
    """How many small jobs' creates one create of this job's children costs, for the request pool's shares."""
    return 1 + total_replicas(job) // REPLICAS_PER_CREATE_WEIGHT


class ChildWriter:
    def __init__(self, client: KubeClient, recorder: EventRecorder, expectations: Expectations,
                 metrics: OperatorMetrics, cache_of: CacheOf, *, create_concurrency: int, kinds: ChildKinds,
                 progress_files: ConfigMapData | None = None) -> None:
        """`progress_files`: what the ConfigMap PROGRESS_CONFIGMAP holds (the progress endpoint's CA, the Keras
        callback), for the namespaces whose pods report progress; None with the endpoint off."""
        self.client = client
        self.kinds = kinds
        self._server_script = server_script_keeper(client)
        self._progress_files = (None if progress_files is None else ConfigMapKeeper(
            client, PROGRESS_CONFIGMAP, progress_files, "the progress endpoint's CA certificate and callback"))
        self.recorder = recorder
        self.expectations = expectations
        self.metrics = metrics
        self._cache_of = cache_of
        # Shared by every worker, each job's creates and deletes a flow of their own served in turn: a job of
        # thousands of replicas sending its slow-start batch of 2,048 does not hold up a small job's 7
        # (tfop/kube/fair_pool.py).
        self._requests: FairPool[str] = FairPool(create_concurrency, name="write")

    def shutdown(self, *, wait: bool) -> None:
        self._requests.shutdown(wait=wait, cancel_futures=not wait)

    def write(self, key: str, job: Object, plan: Plan) -> ChildChanges:
        """Patches, deletes and creates what the plan says. Patches first: a PodGroup resized with its job must
        never ask for more pods than exist, or the co-scheduler refuses a parked pod in between and its backoff
        (up to 10 s) delays it once the group is right; patched before the deletes and creates of the resize, the
        group always fits the pods there are."""
        changes = ChildChanges()
        self._patch_children(job, plan.patch, changes)
        changes.errors.extend(self._annotate(key, job, plan.annotate))
        # A pod force-deleted (its node lost) is released first, so that the delete removes it and its replacement
        # goes in this pass; the others wait for the status (PlanApplier.record).
        forced = {ref.uid for ref in plan.delete if ref.grace_period_seconds == 0}
        changes.errors.extend(self.release(key, job, [ref for ref in plan.release if ref.uid in forced]))
        self._delete_children(key, job, plan.delete, changes, release=plan.release_with_delete)
        self._create_children(key, job, plan, changes)
        return changes


    def release(self, key: str, job: Object | None, refs: list[ChildRef], namespace: str = "") -> list[ApiError]:
        """Removes tfop's tracking finalizer from the pods `refs` names, sent together; only from the pod with the
        ref's uid (a pod made since under the name is refused the patch: its uid cannot change). Returns the
        errors worth retrying. `job` None: pods whose job is gone (a `namespace` then says where)."""
        if not refs:
            return []
        namespace = job["metadata"]["namespace"] if job is not None else namespace

        def release_one(ref: ChildRef) -> ApiError | None:
            return self._release_one(ref, namespace)

        answers = list(self._requests.flow(key).map(release_one, refs)) if len(refs) > 1 else [release_one(refs[0])]
        log.debug("released pods", job=key, names=[ref.name for ref in refs])
        return [answer for answer in answers if answer is not None]

    def _release_one(self, ref: ChildRef, namespace: str) -> ApiError | None:
        patch = {"metadata": {"uid": ref.uid, RELEASE_DIRECTIVE: [FINALIZER_REPLICA_TRACKING]}}
        try:
            self.client.patch(self.kinds[POD].resource, ref.name, patch, namespace, patch_type="strategic")
        except (NotFound, Invalid, Conflict):
            return None  # gone, or another pod has the name now
        except ApiError as error:
            return error
        return None

    def _annotate(self, key: str, job: Object, annotations: list[PodAnnotation]) -> list[ApiError]:
        """Sets each pod's annotation, sent together, without an event; only on the pod with the uid planned.
        Returns the errors worth retrying."""
        if not annotations:
            return []
        namespace = job["metadata"]["namespace"]
        pods = self.kinds[POD].resource

        def annotate_one(annotation: PodAnnotation) -> ApiError | None:
            patch = {"metadata": {"uid": annotation.uid, "annotations": {annotation.key: annotation.value}}}
            try:
                self.client.patch(pods, annotation.name, patch, namespace)
            except (NotFound, Invalid, Conflict):
                return None  # gone, or another pod has the name now
            except ApiError as error:
                return error
            return None

        answers = list(self._requests.flow(key).map(annotate_one, annotations))
        log.debug("annotated pods", job=key, names=[annotation.name for annotation in annotations])
        return [answer for answer in answers if answer is not None]

    def _create_children(self, key: str, job: Object, plan: Plan, changes: ChildChanges) -> None:
        # A replacement is sent only if its pod's forced delete removed it; if not, a later pass sees the pod go.
        creations = [creation for creation in plan.create
                     if creation.replaces is None or creation.replaces in changes.removed]
        desired = plan.desired
        if not creations or desired is None:
            return
        namespace = job["metadata"]["namespace"]
        if any(creation.kind in (POD, JOB) for creation in creations):
            if desired.needs_server_script:
                self._ensure_configmap(self._server_script, job, namespace, changes)
            if self._progress_files is not None:
                self._ensure_configmap(self._progress_files, job, namespace, changes)
        self.expectations.expect_creates(key, [child_id(creation.kind, creation.name) for creation in creations])

        def create(creation: Creation) -> Object:
            kind = self.kinds[creation.kind]
            # Built here, on the creating thread: only the bodies in flight exist at once.
            return self.client.create(kind.resource, desired.body(creation.kind, creation.slot), namespace)

        created: list[Creation] = []
        replica_creations = [creation for creation in creations if self.kinds[creation.kind].scope is Scope.REPLICA]
        # The job's own children first, one by one: a PodGroup must exist before the pods that name it are
        # scheduled, so if one cannot be made, no replica's children are tried.
        for creation in creations:
            if self.kinds[creation.kind].scope is not Scope.JOB:
                continue
            try:
                create(creation)
                created.append(creation)
            except ApiError as error:
                self._refused(job, creation, error, changes)
                replica_creations = []
                break
        # Then one slow-start sequence, in which a replica type whose template is refused, or whose quota is spent,
        # stops alone: the other types neither wait for it nor lose their place in the growing batches.
        result = create_in_batches(create, replica_creations, self._requests.flow(key, create_weight(job)),
                                   name_of=lambda c: child_id(c.kind, c.name), group_of=_replica_type)
        done = set(result.created)
        created.extend(creation for creation in replica_creations if child_id(creation.kind, creation.name) in done)
        for failed_id, refusal in result.failures:
            failed = next(c for c in replica_creations if child_id(c.kind, c.name) == failed_id)
            self._refused(job, failed, refusal, changes)
        created_ids = {child_id(creation.kind, creation.name) for creation in created}
        for creation in creations:
            creation_id = child_id(creation.kind, creation.name)
            # Seen already (its watch event may have come before we expected it), failed, or never tried: in
            # each case no watch event is still owed for it. The pod a replacement replaces is not it.
            cached = self._cache_of(creation.kind, namespace).get_by_name(namespace, creation.name)
            seen = cached is not None and cached["metadata"].get("uid") != creation.replaces
            if creation_id not in created_ids or seen:
                self.expectations.created(key, creation_id)
        self._announce_created(key, job, created)

    def _announce_created(self, key: str, job: Object, created: list[Creation]) -> None:
        """One event for all a plan created, with the counts and the replicas, e.g. `Created 7 pods and 7
        services for Chief 0, PS 0-1, Worker 0-3`: a line per child would cost a write per child."""
        if not created:
            return
        namespace = job["metadata"]["namespace"]
        by_kind: dict[str, list[str]] = {}
        for kind in self.kinds.by_name:
            names = [creation.name for creation in created if creation.kind == kind]
            if names:
                by_kind[kind] = names
                log.debug(f"created {kind.lower()}s", job=key, names=names)
                counter = self.metrics.children_created.get(kind)
                if counter is not None:
                    counter.labels(namespace).inc(len(names))
        slots = {creation.slot for creation in created if creation.slot is not None}
        self.recorder.record(job, NORMAL, REASON_SUCCESSFUL_CREATE,
                             f"Created {_counted(by_kind)}" + (f" for {replica_ranges(slots)}" if slots else ""))

    def _patch_children(self, job: Object, patches: list[ChildPatch], changes: ChildChanges) -> None:
        """Merge patches of children whose spec follows the job's; a failure is retried with the job's key."""
        namespace = job["metadata"]["namespace"]
        for patch in patches:
            kind = self.kinds[patch.kind]
            try:
                self.client.patch(kind.resource, patch.name, patch.patch, namespace, subresource=patch.subresource)
            except NotFound:
                continue  # gone since the cache saw it: the next plan creates it
            except ApiError as error:
                changes.errors.append(error)
                self.recorder.record(job, WARNING, f"FailedUpdate{patch.kind}",
                                     f"Error updating {patch.kind.lower()} {patch.name}: {error.message}")
                continue
            part = patch.subresource or ("spec" if "spec" in patch.patch else "metadata")
            fields = sorted(set(patch.patch[part]) - {"resourceVersion"})  # a guard, not a change
            self.recorder.record(job, NORMAL, f"SuccessfulUpdate{patch.kind}",
                                 f"Updated {patch.kind.lower()} {patch.name}: {', '.join(fields)}"
                                 + (f" of its {part}" if part != "spec" else ""))

    def _ensure_configmap(self, keeper: ConfigMapKeeper, job: Object, namespace: str, changes: ChildChanges) -> None:
        """The pods are created even when this fails: they wait for the ConfigMap, and the retry brings it."""
        try:
            keeper.ensure(namespace)
        except ApiError as error:
            changes.errors.append(error)
            self.recorder.record(job, WARNING, "FailedCreateConfigMap",
                                 f"Error keeping {keeper.what} {keeper.name}: {error.message}")

    def _refused(self, job: Object, creation: Creation, error: ApiError, changes: ChildChanges) -> None:
        permanent = is_permanent_refusal(error)
        changes.refusals.append(CreateRefusal(creation.kind, creation.slot, creation.name, error.message, permanent))
        if not permanent:
            changes.errors.append(error)
        self.recorder.record(job, WARNING, f"FailedCreate{creation.kind}",
                             f"Error creating {creation.kind.lower()} {creation.name}: {error.message}")
        log.info("create refused", job=object_key(job), kind=creation.kind, name=creation.name,
                 permanent=permanent, error=error.message)

    def _delete_children(self, key: str, job: Object, refs: list[ChildRef], changes: ChildChanges, *,
                         release: frozenset[str] = frozenset()) -> None:
        """Deletes the children `refs` names; a pod whose uid is in `release` is released from tfop's finalizer
        by the same request thread once its delete is sent (its end needs no status)."""
        if not refs:
            return
        namespace = job["metadata"]["namespace"]
        self.expectations.expect_deletes(key, [ref.uid for ref in refs])

        def delete(ref: ChildRef) -> Object | ApiError:
            kind = self.kinds[ref.kind]
            try:
                deleted = self.client.delete(kind.resource, ref.name, namespace, uid=ref.uid,
                                             propagation_policy=kind.propagation_policy,
                                             grace_period_seconds=ref.grace_period_seconds)
            except ApiError as error:
                return error
            if ref.kind == POD and ref.uid in release and not removed_by_delete(deleted):
                failed = self._release_one(ref, namespace)
                if failed is not None:
                    changes.errors.append(failed)  # the key is retried; its next plan releases the pod
            return deleted

        # Sent together, as the job's flow in the request pool: a resize by restart deletes every pod of the job,
        # and one after another they took the worker seven round trips, while other jobs waited for a worker.
        answers = list(self._requests.flow(key).map(delete, refs)) if len(refs) > 1 else [delete(refs[0])]
        deleted: dict[str, list[str]] = {}
        for ref, answer in zip(refs, answers, strict=True):
            if isinstance(answer, NotFound):
                self.expectations.deleted(key, ref.uid)  # gone already: no event will come
                changes.removed.add(ref.uid)
            elif isinstance(answer, ApiError):
                self.expectations.deleted(key, ref.uid)
                changes.errors.append(answer)
                self.recorder.record(job, WARNING, f"FailedDelete{ref.kind}",
                                     f"Error deleting {ref.kind.lower()} {ref.name}: {answer.message}")
            else:
                deleted.setdefault(ref.kind, []).append(ref.name)
                if removed_by_delete(answer):
                    changes.removed.add(ref.uid)
        for kind_name, names in deleted.items():
            counter = self.metrics.children_deleted.get(kind_name)
            if counter is not None:
                counter.labels(namespace).inc(len(names))
            log.debug(f"deleted {kind_name.lower()}s", job=key, names=names)
        if deleted:  # one event, as for creates; a replica's pod and service share its name
            names = sorted({name for kind_names in deleted.values() for name in kind_names})
            self.recorder.record(job, NORMAL, REASON_SUCCESSFUL_DELETE,
                                 f"Deleted {_counted(deleted)}: {', '.join(names)}")



def _replica_type(creation: Creation) -> str | None:
    """A replica-scoped creation's slow-start group."""
    return creation.slot.replica_type if creation.slot is not None else None


def _counted(names_by_kind: dict[str, list[str]]) -> str:
    """e.g. `7 pods and 7 services`, `1 podgroup, 7 pods and 7 services`."""
    counts = [f"{len(names)} {kind.lower()}{'s' if len(names) > 1 else ''}" for kind, names in names_by_kind.items()]
    return " and ".join([", ".join(counts[:-1]), counts[-1]]) if len(counts) > 1 else counts[0]
