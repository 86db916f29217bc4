"""Disruptions: a replica the cluster took is no failure of its program, and neither is what that does to a
synchronous job's peers. Each pod's disruption is decided here once per pass, as its view's `disruption`, and
every other rule reads that value: the slot states (a disrupted pod is retryable whatever its exit code), the
restart ledger (no restart counted), restart scope Job (the others restart with it), the events and the metric.

The sources, first that applies:
- `DisruptionTarget`: the pod's condition, whose reason says who took it (PreemptionByScheduler,
  EvictionByEvictionAPI as in `kubectl drain`, DeletionByTaintManager, TerminationByKubelet);
- `NodeDrain` (reason NodeDrained): a pod deleted on a cordoned node by someone other than tfop, with no
  condition (a drain that deletes rather than evicts, `kubectl drain --disable-eviction`);
- `Node`: node loss's verdicts (policies/node_loss.py): NodeLost, NodeUnhealthy, and ReclaimNotice, a node a
  cloud's termination handler has tainted before it reclaims it;
- `Peer` (reason PeerDisrupted), restart scope Job on the Pods backend only: a peer's failure within a
  disruption's window.

The window, and how a genuine failure is still told apart. A disruption that began at T (the condition's time, the
reclaim taint's timeAdded, the node's Ready transition, else when tfop first saw it) opens a window for the job's
other replicas until T + the disrupted pod's grace period (its deletion's, else 30 s) + `disruptions.
peerWindowSeconds` (60 s by default): the disrupted process lives until its grace period ends, and a collective
breaks within seconds of losing a member. A node that has stopped being Ready (node loss's suspect) opens the
same window, so a peer that fails before the node is declared lost is not counted either (until node loss's grace
after the transition, plus the window); if the node comes back, it was no disruption, and the failure counts. A
node whose kubelet went silent (Ready Unknown) lost its processes before the node lifecycle controller said so:
its window opens `disruptions.nodeSilenceSeconds` (50 s, that controller's default node-monitor-grace-period)
before the transition. Within the window a peer's failure (a Failed
pod, or the in-place restart its container status shows last) is the disruption's and is not counted, unless
- it ended before T: it cannot have been caused by it;
- its container was OOMKilled: a broken collective does not make a process run out of memory.
A failure after the window counts, as does a second in-place restart within it (only the last one's end is in the
pod's status). Of what tfop saw before it knew of the disruption, a failure that failed the job or a pod already
recreated stays counted, while an in-place restart in the window is taken out of the count once it knows.

Each disruption is recorded in `status.disruptions` as it is first seen (kept while its pod is seen or its window
is open, and the latest 8 beyond), which is what tells it once: a Normal ReplicaDisrupted event naming the
reason and source (node loss keeps its own NodeLost warning) and the metric by reason. A replica under
restartPolicy Never is not replaced, so its disruption is neither recorded nor told: the job fails as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from tfop.api.constants import (
    EVENT_NORMAL,
    POD_FAILED,
    REASON_REPLICA_DISRUPTED,
    REPLICA_BACKEND_PODS,
    RESTART_POLICY_NEVER,
    RESTART_SCOPE_JOB,
)
from tfop.api.exit_codes import OOM_KILLED
from tfop.api.timestamps import parse_time
from tfop.controller.plan.children.batch_job import made_by_job
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.job_status import DisruptionRecord, DisruptionSource, TFJobStatus
from tfop.controller.plan.observed.node import NodeView
from tfop.controller.plan.observed.pod import Disruption, PodView
from tfop.controller.plan.policies.node_loss import ReplicaOnNode, Verdict, replica_name
from tfop.controller.plan.types import PlanContext

NODE_DRAINED = "NodeDrained"
PEER_DISRUPTED = "PeerDisrupted"
DEFAULT_GRACE_SECONDS = 30  # a pod's terminationGracePeriodSeconds when its deletion does not say
KEPT_BEYOND = 8  # records kept past their pod and window: the latest few, for readers
# The sources a record recalls for a pod that no longer shows them (its own condition it still shows).
_RECALLED: dict[str, DisruptionSource] = {"NodeDrain": "NodeDrain", "Node": "Node"}


@dataclass(frozen=True)
class _Window:
    """A span in which the job's other replicas' failures are one disruption's."""

    start: datetime
    end: datetime
    pod_uid: str  # the disrupted pod's own failure is its disruption, not a peer's
    told: str  # e.g. "Worker 1's disruption (EvictionByEvictionAPI)"

    def holds(self, moment: datetime | None) -> bool:
        return moment is not None and self.start <= moment <= self.end


