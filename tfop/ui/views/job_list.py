"""The job list: one row per TFJob, and the filters by namespace and state."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from tfop.api.constants import (
    CONDITION_RUNNING,
    REASON_GANG_UNSCHEDULABLE,
    REPLICA_TYPES,
    STATE_FAILED,
    STATE_SUCCEEDED,
    STATUS_POD_GROUP_PHASE,
)
from tfop.api.kueue import queue_name
from tfop.api.timestamps import parse_time
from tfop.objects import Object
from tfop.ui.views.clock_text import age_text

# A job's state is its last condition that is True; a job without one yet is New.
STATE_NEW = "New"
RowT = TypeVar("RowT")
STATES = (STATE_NEW, "Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed")


@dataclass(frozen=True)
class ReplicaCounts:
    replica_type: str
    active: int
    succeeded: int
    failed: int
    restarts: int


@dataclass(frozen=True)
class JobRow:
    namespace: str
    name: str
    state: str
    age: str
    replicas: tuple[ReplicaCounts, ...]
    restarts: int
    message: str  # the message of the condition that gives the state
    queue: str = ""  # its Kueue queue and PodGroup, as queue_state says


def _true_conditions(job: Object) -> list[Object]:
    return [condition for condition in (job.get("status") or {}).get("conditions") or []
            if isinstance(condition, dict) and condition.get("status") == "True"]


def job_state(job: Object) -> tuple[str, str]:
    """(state, its message): the last True condition the operator appended, which it keeps in order."""
    true = _true_conditions(job)
    if not true:
        return STATE_NEW, ""
    return str(true[-1].get("type", STATE_NEW)), str(true[-1].get("message", ""))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def replica_counts(job: Object) -> tuple[ReplicaCounts, ...]:
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    known = [name for name in REPLICA_TYPES if name in statuses] + sorted(set(statuses) - set(REPLICA_TYPES))
    return tuple(ReplicaCounts(name, _int(statuses[name].get("active")), _int(statuses[name].get("succeeded")),
                               _int(statuses[name].get("failed")), _int(statuses[name].get("restarts")))
                 for name in known if isinstance(statuses.get(name), dict))


def queue_state(job: Object, state: str) -> str:
    """Where the job stands with Kueue and its gang, from what the job already says: a job that names a Kueue
    queue waits for admission while it is suspended (Kueue suspends it until then, and again when it evicts it);
    the PodGroup's phase is the one tfop copies into status.podGroupPhase, and the gang that cannot be placed is
    marked in the Running condition's message. "" for a job with neither."""
    parts = []
    queue = queue_name(job)
    if queue is not None and state not in (STATE_SUCCEEDED, STATE_FAILED):
        suspended = ((job.get("spec") or {}).get("runPolicy") or {}).get("suspend") is True
        parts.append(f"{'waiting for admission to' if suspended else 'admitted to'} queue {queue}")
    status = job.get("status") or {}
    phase = status.get(STATUS_POD_GROUP_PHASE)
    if isinstance(phase, str) and phase:
        running = next((c for c in status.get("conditions") or []
                        if isinstance(c, dict) and c.get("type") == CONDITION_RUNNING), {})
        unplaceable = f"[{REASON_GANG_UNSCHEDULABLE}]" in str(running.get("message", ""))
        parts.append(f"PodGroup {phase}{' (cannot be placed)' if unplaceable else ''}")
    return "; ".join(parts)


def job_row(job: Object, now: datetime) -> JobRow:
    meta = job.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp"))
    state, message = job_state(job)
    counts = replica_counts(job)
    return JobRow(str(meta.get("namespace", "")), str(meta.get("name", "")), state,
                  age_text((now - created).total_seconds()) if created else "", counts,
                  sum(count.restarts for count in counts), message, queue_state(job, state))


def select_rows(rows: Iterable[RowT], row_of: Callable[[RowT], JobRow], *, namespace: str = "",
                state: str = "") -> list[RowT]:
    """The rows that pass the filters ("" passes all), by namespace and then name."""
    kept = [item for item in rows if (not namespace or row_of(item).namespace == namespace)
            and (not state or row_of(item).state == state)]
    return sorted(kept, key=lambda item: (row_of(item).namespace, row_of(item).name))
