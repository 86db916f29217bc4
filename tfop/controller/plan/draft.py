"""A plan being built: a working copy of the job's status plus the actions decided so far.

Events and counters for condition transitions are derived here, once, by comparing the conditions the job had with
the ones the plan leaves: the rules in reconcile only set conditions and never have to remember to announce them.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import Any

from tfop.api.constants import (
    CONDITION_CREATED,
    CONDITION_FAILED,
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    CONDITION_SUCCEEDED,
    CONDITION_SUSPENDED,
    EVENT_NORMAL,
    EVENT_WARNING,
    REASON_CREATED,
    REASON_PENDING,
    REASON_RESUMED,
    ConditionType,
)
from tfop.api.fields import integer, mapping, text
from tfop.api.timestamps import as_utc, format_time
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.status import (
    FALSE,
    TRUE,
    condition_is_true,
    conditions_of,
    find_condition,
    set_condition,
    summary,
)
from tfop.controller.plan.types import (
    ChildBodies,
    ChildPatch,
    ChildRef,
    Creation,
    JobCounters,
    JobEvent,
    Plan,
    ReplicaRestart,
    StatusWait,
)

LAST_RECONCILE_TIME = "lastReconcileTime"


class PlanDraft:
    def __init__(self, job: dict[str, Any], now: datetime, config: ControllerConfig) -> None:
        metadata = mapping(job.get("metadata"))
        self.now = as_utc(now)
        self.config = config
        self.job_name = text(metadata.get("name")) or ""
        self.job_ref = f"TFJob {text(metadata.get('namespace')) or ''}/{self.job_name}"
        self.generation = integer(metadata.get("generation"))
        self.uid = text(metadata.get("uid")) or None  # None only for a job too broken to have been stored
        self._old_status = job.get("status")
        self.status: dict[str, Any] = copy.deepcopy(mapping(self._old_status))
        self._old_conditions = conditions_of(self._old_status)
        self.conditions = list(self._old_conditions)
        self.create: list[Creation] = []
        self.delete: list[ChildRef] = []
        self.patch: list[ChildPatch] = []
        self.release: list[ChildRef] = []
        self.desired: ChildBodies | None = None
        self.events: list[JobEvent] = []
        self.requeue_after: float | None = None
        self.delete_job = False
        self.restarts = 0  # new restarts seen by this plan (in place and recreations)
        self.restarts_by_exit_class: Counter[str] = Counter()
        self.restarted: list[ReplicaRestart] = []
        self.resizes: Counter[tuple[str, str]] = Counter()  # told by this plan, by (cause, strategy)
        self.cleaning_up = False  # a finished or suspended job still has children going away
        self.success_detail = ""  # told by the Succeeded event after its message (the exits it ended with)
        self._said_once = False  # an event only this plan can tell: its status must not wait for a later plan

    def set_condition(self, condition_type: ConditionType, *, true: bool, reason: str, message: str) -> None:
        self.conditions = set_condition(self.conditions, condition_type, true=true, reason=reason, message=message,
                                        now=self.now, generation=self.generation)

    def clear_condition(self, condition_type: ConditionType, *, reason: str, message: str) -> None:
        """Sets a condition False, but only if the job has it: absent already means not true."""
        if find_condition(self.conditions, condition_type) is not None:
            self.set_condition(condition_type, true=False, reason=reason, message=message)

    def is_true(self, condition_type: ConditionType) -> bool:
        return condition_is_true(self.conditions, condition_type)

    def condition(self, condition_type: ConditionType) -> dict[str, Any] | None:
        return find_condition(self.conditions, condition_type)

    def old_condition(self, condition_type: ConditionType) -> dict[str, Any] | None:
        """The condition as the job had it before this plan."""
        return find_condition(self._old_conditions, condition_type)

    def event(self, event_type: str, reason: str, message: str, *, only_this_plan: bool = False) -> None:
        """`only_this_plan`: the event tells what this plan does (not a state a later plan would see again), so it
        must not be dropped with a status held back for a later plan."""
        self.events.append(JobEvent(event_type, reason, message))
        self._said_once = self._said_once or only_this_plan

    def requeue(self, seconds: float) -> None:
        seconds = max(seconds, 0.0)
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)

    def delete_child(self, kind: str, child: Child | dict[str, Any], *, force: bool = False) -> None:
        self.delete.append(ChildRef.of(kind, child, force=force))

    def deleted_uids(self, kind: str) -> set[str]:
        return {ref.uid for ref in self.delete if ref.kind == kind}

    def set_time(self, key: str) -> None:
        """Stamps a status timestamp with the plan's `now`."""
        self.status[key] = format_time(self.now)

    def note_cleanup(self, children_going: bool) -> None:
        """A finished or suspended job is cleaning up while it deletes children or waits for them to go."""
        self.cleaning_up = bool(self.delete) or children_going

    def finalize(self, *, refused: bool = False) -> Plan:
        """`refused`: the apiserver refused creates of the plan made from this state, which the status must tell."""
        if self.conditions or "conditions" in self.status:
            self.status["conditions"] = self.conditions
        self.status.update(summary(self.conditions, cleaning_up=self.cleaning_up))
        events, counters = self._transitions()
        status: dict[str, Any] | None = None
        if not self.delete_job and _without_reconcile_time(self.status) != _without_reconcile_time(self._old_status):
            # Stamped only alongside a real change, so an idle job is never re-patched.
            self.set_time(LAST_RECONCILE_TIME)
            status = self.status
        return Plan(create=self.create, delete=self.delete, patch=self.patch,
                    desired=self.desired if self.create or self.patch else None, status=status,
                    status_waits=self._status_wait(status, refused), events=events,
                    requeue_after=self.requeue_after, delete_job=self.delete_job, counters=counters,
                    restarts=tuple(self.restarted), release=self.release)

    def _status_wait(self, status: dict[str, Any] | None, refused: bool) -> StatusWait:
        # Pods waiting to be released wait for this status: it is written at once.
        if (status is None or refused or self.delete or self.patch or self.release or self.restarts
                or self.delete_job or self._said_once):
            return StatusWait.NO
        if self.create:
            return StatusWait.FOR_CREATES
        if _progress_only(self._old_status, status) or _first_and_pending(self._old_status, status):
            return StatusWait.BRIEFLY
        return StatusWait.NO

    def _transitions(self) -> tuple[list[JobEvent], JobCounters]:
        told: tuple[ConditionType, ...] = (
            CONDITION_CREATED, CONDITION_RUNNING, CONDITION_SUCCEEDED, CONDITION_FAILED, CONDITION_SUSPENDED)
        became = {condition_type for condition_type in told
                  if self.is_true(condition_type) and not condition_is_true(self._old_conditions, condition_type)}
        before: list[JobEvent] = []
        after: list[JobEvent] = []
        if CONDITION_CREATED in became:
            before.append(self._condition_event(CONDITION_CREATED, EVENT_NORMAL, quiet=True))
        if CONDITION_SUSPENDED in became:
            before.append(self._condition_event(CONDITION_SUSPENDED, EVENT_NORMAL))
        elif condition_is_true(self._old_conditions, CONDITION_SUSPENDED) and not self.is_true(CONDITION_SUSPENDED):
            before.append(JobEvent(EVENT_NORMAL, REASON_RESUMED, f"{self.job_ref} is resumed."))
        if CONDITION_RUNNING in became:
            after.append(self._condition_event(CONDITION_RUNNING, EVENT_NORMAL, quiet=True))
        if CONDITION_SUCCEEDED in became:
            succeeded = self._condition_event(CONDITION_SUCCEEDED, EVENT_NORMAL)
            if self.success_detail:
                succeeded = replace(succeeded, message=f"{succeeded.message.rstrip('.')}: {self.success_detail}.")
            after.append(succeeded)
        failed, old_failed = self.condition(CONDITION_FAILED), find_condition(self._old_conditions, CONDITION_FAILED)
        # A failed job whose new spec is invalid in a new way is announced again.
        if failed is not None and failed.get("status") == TRUE and (
                CONDITION_FAILED in became or old_failed is None or old_failed.get("message") != failed.get("message")):
            after.append(self._condition_event(CONDITION_FAILED, EVENT_WARNING))
        counters = JobCounters(
            created=int(CONDITION_CREATED in became),
            deleted=int(self.delete_job),
            successful=int(CONDITION_SUCCEEDED in became),
            failed=int(CONDITION_FAILED in became),
            restarted=self.restarts,
            restarts_by_exit_class=tuple(sorted(self.restarts_by_exit_class.items())),
            resizes=tuple(sorted(self.resizes.items())),
            started_running=int(CONDITION_RUNNING in became
                                and find_condition(self._old_conditions, CONDITION_RESTARTING) is None),
        )
        return [*before, *self.events, *after], counters

    def _condition_event(self, condition_type: ConditionType, event_type: str, *, quiet: bool = False) -> JobEvent:
        condition = self.condition(condition_type) or {}
        return JobEvent(event_type, str(condition.get("reason", "")), str(condition.get("message", "")), quiet)


