"""The progress a job's pods report (tfop/progress/), written into the status: one more observation of the pass.

The report endpoint keeps only each job's latest report and never writes to the apiserver; this rule puts it into
status.trainerStatus, which then goes out with the pass's other changes. A report replaces the stored one unless
the stored one is newer (an operator restarted with an empty store, a report delayed): times are whole seconds, so
two reports in one second compare by content. Nothing else of the status is touched, and the report's own fields
are all it holds.
"""

from __future__ import annotations

from dataclasses import replace

from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job_status import TrainerStatus


def record_progress(draft: PlanDraft, report: TrainerStatus | None) -> None:
    if report is None:
        return
    stored = draft.status.trainer_status
    if stored is not None and (stored.content() == report.content() or _newer(stored, report)):
        return
    draft.status = replace(draft.status, trainer_status=report)


def _newer(stored: TrainerStatus, report: TrainerStatus) -> bool:
    if stored.last_updated_time is None or report.last_updated_time is None:
        return False
    return stored.last_updated_time > report.last_updated_time
