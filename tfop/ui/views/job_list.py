"""The job list: one row per TFJob, and the filters by namespace and state."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from tfop.api.constants import REPLICA_TYPES
from tfop.api.timestamps import parse_time
from tfop.objects import Object
from tfop.ui.views.clock_text import age_text

# A job's state is its last condition that is True; a job without one yet is New.
STATE_NEW = "New"
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


def job_row(job: Object, now: datetime) -> JobRow:
    meta = job.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp"))
    state, message = job_state(job)
    counts = replica_counts(job)
    return JobRow(str(meta.get("namespace", "")), str(meta.get("name", "")), state,
                  age_text((now - created).total_seconds()) if created else "", counts,
                  sum(count.restarts for count in counts), message)


def job_rows(jobs: Iterable[Object], now: datetime, *, namespace: str = "", state: str = "") -> list[JobRow]:
    """The rows of the jobs that pass the filters ("" passes all), by namespace and then name."""
    rows = [job_row(job, now) for job in jobs
            if not namespace or (job.get("metadata") or {}).get("namespace") == namespace]
    return sorted((row for row in rows if not state or row.state == state), key=lambda row: (row.namespace, row.name))