def _without_reconcile_time(status: object) -> object:
    if not isinstance(status, dict):
        return status
    return {key: value for key, value in status.items() if key != LAST_RECONCILE_TIME}


# What moves as pods progress without the job changing state: replica counts, the summary, condition messages,
# and the older API's phase as a finished job's clean-up ends (CleanUp -> Done; the conditions decide the rest).
_PROGRESS_COUNTS = frozenset({"active", "succeeded", "failed"})
_PROGRESS_FIELDS = frozenset({LAST_RECONCILE_TIME, "replicaSummary", "conditions", "replicaStatuses", "phase"})


def _first_and_pending(old: object, new: dict[str, Any]) -> bool:
    """A job's first status, saying its replicas wait to run, as they do right after they are created: news only
    if it lasts, and if they run within the window, the one write says Running."""
    shown = {(c.get("type"), c.get("status"), c.get("reason")) for c in conditions_of(new)}
    return not conditions_of(old) and shown == {(CONDITION_CREATED, TRUE, REASON_CREATED),
                                                 (CONDITION_RUNNING, FALSE, REASON_PENDING)}


def _progress_only(old: object, new: dict[str, Any]) -> bool:
    """Whether `new` differs from `old` only in what pods' progress moves: every condition keeps its status and
    reason, and every other field (times, restart counts, phase, ...) stays as it was."""
    if not isinstance(old, dict):
        return False

    def shape(status: dict[str, Any]) -> tuple[object, ...]:
        conditions = [(c.get("type"), c.get("status"), c.get("reason"), c.get("lastTransitionTime"))
                      for c in conditions_of(status)]
        replicas = {replica_type: {k: v for k, v in mapping(entry).items() if k not in _PROGRESS_COUNTS}
                    for replica_type, entry in mapping(status.get("replicaStatuses")).items()}
        rest = {k: v for k, v in status.items() if k not in _PROGRESS_FIELDS}
        return conditions, replicas, rest

    return shape(old) == shape(new)
