"""The evaluators' final evaluation: a job whose training succeeded waits, up to a grace, for its running evaluators.

TensorFlow's side-car evaluator runs beside the training and evaluates each checkpoint it finds; the last one is
written as the chief ends. Finishing the job the moment the chief succeeds would have its clean-up
(cleanPodPolicy Running or All) delete the evaluator in the middle of that last evaluation (the Kubeflow training
operator does, its issue 1658). So when the training succeeds and an evaluator runs:

- the job waits: Succeeded False and Running True, both with reason WaitingForEvaluator and a message naming the
  evaluators and when the wait ends, told once by a Normal event of that reason; the rest of the job is cleaned
  up at once as cleanPodPolicy says (the training is over; only the evaluators, their services and the PodGroup
  they were scheduled in are kept), and nothing is created or restarted again;
- the job succeeds when every evaluator waited for has ended, when the grace has passed since the training
  succeeded, when activeDeadlineSeconds is reached, or when the job is suspended; whichever comes first. Then
  cleanPodPolicy applies to the evaluators too.
- an evaluator that fails, or still runs when the wait ends, is told by a Warning event (EvaluatorFailed,
  EvaluatorGraceExpired); the job succeeds all the same: its training did.

Only evaluators whose pod runs are waited for (a pending one has not started evaluating). With cleanPodPolicy None
nothing would be deleted, so the job succeeds at once, as with a grace of 0. The wait's start is the Succeeded
condition's lastTransitionTime, so the wait is level-triggered: an operator restart resumes it where it was.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tfop.api.constants import (
    CLEAN_POD_POLICY_ALL,
    CLEAN_POD_POLICY_NONE,
    CLEAN_POD_POLICY_RUNNING,
    CONDITION_RESTARTING,
    CONDITION_RUNNING,
    CONDITION_SUCCEEDED,
    EVENT_NORMAL,
    EVENT_WARNING,
    REASON_EVALUATOR_FAILED,
    REASON_EVALUATOR_GRACE_EXPIRED,
    REASON_SUCCEEDED,
    REASON_WAITING_FOR_EVALUATOR,
    REPLICA_EVALUATOR,
)
from tfop.api.timestamps import format_time
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job.model import RunPolicy, TFJobModel
from tfop.controller.plan.policies.cleanup import finish, keep_finished
from tfop.controller.plan.replicas.pod_slots import Slot, SlotState, SortedChildren
from tfop.controller.plan.replicas.removal import clean_up
from tfop.controller.plan.replicas.replica_status import describe_failure, record_replicas
from tfop.controller.plan.replicas.restart_ledger import RestartCount
from tfop.controller.plan.slots import ReplicaSlot, replica_ranges
from tfop.controller.plan.status import FALSE
from tfop.controller.plan.types import PlanContext

_FAILED = (SlotState.RETRYABLE, SlotState.PERMANENT, SlotState.TOLERATED, SlotState.EXHAUSTED)


def waiting_for_evaluators(draft: PlanDraft) -> bool:
    """Whether an earlier plan saw the training succeed and started the wait: from then on the training is over,
    whatever becomes of the pods that made it."""
    succeeded = draft.condition(CONDITION_SUCCEEDED)
    return succeeded is not None and succeeded.status == FALSE and succeeded.reason == REASON_WAITING_FOR_EVALUATOR


def finish_training(draft: PlanDraft, job: TFJobModel, context: PlanContext, children: SortedChildren,
                    counts: dict[str, RestartCount]) -> None:
    """The training succeeded (now or in an earlier plan): wait for the running evaluators, or succeed."""
    evaluators = [slot for slot in children.slots if slot.slot.replica_type == REPLICA_EVALUATOR]
    running = [slot for slot in evaluators if slot.state is SlotState.RUNNING]
    run_policy = job.spec.run_policy
    policy = run_policy.clean_pod_policy
    wait = _ongoing_wait(draft, run_policy, job.options.evaluator_grace, running)
    if wait is None:
        was_waiting = waiting_for_evaluators(draft)
        finish(draft, CONDITION_SUCCEEDED, REASON_SUCCEEDED, f"{draft.job_ref} successfully completed.")
        keep_finished(draft, run_policy, context, just_finished=True)
        record_replicas(draft, job.spec, children, counts, finishing=True)
        if was_waiting:
            _tell_unfinished(draft, evaluators)
        return
    started, until = wait
    starting = not waiting_for_evaluators(draft)
    waited = replica_ranges(slot.slot for slot in running)
    message = (f"{draft.job_ref}: the training succeeded; waiting up to {(until - started).total_seconds():g}s, "
               f"until {_clock(until)}, for {waited}'s final evaluation.")
    draft.set_condition(CONDITION_SUCCEEDED, true=False, reason=REASON_WAITING_FOR_EVALUATOR, message=message)
    draft.set_condition(CONDITION_RUNNING, true=True, reason=REASON_WAITING_FOR_EVALUATOR, message=message)
    draft.clear_condition(CONDITION_RESTARTING, reason=REASON_WAITING_FOR_EVALUATOR, message=message)
    # Meanwhile only what still runs goes (the PS). Pods that ended stay until the job finishes, whose final tally
    # counts them (All deletes them then): gone now, they would read as "0/3 succeeded" once the evaluators are done.
    waiting_policy = CLEAN_POD_POLICY_RUNNING if policy == CLEAN_POD_POLICY_ALL else policy
    clean_up(draft, context, waiting_policy, spare=_names_of(children, [slot.slot for slot in running]))
    record_replicas(draft, job.spec, children, counts, finishing=False)
    succeeded = sum(1 for slot in children.slots if slot.state is SlotState.SUCCEEDED)
    draft.status = replace(draft.status, replica_summary=f"{succeeded}/{len(children.slots)} succeeded, "
                                                         f"{len(running)} evaluating")
    if starting:  # told once, as the wait starts: no condition becomes True to announce it
        draft.event(EVENT_NORMAL, REASON_WAITING_FOR_EVALUATOR, message)
    draft.requeue((until - draft.now).total_seconds())


def evaluators_waited_for(draft: PlanDraft, job: TFJobModel, children: SortedChildren) -> frozenset[ReplicaSlot]:
    """The evaluators a success decided now (or earlier) waits for; none if it would succeed at once. They are
    spared by the success's settle (policies/success.py), which has nothing to add to their own, longer wait."""
    running = [slot for slot in children.slots
               if slot.slot.replica_type == REPLICA_EVALUATOR and slot.state is SlotState.RUNNING]
    if _ongoing_wait(draft, job.spec.run_policy, job.options.evaluator_grace, running) is None:
        return frozenset()
    return frozenset(slot.slot for slot in running)


