"""The job list: one row per TFJob; the filters by namespace, state and words; the order by any column (newest
first unless asked); and the page of rows shown."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeVar, get_args

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
    created: datetime | None
    started: datetime | None  # status.startTime
    finished: datetime | None  # status.completionTime, else when it became Succeeded or Failed
    replicas: tuple[ReplicaCounts, ...]
    restarts: int
    message: str  # the message of the condition that gives the state
    queue: str = ""  # its Kueue queue and PodGroup, as queue_state says

    def duration(self, now: datetime) -> float | None:
        """Seconds from its start to its end, or to now while it runs."""
        if self.started is None:
            return None
        return ((self.finished or now) - self.started).total_seconds()


# The columns the list sorts by, as the ?sort= parameter names them.
SortKey = Literal["name", "namespace", "state", "created", "started", "finished", "duration", "restarts"]
SORT_KEYS: tuple[SortKey, ...] = get_args(SortKey)
DEFAULT_SORT: SortKey = "created"
PAGE_SIZES = (10, 25, 50, 100, 500)
DEFAULT_PAGE_SIZE = 50


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


def finished_at(job: Object) -> datetime | None:
    status = job.get("status") or {}
    completed = parse_time(status.get("completionTime"))
    if completed is not None:
        return completed
    ended = [parse_time(condition.get("lastTransitionTime")) for condition in _true_conditions(job)
             if condition.get("type") in (STATE_SUCCEEDED, STATE_FAILED)]
    return next((moment for moment in ended if moment is not None), None)


def job_row(job: Object) -> JobRow:
    meta = job.get("metadata") or {}
    state, message = job_state(job)
    counts = replica_counts(job)
    return JobRow(str(meta.get("namespace", "")), str(meta.get("name", "")), state,
                  parse_time(meta.get("creationTimestamp")), parse_time((job.get("status") or {}).get("startTime")),
                  finished_at(job), counts, sum(count.restarts for count in counts), message, queue_state(job, state))


def matches(row: JobRow, words: str) -> bool:
    """Every word of the search is in the row's namespace/name, state, queue or message (any case)."""
    text = f"{row.namespace}/{row.name} {row.state} {row.queue} {row.message}".lower()
    return all(word in text for word in words.lower().split())


def _order(row: JobRow, key: SortKey, now: datetime) -> tuple[object, ...]:
    """The sort key; a row without the value (a job not started) sorts as the smallest, ties by namespace/name."""
    value: object
    if key in ("name", "namespace", "state"):
        value = getattr(row, key)
    elif key == "restarts":
        value = row.restarts
    elif key == "duration":
        duration = row.duration(now)
        value = (duration is not None, duration or 0.0)
    else:
        moment: datetime | None = getattr(row, key)
        value = (moment is not None, moment.timestamp() if moment else 0.0)
    return (value, row.namespace, row.name)


def select_rows(rows: Iterable[RowT], row_of: Callable[[RowT], JobRow], now: datetime, *, namespace: str = "",
                state: str = "", words: str = "", sort: SortKey = DEFAULT_SORT,
                descending: bool = True) -> list[RowT]:
    """The rows that pass the filters ("" passes all), ordered by `sort`: newest first by default."""
    kept = [item for item in rows if (not namespace or row_of(item).namespace == namespace)
            and (not state or row_of(item).state == state) and (not words or matches(row_of(item), words))]
    return sorted(kept, key=lambda item: _order(row_of(item), sort, now), reverse=descending)


@dataclass(frozen=True)
class Page:
    number: int  # from 1
    pages: int  # at least 1
    size: int
    total: int  # rows on every page

    @property
    def first(self) -> int:
        """The index of its first row (0 when there is none)."""
        return (self.number - 1) * self.size

    @property
    def last(self) -> int:
        """One past its last row."""
        return min(self.total, self.number * self.size)


def page_of(total: int, number: str | None, size: str | None) -> Page:
    """The page asked for (?page=, ?per=), kept within what there is: a page past the last is the last."""
    per = int(size) if size and size.isdigit() and int(size) in PAGE_SIZES else DEFAULT_PAGE_SIZE
    pages = max(1, -(-total // per))
    asked = int(number) if number and number.isdigit() else 1
    return Page(min(max(1, asked), pages), pages, per, total)


def sort_key(text: str | None) -> SortKey:
    return next((key for key in SORT_KEYS if key == text), DEFAULT_SORT)
