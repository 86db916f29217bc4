"""One job's page: its conditions, a row per replica pod, and the events of the job and its pods in time order.

A replica whose pod tfop recreated for a retryable exit (restartPolicy ExitCode) has a new pod with no exit of its
own; its last exit is then the one the job's status keeps (`replicaStatuses[type].recreatedExits`, written by the
operator's plan/replicas/recreated_exits.py), which a reader of the job may read whenever this page ran."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from tfop.api.constants import (
    DEFAULT_CONTAINER_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    REPLICA_TYPES,
    TF_CONFIG_ENV,
)
from tfop.api.exit_codes import classify_termination
from tfop.api.timestamps import parse_time
from tfop.objects import Object
from tfop.ui.views.clock_text import moment_text


@dataclass(frozen=True)
class ConditionRow:
    condition_type: str
    status: str
    reason: str
    message: str
    last_transition: str


@dataclass(frozen=True)
class LastExit:
    code: int
    reason: str
    exit_class: str  # Succeeded, Permanent (1-127) or Retryable (128-255, or OOMKilled)
    of_recreated_pod: bool = False  # the exit of the replica's pod before tfop recreated it


@dataclass(frozen=True)
class RecreatedExit:
    """The exit that made tfop recreate a replica's pod, as the job's status keeps it."""

    replica_type: str  # lowercase, as the pods' replica-type label
    index: str
    code: int
    reason: str
    finished: datetime | None


@dataclass(frozen=True)
class ReplicaRow:
    replica_type: str
    index: str
    pod: str
    node: str
    phase: str
    restarts: int  # in place, and by recreating its pod: as the job's status counts them for the list
    last_exit: LastExit | None
    recreated: int = 0  # of `restarts`, the times tfop recreated the replica's pod


@dataclass(frozen=True)
class EventRow:
    time: str
    event_type: str
    reason: str
    involved: str  # "TFJob/name" or "Pod/name"
    message: str
    count: int
    key: str = ""  # the event's uid, for the page's live updates (else its place in the list)


def condition_rows(job: Object) -> list[ConditionRow]:
    return [ConditionRow(str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason", "")),
                         str(c.get("message", "")), str(c.get("lastTransitionTime", "")))
            for c in (job.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]


def main_container_status(pod: Object) -> Object:
    """The `tensorflow` container's status, else the first container's, else {}."""
    statuses = [s for s in (pod.get("status") or {}).get("containerStatuses") or [] if isinstance(s, dict)]
    return next((s for s in statuses if s.get("name") == DEFAULT_CONTAINER_NAME), statuses[0] if statuses else {})


def last_exit(pod: Object) -> LastExit | None:
    """How the main container last ended: its current termination, else the one before its restart in place."""
    status = main_container_status(pod)
    for state_key in ("state", "lastState"):
        terminated = (status.get(state_key) or {}).get("terminated")
        if isinstance(terminated, dict) and isinstance(terminated.get("exitCode"), int):
            code, reason = int(terminated["exitCode"]), str(terminated.get("reason", ""))
            return LastExit(code, reason, classify_termination(code, reason).value)
    return None


def recreated_exits(job: Object | None) -> dict[tuple[str, str], RecreatedExit]:
    """By (replica type, index), as the pods' labels name them; entries not as tfop writes them are left out."""
    found = {}
    statuses = ((job or {}).get("status") or {}).get("replicaStatuses") or {}
    for replica_type, entry in statuses.items() if isinstance(statuses, dict) else ():
        exits = entry.get("recreatedExits") if isinstance(entry, dict) else None
        for kept in exits if isinstance(exits, list) else ():
            if not isinstance(kept, dict) or not isinstance(kept.get("index"), int) \
                    or not isinstance(kept.get("exitCode"), int):
                continue
            recreated = RecreatedExit(str(replica_type).lower(), str(kept["index"]), kept["exitCode"],
                                      str(kept.get("reason") or ""), parse_time(kept.get("finishedAt")))
            found[(recreated.replica_type, recreated.index)] = recreated
    return found


def _labels(pod: Object) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def replica_order(pod: Object) -> tuple[int, str, int, str]:
    """Chief, Master, Worker, PS, Evaluator, then others by name; by index within a type."""
    labels = _labels(pod)
    replica_type = labels.get(LABEL_REPLICA_TYPE, "").lower()
    known = [name.lower() for name in REPLICA_TYPES]
    index = labels.get(LABEL_REPLICA_INDEX, "")
    return (known.index(replica_type) if replica_type in known else len(known), replica_type,
            int(index) if index.isdigit() else -1, (pod.get("metadata") or {}).get("name", ""))


