"""A replica's batch/v1 Job (the Job backend) as the planner reads it: whether it is suspended, the failed pods
it counted, its own backoffLimit, and what the Job controller decided."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tfop.api.fields import integer, items, mapping, text
from tfop.controller.plan.observed.child import Child, child_fields
from tfop.objects import Object

JobResult = Literal["Complete", "Failed"]


@dataclass(frozen=True, slots=True)
class JobOutcome:
    result: JobResult
    reason: str = ""  # e.g. BackoffLimitExceeded, PodFailurePolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchJobView(Child):
    suspended: bool = False
    failed: int = 0  # status.failed: the failed pods the Job counted (not those its podFailurePolicy ignores)
    outcome: JobOutcome | None = None  # None while the Job controller has not decided
    backoff_limit: int | None = None  # spec.backoffLimit; None: not known (a cache without it)

    @classmethod
    def of(cls, batch_job: Object) -> BatchJobView:
        status = mapping(batch_job.get("status"))
        failed, spec = status.get("failed"), mapping(batch_job.get("spec"))
        return cls(**child_fields(batch_job), suspended=spec.get("suspend") is True,
                   failed=failed if isinstance(failed, int) and not isinstance(failed, bool) and failed > 0 else 0,
                   outcome=_outcome(status), backoff_limit=integer(spec.get("backoffLimit")))


def _outcome(status: Object) -> JobOutcome | None:
    """Complete or Failed once the Job controller has decided; FailureTarget, which it sets before Failed while
    the pods go, already counts as Failed."""
    for entry in items(status.get("conditions")):
        condition = mapping(entry)
        if condition.get("status") != "True":
            continue
        kind = condition.get("type")
        if kind == "Complete":
            return JobOutcome("Complete", text(condition.get("reason")) or "")
        if kind in ("Failed", "FailureTarget"):
            return JobOutcome("Failed", text(condition.get("reason")) or "")
    return None
