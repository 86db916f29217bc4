"""When a job fails from its replicas' failures: a replica that failed for good (an exit its restartPolicy does
not retry, or its Job out of restarts), or more restarts in all than runPolicy.backoffLimit."""

from __future__ import annotations

from collections.abc import Callable

from tfop.api.constants import CONDITION_FAILED, REASON_BACKOFF_LIMIT_EXCEEDED, REASON_FAILED
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import RunPolicy
from tfop.controller.plan.policies.cleanup import finish
from tfop.controller.plan.replicas.pod_slots import Slot, SlotState
from tfop.controller.plan.replicas.replica_status import describe_failure
from tfop.controller.plan.status import listing


def fail_for_replicas(draft: PlanDraft, run_policy: RunPolicy, slots: list[Slot], restarts: int, *,
                      has_failed: Callable[[Slot], bool]) -> bool:
    """Finishes the job as Failed if a replica failed for good or the replicas restarted too often; whether it
    did. `restarts`: the job's count against backoffLimit; `has_failed`: whether a slot in a final state counts
    as failed (the backend's rule)."""
    backoff_limit = run_policy.backoff_limit
    # A Job out of restarts while the job has no limit (any more: the spec was edited) fails the job as it is.
    final = (SlotState.PERMANENT,) if backoff_limit is not None else (SlotState.PERMANENT, SlotState.EXHAUSTED)
    failed = [slot for slot in slots if slot.state in final and has_failed(slot)]
    if failed:
        listed = listing([describe_failure(slot.pod) if slot.pod is not None else
                          f"{slot.slot.replica_type} {slot.slot.index}, whose Job failed" for slot in failed])
        finish(draft, CONDITION_FAILED, REASON_FAILED, f"{draft.job_ref} has failed because {listed}.")
        return True
    if backoff_limit is None:
        return False
    if any(slot.state is SlotState.EXHAUSTED for slot in slots):
        restarts = max(restarts, backoff_limit + 1)  # a Job failed for the limit, which its count is bound to
    if restarts > backoff_limit:
        finish(draft, CONDITION_FAILED, REASON_BACKOFF_LIMIT_EXCEEDED,
               f"{draft.job_ref} has failed because its replicas restarted {restarts} times, more than its "
               f"backoffLimit of {backoff_limit}.")
        return True
    return False
