"""Resizing a job: its Worker count changed (`kubectl scale`, an HPA, a user's edit), and TensorFlow must learn of
it the one way its strategy allows (docs/tfjob/scaling.md).

- By restart (the default): MultiWorkerMirroredStrategy and the ParameterServerStrategy coordinator fix their
  cluster when they start, so every live replica whose TF_CONFIG is out of date is stopped gracefully (SIGTERM, then
  its pod's grace period: time for BackupAndRestore to save) with every other live replica, and all start again
  together with the new TF_CONFIG once the old pods are gone, resuming from the checkpoint. As with a node loss,
  nothing of it counts against backoffLimit.
- In place (enableDynamicWorker): workers and PS know only the PS and themselves (children/tf_config.py), so a new
  worker is just created and a removed one (the highest indices) stopped gracefully; the chief and the PS run on.
  But a gang shrunk before any of its pods was placed has the others made again: the co-scheduler tries a pod it
  parked again on its PodGroup's update only if its plugin was the last to refuse it, and a pod last refused by
  the node filters (too few GPUs for the whole gang) would sit until some unrelated pod or node changes, or until
  the scheduler's 5-minute flush. New pods are tried at once, and none of these ever ran.

A pod's TF_CONFIG is out of date when the replica counts it was built from (its ANNOTATION_TF_CLUSTER) are not the
job's now. A pod without the annotation was made by an earlier tfop and is left alone. status.workerReplicas
remembers the Worker count the job last planned for, so that each resize is told once: a Resized event saying who
asked (a User, the job's HPA, or the capacity auto-scaler with its reason) and what happens, and a count in the
metrics.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfop.api.constants import (
    ANNOTATION_TF_CLUSTER,
    CONDITION_RESTARTING,
    EVENT_NORMAL,
    EVENT_WARNING,
    POD_FAILED,
    POD_SUCCEEDED,
    REASON_RESIZED,
    REASON_RESIZED_BELOW_MIN_AVAILABLE,
    REASON_RESIZING,
    REPLICA_WORKER,
)
from tfop.controller.plan.children.tf_config import cluster_key
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.model import ReplicasWriter, TFJobModel
from tfop.controller.plan.job_status import LastResize, ResizeCause, ResizeStrategy
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.types import PlanContext

# The field manager of the HPA controller's writes. kube-controller-manager names the HPA's client
# "horizontal-pod-autoscaler" (cmd/kube-controller-manager/app/autoscaling.go), which client-go appends to the
# binary's user agent ("kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/<commit>/horizontal-pod-autoscaler",
# rest.AddUserAgent); its scale Update gives no fieldManager, so the apiserver takes the user agent up to its first
# "/" (endpoints/handlers/create.go, prefixFromUserAgent), as an Update of the scale subresource: only that entry
# is the HPA's (another client named so, or writing the spec itself, is not).
HPA_CONTROLLER = "kube-controller-manager"


@dataclass(frozen=True)
class Resize:
    """What one plan does about the job's size: the live pods to restart together because their TF_CONFIG is out
    of date (none in place, or when nothing changed), and the key pods of the current size carry."""

    key: str
    restart: tuple[PodView, ...] = ()

    def out_of_date(self, pod: PodView) -> bool:
        """Whether `pod` was made for another size (a pod without the key is an earlier tfop's: left alone)."""
        key = pod.annotations.get(ANNOTATION_TF_CLUSTER)
        return key is not None and key != self.key


def strategy_of(job: TFJobModel) -> ResizeStrategy:
    return ResizeStrategy.IN_PLACE if job.spec.enable_dynamic_worker else ResizeStrategy.RESTART


def plan_resize(draft: PlanDraft, job: TFJobModel, context: PlanContext, pods: Iterable[PodView]) -> Resize:
    """Tells a new Worker count once and finds the live pods a resize by restart must stop. `pods`: the job's
    replica pods (pods backend: with batch Jobs, the Job controller would replace a stopped pod by itself)."""
    resize = Resize(cluster_key(job.spec))
    live = [pod for pod in pods if not pod.terminating and pod.phase not in (POD_SUCCEEDED, POD_FAILED)]
    unplaced_gang = (strategy_of(job) is ResizeStrategy.IN_PLACE and context.config.gang is not None and bool(live)
                     and not any(pod.node_name for pod in live))
    if _announce(draft, job, context, unplaced_gang=unplaced_gang) and unplaced_gang:
        return Resize(resize.key, tuple(live))  # the surplus among them is deleted as such, the rest made again
    if not any(resize.out_of_date(pod) for pod in live):
        return resize
    # Any live replica out of date restarts every live one: they form one cluster, and a process started alone
    # with the new TF_CONFIG would wait for peers that still run with the old one.
    restart = tuple(live)
    draft.set_condition(CONDITION_RESTARTING, true=True, reason=REASON_RESIZING,
                        message=f"{draft.job_ref} is restarting all {len(restart)} live replicas together with the "
                                f"new TF_CONFIG ({resize.key}), resuming from the checkpoint.")
    return Resize(resize.key, restart)


def _announce(draft: PlanDraft, job: TFJobModel, context: PlanContext, *, unplaced_gang: bool) -> bool:
    """The Resized event and status.lastResize, when the Worker count differs from the one last planned for (the
    first plan only records it). Once per resize: the next plan finds the count recorded. Whether it told of a
    shrink; `unplaced_gang`: an in-place job's gang none of whose pods is placed."""
    if REPLICA_WORKER not in job.spec.replica_specs:
        return False
    wanted = job.spec.replicas(REPLICA_WORKER)
    before = draft.status.worker_replicas
    draft.status = replace(draft.status, worker_replicas=wanted)
    if before is None or before == wanted:
        return False
    cause, strategy = _cause(job, wanted), strategy_of(job)
    message = (f"{draft.job_ref}: Worker {before} -> {wanted}, asked by {_asked_by(job, cause)}; "
               f"{_how(strategy, before, wanted, unplaced_gang)}.")
    draft.event(EVENT_NORMAL, REASON_RESIZED, message)
    draft.status = replace(draft.status, last_resize=LastResize(
        from_=before, to=wanted, cause=cause, strategy=strategy, time=draft.stamp, message=message))
    draft.resizes[(cause.value, strategy.value)] += 1
    _warn_below_min_available(draft, job, context, wanted)
    return wanted < before


def _warn_below_min_available(draft: PlanDraft, job: TFJobModel, context: PlanContext, workers: int) -> None:
    """An explicit minAvailable stays the group's minMember (the Go operator's meaning, on which its users' tests
    rely: a job that asks for more pods than it has waits for them), so after a resize below it any pod to be
    placed waits for pods that will not come. Said once, with the resize."""
    policy = job.spec.run_policy.scheduling_policy
    if context.config.gang is None or policy is None or not policy.min_available:
        return
    pods = sum(job.spec.replicas(replica_type) for replica_type in job.spec.replica_specs)
    if pods >= policy.min_available:
        return
    others = pods - workers
    field = "gang minCount" if context.config.gang.native else "minMember"
    draft.event(EVENT_WARNING, REASON_RESIZED_BELOW_MIN_AVAILABLE,
                f"{draft.job_ref} now has {pods} pods, fewer than spec.runPolicy.schedulingPolicy.minAvailable "
                f"({policy.min_available}), which stays its PodGroup's {field}: the {context.config.gang.name} "
                f"scheduler places no pod of it (a pod started again for the resize or replaced after a failure) "
                f"until minAvailable is lowered or the job has at least {policy.min_available - others} workers.")


def _cause(job: TFJobModel, wanted: int) -> ResizeCause:
    """The capacity auto-scaler when its note names the count now asked (it writes both in one patch; a later
    change to another count is someone else's). Else whoever last wrote the Worker count, as managedFields name
    it: the HPA controller's Update of the scale subresource, or anyone else's write, a user's."""
    if job.options.capacity_resize is not None and job.options.capacity_resize.to == wanted:
        return ResizeCause.CAPACITY
    writer = job.metadata.replicas_writers.get(REPLICA_WORKER)
    if writer is not None and (writer.manager, writer.operation, writer.subresource) == (HPA_CONTROLLER, "Update",
                                                                                         "scale"):
        return ResizeCause.HPA
    return ResizeCause.USER


def _asked_by(job: TFJobModel, cause: ResizeCause) -> str:
    if cause is ResizeCause.CAPACITY and job.options.capacity_resize is not None:
        return f"the capacity auto-scaler ({job.options.capacity_resize.reason})"
    writer = job.metadata.replicas_writers.get(REPLICA_WORKER)
    if cause is ResizeCause.USER and writer is not None:
        return f"{writer.manager} ({_written_by(writer)})"
    return {ResizeCause.USER: "a user (the scale subresource or an edit of the spec)",
            ResizeCause.HPA: "the job's HorizontalPodAutoscaler",
            ResizeCause.CAPACITY: "the capacity auto-scaler"}[cause]


def _written_by(writer: ReplicasWriter) -> str:
    if writer.subresource == "scale":
        return "the scale subresource"
    return "a server-side apply of the spec" if writer.operation == "Apply" else "an update of the spec"


def _how(strategy: ResizeStrategy, before: int, wanted: int, unplaced_gang: bool) -> str:
    if strategy is ResizeStrategy.RESTART:
        return "every replica stops gracefully and starts again together with the new TF_CONFIG"
    if wanted > before:
        return f"{_workers(before, wanted, 'joins', 'join')} in place; the other replicas run on"
    if unplaced_gang:
        return (f"{_workers(wanted, before, 'goes', 'go')}; no pod of the gang was placed yet, so the others are "
                f"made again, for the scheduler to try the smaller gang at once")
    return f"{_workers(wanted, before, 'stops', 'stop')} gracefully; the other replicas run on"


def _workers(first: int, end: int, one_does: str, many_do: str) -> str:
    return f"worker {first} {one_does}" if end - first == 1 else f"workers {first}-{end - 1} {many_do}"
