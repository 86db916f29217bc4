"""Node loss: which replicas sit on a node that is gone or going, and when tfop replaces them.

A pod on a node whose kubelet went silent stays Running (or Terminating, once deleted) in the apiserver for ever:
nothing confirms its process ended, and its name, which the replacement needs, stays taken. This module decides,
from the node's health as the cache shows it and `now`, which replicas are lost and must be force-deleted (their
pod removed without the kubelet's confirmation, so the normal path recreates it on a healthy node), and which are
suspect and being waited for.

The hard rule is never two live processes claiming one TensorFlow task. The signals, and what each proves:
- the `node.kubernetes.io/out-of-service` taint: an administrator (or their tooling) says the node is down, so its
  processes are gone; the replica is replaced at once, whatever the policy (Kubernetes' own non-graceful node
  shutdown uses the same taint);
- the Node object deleted: Kubernetes' pod garbage collector removes such pods too; replaced once the pod is
  older than the grace (a node so new that the cache has yet to see it is not mistaken for a deleted one);
- Ready Unknown (the kubelet stopped reporting) or False (the `node.kubernetes.io/unreachable` taint counts only
  beside them: next to Ready True it is left from a loss the node came back from): proves nothing, a partitioned
  node's process may still run. With the policy Replace (the default) tfop replaces the replica once the node
  has been so for the grace period: the replacement takes over the task's Service name, a partitioned process
  can reach no peer, and its kubelet kills it when the node comes back and finds the pod gone. With
  WaitForProof tfop waits for one of the proofs above (or for the kubelet to confirm the pod ended);
- a node condition or taint the operator config names unhealthy (e.g. a node problem detector's GPU condition):
  the kubelet still runs, so the replica's pod is deleted gracefully once the grace has passed, and the kubelet
  confirms its end; pair it with a NoSchedule taint, or the replacement may be placed on the same node;
- a pod still terminating past its deletion deadline plus a margin, on a node that is not Ready: its kubelet is
  not there to finish the delete; treated as on a lost node;
- a reclaim notice (a taint the config's `disruptions.reclaimNoticeTaints` names, which a cloud's termination
  handler sets on a spot node it is about to reclaim): the node still runs, so the replica is moved at once,
  deleted gracefully so that its program has its grace period to save a checkpoint before the node goes.

A replacement for a lost node is not a restart of the replica: it does not count against backoffLimit. It is
planned beside the forced delete (`force_deleted_pods`), and sent only once the apiserver's answer to that delete
says the pod is removed: the proof a later plan would wait for in the cache, had one pass sooner.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from tfop.api.constants import (
    EVENT_WARNING,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    NODE_LOSS_REPLACE,
    NODE_LOSS_WAIT_FOR_PROOF,
    REASON_NODE_LOST,
)
from tfop.api.defaults import canonical_replica_type
from tfop.api.timestamps import format_time
from tfop.controller.plan.controller_config import NodeLossSettings
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import JobNodePolicy
from tfop.controller.plan.observed.node import NodeView
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.types import POD

TAINT_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


class Verdict(enum.Enum):
    HEALTHY = "healthy"
    SUSPECT = "suspect"  # waited for: the grace has not passed, or the policy waits for proof
    LOST = "lost"  # its process is gone or cut off: force-delete the pod
    MOVE = "move"  # the kubelet still answers: delete the pod gracefully


# A replica's disruption by its node, as the status and the disruption metric name it (policies/disruptions.py).
DISRUPTED_NODE_LOST = "NodeLost"
DISRUPTED_NODE_UNHEALTHY = "NodeUnhealthy"
DISRUPTED_RECLAIM_NOTICE = "ReclaimNotice"


@dataclass(frozen=True)
class ReplicaOnNode:
    """What node loss decides for one replica's pod, and the words that tell the user why."""

    pod: PodView
    node: str
    verdict: Verdict
    cause: str  # e.g. "is unreachable since 12:03:10"
    replace_at: datetime | None = None  # a SUSPECT replica is replaced then, if nothing changes
    since: datetime | None = None  # when the node's trouble began, if it says
    reason: str = DISRUPTED_NODE_LOST  # NodeLost, NodeUnhealthy or ReclaimNotice
    # Its kubelet stopped reporting (Ready Unknown): it went silent some time before `since`.
    unreachable: bool = False

    @property
    def reclaimed(self) -> bool:
        return self.reason == DISRUPTED_RECLAIM_NOTICE


def replicas_on_bad_nodes(pods: Iterable[PodView], nodes: Mapping[str, NodeView], now: datetime,
                          settings: NodeLossSettings, policy: JobNodePolicy,
                          reclaim_taints: tuple[str, ...] = ()) -> list[ReplicaOnNode]:
    """Every pod of the job whose node is not healthy, with its verdict; pods on healthy nodes, unscheduled pods
    and pods that have ended are left out. `nodes`: the cached nodes by name (a name missing: deleted);
    `reclaim_taints`: the taint keys that announce a reclaim."""
    found = []
    for pod in pods:
        node_name = pod.node_name
        if not node_name or pod.phase in ("Succeeded", "Failed"):
            continue
        node = nodes.get(node_name)
        if node is None:
            # Deleted; or so new that the cache has yet to see it, which the grace from the pod's creation covers.
            created = pod.created or now
            verdict = Verdict.LOST if now >= created + policy.grace else Verdict.SUSPECT
            found.append(ReplicaOnNode(pod, node_name, verdict, "no longer exists",
                                       None if verdict is Verdict.LOST else created + policy.grace))
            continue
        if node.ready and (notice := next((taint for key in reclaim_taints
                                           if (taint := node.taint(key)) is not None), None)) is not None:
            added = f" since {_clock(notice.added)}" if notice.added else ""
            found.append(ReplicaOnNode(pod, node_name, Verdict.MOVE, f"has the reclaim notice {notice.key}{added}",
                                       since=notice.added, reason=DISRUPTED_RECLAIM_NOTICE))
            continue
        verdict, cause, since = _node_verdict(node, now, settings, policy)
        if verdict is Verdict.HEALTHY:
            continue
        replace_at = None
        if verdict is Verdict.SUSPECT:
            stuck = _stuck_terminating_since(pod, settings)
            if stuck is not None and now >= stuck and policy.policy == NODE_LOSS_REPLACE:
                verdict, cause = Verdict.LOST, f"{cause}, and its pod has been terminating since {_clock(stuck)}"
            elif since is not None and policy.policy == NODE_LOSS_REPLACE:
                replace_at = since + policy.grace
        reason = DISRUPTED_NODE_UNHEALTHY if verdict is Verdict.MOVE else DISRUPTED_NODE_LOST
        found.append(ReplicaOnNode(pod, node_name, verdict, cause, replace_at, since, reason,
                                   unreachable=not node.ready and node.unreachable))
    return found