def _ongoing_wait(draft: PlanDraft, run_policy: RunPolicy, grace: timedelta,
                  running: list[Slot]) -> tuple[datetime, datetime] | None:
    """The wait for `running` evaluators if it goes on now: None when there is none to wait for, nothing would
    delete them (cleanPodPolicy None), the grace is 0, it has run out, or the job is suspended."""
    if not running or run_policy.clean_pod_policy == CLEAN_POD_POLICY_NONE:
        return None
    wait = _wait(draft, run_policy, grace)
    if wait is None or draft.now >= wait[1] or run_policy.suspend:
        return None
    return wait


def _wait(draft: PlanDraft, run_policy: RunPolicy, grace: timedelta) -> tuple[datetime, datetime] | None:
    """When the wait started and when it ends: the training's success (the Succeeded condition's transition, at
    whole seconds as the status keeps it), and the grace after it, or activeDeadlineSeconds if sooner. None: no
    wait (grace 0)."""
    if grace <= timedelta(0):
        return None
    started = draft.now.replace(microsecond=0)
    if waiting_for_evaluators(draft):
        succeeded = draft.condition(CONDITION_SUCCEEDED)
        started = (succeeded.last_transition_time if succeeded is not None else None) or started
    until = started + grace
    deadline, job_started = run_policy.active_deadline_seconds, draft.status.start_time
    if deadline is not None and job_started is not None:
        until = min(until, job_started + timedelta(seconds=deadline))
    return started, until


def _tell_unfinished(draft: PlanDraft, evaluators: list[Slot]) -> None:
    """Warns of the evaluators whose final evaluation failed or was cut short; the job succeeds regardless."""
    for slot in evaluators:
        if slot.state in _FAILED and slot.pod is not None:
            draft.event(EVENT_WARNING, REASON_EVALUATOR_FAILED,
                        f"{draft.job_ref}: the final evaluation failed: {describe_failure(slot.pod)}. The job "
                        f"succeeded: its training did.")
        elif slot.state is SlotState.RUNNING:
            draft.event(EVENT_WARNING, REASON_EVALUATOR_GRACE_EXPIRED,
                        f"{draft.job_ref}: {slot.slot.replica_type} {slot.slot.index} was still evaluating when "
                        f"the wait for its final evaluation ended; it is cleaned up as cleanPodPolicy says.")


def _names_of(children: SortedChildren, slots: list[ReplicaSlot]) -> frozenset[str]:
    """The names of the evaluators' pods (or Jobs) and services, which the clean-up spares while they finish."""
    names = set()
    for slot in children.slots:
        if slot.slot in slots and slot.pod is not None:
            names.add(slot.pod.name)
    for wanted in slots:
        for child in (children.batch_jobs.get(wanted), children.services.get(wanted)):
            if child is not None:
                names.add(child.name)
    return frozenset(names - {""})


def _clock(moment: datetime) -> str:
    """A time as a user reads it in a message: 10:05:00 (UTC, as the apiserver's timestamps)."""
    return format_time(moment)[11:19]