def judge_disruptions(draft: PlanDraft, job: TFJobModel, context: PlanContext,
                      on_bad_nodes: list[ReplicaOnNode]) -> PlanContext:
    """`context` with each pod's disruption decided; the new ones recorded in the status, told and counted."""
    previous = {record.pod_uid: record for record in draft.previous.disruptions or () if record.pod_uid}
    by_node = {found.pod.uid: found for found in on_bad_nodes if found.verdict in (Verdict.LOST, Verdict.MOVE)}
    retired = _retired(draft.previous)
    never = {replica_type for replica_type, spec in job.spec.replica_specs.items()
             if spec.restart_policy == RESTART_POLICY_NEVER}
    nodes = context.observed.nodes or {}
    scope_job = job.options.restart_scope == RESTART_SCOPE_JOB
    window = timedelta(seconds=draft.config.disruptions.peer_window_seconds)
    silence = timedelta(seconds=draft.config.disruptions.node_silence_seconds)
    pods: list[PodView] = []
    records: dict[str, DisruptionRecord] = {}
    for pod in context.observed.pods:
        disruption = (pod.disruption or _recorded(previous.get(pod.uid)) or _by_node(by_node.get(pod.uid), silence)
                      or _drained(pod, nodes, retired))
        if disruption is None or pod.slot is None or pod.slot.replica_type in never:
            pods.append(pod)
            continue
        if disruption.at is None:
            known = previous.get(pod.uid)
            disruption = replace(disruption, at=known.time if known is not None and known.time else draft.stamp)
        pods.append(pod if disruption == pod.disruption else replace(pod, disruption=disruption))
        record = previous.get(pod.uid) or _record(pod, disruption, window if scope_job else None,
                                                  _node_window_end(by_node.get(pod.uid), job, window))
        records[pod.uid] = record
        if pod.uid not in previous:
            _announce(draft, pod, record, by_node.get(pod.uid))
    if scope_job and job.options.replica_backend == REPLICA_BACKEND_PODS:
        windows = [*_windows(records.values()), *_windows(previous.values()),
                   *_suspect_windows(on_bad_nodes, job, window, silence)]
        pods = [_as_peer(pod, windows) for pod in pods]
    kept = _kept(previous, records, {pod.uid for pod in pods}, draft.now)
    if kept != draft.status.disruptions:
        draft.status = replace(draft.status, disruptions=kept)
    if all(judged is seen for judged, seen in zip(pods, context.observed.pods, strict=True)):
        return context  # nothing disrupted, as in most passes: no copy of the context and its views
    return context.with_pods(tuple(pods))


def _retired(status: TFJobStatus) -> set[str]:
    """The pods tfop itself deleted (the restart ledger's), whose end no drain caused."""
    return {uid for entry in (status.replica_statuses or {}).values() for uid in entry.retired_pod_uids or ()}


def _recorded(record: DisruptionRecord | None) -> Disruption | None:
    """A disruption the status recorded, for a pod that no longer shows why (a drained pod tfop has since retired)."""
    source = _RECALLED.get(record.source or "") if record is not None else None
    if record is None or source is None:
        return None  # a pod's own condition is read from the pod, which still has it
    return Disruption(record.reason or "", record.message or "", source, record.time)


def _by_node(found: ReplicaOnNode | None, silence: timedelta) -> Disruption | None:
    """A lost or moved replica's disruption, from when its node's trouble began: for a node whose kubelet went
    silent, `silence` before its Ready turned Unknown, when its processes may already have gone."""
    if found is None:
        return None
    return Disruption(found.reason, f"its node {found.node} {found.cause}", "Node", _began(found, silence))


def _began(found: ReplicaOnNode, silence: timedelta) -> datetime | None:
    return found.since - silence if found.since is not None and found.unreachable else found.since


def _node_window_end(found: ReplicaOnNode | None, job: TFJobModel, window: timedelta) -> datetime | None:
    """A node's trouble ends its peers' window no sooner than node loss's grace after it began, plus the window."""
    if found is None or found.since is None:
        return None
    return found.since + job.options.node_policy.grace + window


def _drained(pod: PodView, nodes: Mapping[str, NodeView], retired: set[str]) -> Disruption | None:
    """A pod someone else deleted on its cordoned node: a drain that left no DisruptionTarget."""
    node = nodes.get(pod.node_name or "")
    if (not pod.terminating or pod.ended_before_deleted or node is None or not node.unschedulable
            or pod.uid in retired or made_by_job(pod)):
        return None
    deleted = pod.deletion_deadline - timedelta(seconds=pod.deletion_grace or 0) if pod.deletion_deadline else None
    return Disruption(NODE_DRAINED, f"deleted on its cordoned node {node.name}", "NodeDrain", deleted)


