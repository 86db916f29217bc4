"""The latest progress report of each job (tfop/progress/ receives them), where the planner finds it.

The endpoint's request threads put reports here and enqueue the job; a reconcile hands the planner the job's latest
(PlanContext.progress), and the status goes out with the pass's other changes: the request threads never write to
the apiserver, however often pods report. Only the latest report of a job is kept, for at most `max_jobs` jobs (a
job past that drops the one reported to longest ago; its status keeps what was written), and a deleted job's goes
with it.

For jobs that opt in to the step-rate metric, the steps per second between a job's last two reports that name a
step are kept too (None until two do, or after the step went back: a restart from a checkpoint).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from tfop.controller.plan.job_status import TrainerStatus


@dataclass(frozen=True)
class Report:
    status: TrainerStatus
    received: float  # the monotonic clock when it came
    metered: bool  # whether the job opted in to the step-rate metric
    steps_per_second: float | None = None


def steps_per_second(previous: Report | None, status: TrainerStatus, received: float) -> float | None:
    """The rate between the previous report and this one, or None when either lacks a step, no time passed, or
    the step went back."""
    if previous is None or previous.status.current_step is None or status.current_step is None:
        return None
    elapsed = received - previous.received
    moved = status.current_step - previous.status.current_step
    if elapsed <= 0 or moved < 0:
        return None
    return moved / elapsed


class ProgressReports:
    def __init__(self, max_jobs: int = 10_000) -> None:
        self._max_jobs = max_jobs
        self._reports: OrderedDict[str, Report] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, key: str, status: TrainerStatus, received: float, *, metered: bool) -> None:
        with self._lock:
            previous = self._reports.pop(key, None)
            rate = steps_per_second(previous, status, received) if metered else None
            self._reports[key] = Report(status, received, metered, rate)
            while len(self._reports) > self._max_jobs:
                self._reports.popitem(last=False)

    def latest(self, key: str) -> TrainerStatus | None:
        with self._lock:
            report = self._reports.get(key)
        return None if report is None else report.status

    def forget(self, key: str) -> None:
        with self._lock:
            self._reports.pop(key, None)

    def metered(self) -> dict[str, Report]:
        """The reports of the jobs that opted in to the metric, by job key."""
        with self._lock:
            return {key: report for key, report in self._reports.items() if report.metered}