def _slot(pod: Object) -> tuple[str, str]:
    labels = _labels(pod)
    return labels.get(LABEL_REPLICA_TYPE, "").lower(), labels.get(LABEL_REPLICA_INDEX, "")


def _ended_badly(pod: Object) -> bool:
    found = last_exit(pod)
    return (found is not None and found.code != 0) or (pod.get("status") or {}).get("phase") == "Failed"


def replica_rows(pods: Iterable[Object], recreated: Mapping[tuple[str, str], RecreatedExit] | None = None,
                 earlier: Iterable[Object] = ()) -> list[ReplicaRow]:
    """A row per pod; `recreated` (recreated_exits) gives the last exit of a replica whose new pod has none;
    `earlier`, the job's pods deleted since this process started. A replica's restarts are its pod's restarts in
    place and the times its pod was recreated: the earlier pods of its slot that failed, and at least once when
    the status keeps an exit of a pod tfop recreated (the page may have started after it)."""
    current = list(pods)
    uids = {(pod.get("metadata") or {}).get("uid") for pod in current}
    failed_before: dict[tuple[str, str], int] = {}
    for pod in earlier:
        if (pod.get("metadata") or {}).get("uid") not in uids and _ended_badly(pod):
            failed_before[_slot(pod)] = failed_before.get(_slot(pod), 0) + 1
    rows = []
    for pod in sorted(current, key=replica_order):
        labels = _labels(pod)
        in_place = sum(s.get("restartCount", 0) for s in (pod.get("status") or {}).get("containerStatuses") or []
                       if isinstance(s, dict) and isinstance(s.get("restartCount"), int))
        phase = str((pod.get("status") or {}).get("phase", ""))
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            phase = f"{phase} (terminating)" if phase else "Terminating"
        replica_type, index = labels.get(LABEL_REPLICA_TYPE, ""), labels.get(LABEL_REPLICA_INDEX, "")
        exit_ = last_exit(pod)
        before = (recreated or {}).get((replica_type.lower(), index))
        if exit_ is None and before is not None:
            exit_ = LastExit(before.code, before.reason, classify_termination(before.code, before.reason).value,
                             of_recreated_pod=True)
        times_recreated = max(failed_before.get(_slot(pod), 0), 1 if before is not None else 0)
        rows.append(ReplicaRow(replica_type, index, str((pod.get("metadata") or {}).get("name", "")),
                               str((pod.get("spec") or {}).get("nodeName", "")), phase, in_place + times_recreated,
                               exit_, times_recreated))
    return rows


def event_time(event: Object) -> datetime | None:
    """When the event last happened: lastTimestamp, the series' last, eventTime, or its creation."""
    for value in (event.get("lastTimestamp"), (event.get("series") or {}).get("lastObservedTime"),
                  event.get("eventTime"), event.get("firstTimestamp"),
                  (event.get("metadata") or {}).get("creationTimestamp")):
        moment = parse_time(value)
        if moment is not None:
            return moment
    return None


def event_rows(events: Iterable[Object]) -> list[EventRow]:
    """Oldest first; events at the same second keep the order of their involved object and reason."""
    dated = [(event_time(event), event) for event in events]
    dated.sort(key=lambda pair: (pair[0] is not None, pair[0] or datetime.min))
    rows = []
    for place, (moment, event) in enumerate(dated):
        involved = event.get("involvedObject") or {}
        count = event.get("count") or (event.get("series") or {}).get("count") or 1
        rows.append(EventRow(moment_text(moment), str(event.get("type", "")), str(event.get("reason", "")),
                             f"{involved.get('kind', '')}/{involved.get('name', '')}", str(event.get("message", "")),
                             count if isinstance(count, int) else 1,
                             str((event.get("metadata") or {}).get("uid") or f"at-{place}")))
    return rows


def tf_config_text(pod: Object) -> str:
    """The TF_CONFIG the pod's containers got (the main one's first), indented for reading; as it was when it is
    not JSON; "" when there is none."""
    containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    containers.sort(key=lambda container: container.get("name") != DEFAULT_CONTAINER_NAME)
    raw = next((str(env.get("value") or "") for container in containers for env in container.get("env") or []
                if isinstance(env, dict) and env.get("name") == TF_CONFIG_ENV), "")
    try:
        return json.dumps(json.loads(raw), indent=2, sort_keys=True) if raw else ""
    except ValueError:
        return raw