def _node_verdict(node: NodeView, now: datetime, settings: NodeLossSettings,
                  policy: JobNodePolicy) -> tuple[Verdict, str, datetime | None]:
    if node.taint(TAINT_OUT_OF_SERVICE) is not None:
        return Verdict.LOST, f"is out of service ({TAINT_OUT_OF_SERVICE})", None
    # Ready True is the kubelet's own, newer word: an unreachable taint beside it is left from the loss and lifted
    # on the node lifecycle controller's next pass, so a node coming back does not cost a job its replicas.
    if not node.ready:
        since = node.unready_since
        what = "is unreachable" if node.unreachable else "is not ready"
        cause = f"{what} since {_clock(since)}" if since is not None else what
        if policy.policy == NODE_LOSS_WAIT_FOR_PROOF:
            return Verdict.SUSPECT, f"{cause}; waiting for proof its processes are gone", since
        if since is not None and now >= since + policy.grace:
            return Verdict.LOST, cause, since
        return Verdict.SUSPECT, cause, since
    marked = _unhealthy_mark(node, settings)
    if marked is not None:
        what, since = marked
        if since is None or now >= since + policy.grace:
            return Verdict.MOVE, what, since
        return Verdict.SUSPECT, what, since
    return Verdict.HEALTHY, "", None


def _unhealthy_mark(node: NodeView, settings: NodeLossSettings) -> tuple[str, datetime | None] | None:
    for condition in node.conditions:
        if condition.type in settings.unhealthy_conditions and condition.status == "True":
            since = condition.since
            return f"has condition {condition.type}" + (f" since {_clock(since)}" if since else ""), since
    for key in settings.unhealthy_taints:
        if (taint := node.taint(key)) is not None:
            since = taint.added
            return f"has taint {key}" + (f" since {_clock(since)}" if since else ""), since
    return None


def _stuck_terminating_since(pod: PodView, settings: NodeLossSettings) -> datetime | None:
    """When a deleted pod is overdue: its deletion deadline (which includes its grace period) plus the margin."""
    deadline = pod.deletion_deadline
    return None if deadline is None else deadline + timedelta(seconds=settings.terminating_margin_seconds)


def _clock(moment: datetime | None) -> str:
    """A time as a user reads it in a message: 12:03:10 (UTC, as the apiserver's timestamps)."""
    return format_time(moment)[11:19] if moment is not None else "?"


def replica_name(pod: PodView) -> str:
    """e.g. `Worker 1`, from the pod's labels."""
    replica_type = canonical_replica_type(pod.labels.get(LABEL_REPLICA_TYPE)) or "replica"
    return f"{replica_type} {pod.labels.get(LABEL_REPLICA_INDEX) or '?'}"


def move_off_bad_nodes(draft: PlanDraft, found: list[ReplicaOnNode], *, already_deleted: set[str]) -> str:
    """Deletes the pods of lost replicas (forced: no kubelet will confirm) and of replicas on unhealthy nodes
    (gracefully), each told by a NodeLost event; asks for a look when a suspect replica's grace ends. Returns what
    the Running condition should say of the replicas still waited for."""
    notes = []
    for replica in found:
        who, uid = replica_name(replica.pod), replica.pod.uid
        where = f"{who}'s node {replica.node} {replica.cause}"
        if replica.verdict is Verdict.SUSPECT:
            if replica.replace_at is not None:
                draft.requeue((replica.replace_at - draft.now).total_seconds())
                notes.append(f"{where}; replacing it at {_clock(replica.replace_at)} unless the node recovers")
            else:
                notes.append(where)
            continue
        if uid in already_deleted or (replica.verdict is Verdict.MOVE and replica.pod.terminating):
            continue
        forced = replica.verdict is Verdict.LOST
        draft.delete_child(POD, replica.pod, force=forced)
        if replica.reclaimed:  # no loss yet: told as the disruption it is (policies/disruptions.py)
            continue
        how = " without waiting for its kubelet." if forced else "."
        draft.event(EVENT_WARNING, REASON_NODE_LOST, f"{draft.job_ref}: {where}; replacing it{how}")
    return "; ".join(notes)


def force_deleted_pods(draft: PlanDraft) -> set[str]:
    """The uids of the pods this plan removes without their kubelet. Each one's replacement is planned with its
    delete, for the applier to send once the apiserver answers that the pod is removed (a finalizer may keep it):
    waiting for a later pass to see it gone from the cache put a rack's replacements behind every other job's
    delete pass in the queue, some 20 s past the grace at 300 jobs."""
    return {ref.uid for ref in draft.delete if ref.kind == POD and ref.grace_period_seconds == 0 and ref.uid}