def _record(pod: PodView, disruption: Disruption, window: timedelta | None,
            node_end: datetime | None) -> DisruptionRecord:
    at = disruption.at
    grace = timedelta(seconds=pod.deletion_grace if pod.deletion_grace else DEFAULT_GRACE_SECONDS)
    until = None
    if window is not None and at is not None:
        until = max(at + grace + window, node_end) if node_end is not None else at + grace + window
    return DisruptionRecord(replica=replica_name(pod), pod_uid=pod.uid, reason=disruption.reason or "Unknown",
                            source=disruption.source, message=disruption.message or None, time=at,
                            peers_until=until)


def _announce(draft: PlanDraft, pod: PodView, record: DisruptionRecord, on_node: ReplicaOnNode | None) -> None:
    """The ReplicaDisrupted event and the metric, once per disruption (as it enters the status)."""
    draft.disruptions[record.reason or "Unknown"] += 1
    who = replica_name(pod)
    if on_node is not None and not on_node.reclaimed:
        return  # told by node loss's NodeLost warning
    if on_node is not None:
        said = (f"{who}'s node {on_node.node} {on_node.cause} ({record.reason}); it is moved: stopped gracefully, "
                "within its grace period to save a checkpoint, and made again on another node.")
    else:
        told = ": ".join(part for part in (record.reason, record.message) if part)
        said = f"{who}'s pod was disrupted ({told}); it is replaced."
    draft.event(EVENT_NORMAL, REASON_REPLICA_DISRUPTED, f"{draft.job_ref}: {said}")


def _windows(records: Iterable[DisruptionRecord]) -> list[_Window]:
    return [_Window(record.time, record.peers_until, record.pod_uid or "",
                    f"{record.replica}'s disruption ({record.reason})")
            for record in records if record.time is not None and record.peers_until is not None]


def _suspect_windows(on_bad_nodes: list[ReplicaOnNode], job: TFJobModel, window: timedelta,
                     silence: timedelta) -> list[_Window]:
    """A node not Ready opens a window from then (an unreachable one's from when it went silent), before node loss
    declares it lost."""
    grace = job.options.node_policy.grace
    return [_Window(began, found.since + grace + window, found.pod.uid,
                    f"{replica_name(found.pod)}'s node {found.node}, which {found.cause}")
            for found in on_bad_nodes if found.verdict is Verdict.SUSPECT and found.since is not None
            and (began := _began(found, silence)) is not None]


def _as_peer(pod: PodView, windows: list[_Window]) -> PodView:
    """`pod` with its failure in a peer's window uncounted: a Failed pod as disrupted, a container restarted in
    place with that restart uncounted."""
    if pod.disruption is not None or not windows:
        return pod
    container = pod.container()
    if container is None:
        return pod
    others = [window for window in windows if window.pod_uid != pod.uid]
    if pod.phase == POD_FAILED and container.terminated is not None:
        window = _holding(others, container.terminated.reason, container.terminated.finished_at)
        if window is not None:
            return replace(pod, disruption=Disruption(PEER_DISRUPTED, window.told, "Peer", window.start))
    if container.last_terminated is not None and container.restart_count > 0:
        window = _holding(others, container.last_terminated.reason, container.last_terminated.finished_at)
        if window is not None:
            return replace(pod, uncounted_restarts=1)
    return pod


def _holding(windows: list[_Window], reason: str, finished_at: str) -> _Window | None:
    """The window the end falls in, unless it was an OOM kill (the program's own)."""
    if reason == OOM_KILLED:
        return None
    ended = parse_time(finished_at)
    return next((window for window in windows if window.holds(ended)), None)


def _kept(previous: Mapping[str, DisruptionRecord], current: Mapping[str, DisruptionRecord], seen: set[str],
          now: datetime) -> tuple[DisruptionRecord, ...] | None:
    """The records to keep, oldest first: those of pods still seen or with a window open, and the latest few."""
    every = {**previous, **current}
    if not every:
        return None
    ordered = sorted(every.values(), key=lambda record: (record.time or datetime.min.replace(tzinfo=now.tzinfo),
                                                         record.pod_uid or ""))
    live = [record for record in ordered if record.pod_uid in seen
            or (record.peers_until is not None and record.peers_until >= now)]
    beyond = [record for record in ordered if record not in live][-KEPT_BEYOND:]
    return tuple(record for record in ordered if record in live or record in beyond)
