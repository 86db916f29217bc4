"""The job's story in the operator's info log: one line per transition a plan announces, with job=ns/name."""

from __future__ import annotations

import structlog

from tfop.api.constants import (
    REASON_BACKOFF_LIMIT_EXCEEDED,
    REASON_CREATED,
    REASON_DEADLINE_EXCEEDED,
    REASON_FAILED,
    REASON_INVALID_SPEC,
    REASON_RESTARTING,
    REASON_RESUMED,
    REASON_RUNNING,
    REASON_SPEC_CORRECTED,
    REASON_SUCCEEDED,
    REASON_SUSPENDED,
    REASON_TTL_EXPIRED,
    REASON_WAITING_FOR_EVALUATOR,
)
from tfop.controller.plan.types import Plan
from tfop.kube.events import WARNING

log = structlog.get_logger("tfop.controller")

# What a job's lifecycle events are called in the operator's log (the event reason is on the line too). A Warning
# that is not here fails the job (TFJobFailed, BackoffLimitExceeded, DeadlineExceeded, InvalidSpec).
LIFECYCLE_LINES = {
    REASON_CREATED: "job created",
    REASON_RUNNING: "job running: every replica runs",
    REASON_SUSPENDED: "job suspended",
    REASON_RESUMED: "job resumed",
    REASON_SPEC_CORRECTED: "job spec corrected",
    REASON_WAITING_FOR_EVALUATOR: "job training succeeded: waiting for its evaluators' final evaluation",
    REASON_SUCCEEDED: "job succeeded",
    REASON_TTL_EXPIRED: "deleting finished job: its TTL has passed",
}


# The reasons a job's Failed condition takes; any other Warning (a pod's trouble, an exit code) is not the end.
FAILED_REASONS = frozenset({REASON_FAILED, REASON_INVALID_SPEC, REASON_BACKOFF_LIMIT_EXCEEDED,
                            REASON_DEADLINE_EXCEEDED})


def log_lifecycle(key: str, plan: Plan) -> None:
    """One info line per transition the plan announces, with job=ns/name, so `grep '"job": "ns/name"'` tells a
    job's story; restarts come with their replica, exit code and class rather than as prose."""
    for restart in plan.restarts:
        log.info("replica restarted" if restart.in_place else "replica restarting: recreating its pod", job=key,
                 replica_type=restart.replica_type, replica_index=restart.index, exit_code=restart.exit_code,
                 exit_class=restart.exit_class, restarts=restart.restarts,
                 **({"in_place": restart.in_place} if restart.in_place else {}))
    for event in plan.events:
        if event.reason == REASON_RESTARTING or event.reason.startswith(("SuccessfulCreate", "SuccessfulDelete")):
            continue
        line = LIFECYCLE_LINES.get(event.reason)
        if line is None and event.reason in FAILED_REASONS:
            line = "job failed"
        log.info(line or ("job warning" if event.type == WARNING else "job event"), job=key, reason=event.reason,
                 message=event.message)
