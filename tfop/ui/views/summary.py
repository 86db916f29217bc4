"""A job's summary, above its replica table: its replicas by phase, its last failures, and its training progress
(status.trainerStatus, docs/tfjob/progress.md) with a small chart of each metric's values as this page saw them
change. A job of 200 workers is read from here, not from 200 rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tfop.api.constants import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from tfop.api.exit_codes import classify_termination
from tfop.api.timestamps import parse_time
from tfop.objects import Object
from tfop.ui.views.job_page import RecreatedExit, main_container_status, replica_order

MAX_FAILURES = 5
# Metrics that count where the training is; shown as progress, not charted.
PLACE_METRICS = ("currentEpoch", "totalEpochs", "currentStep", "totalSteps")
MAX_CHARTS = 3
CHART_WIDTH = 220
CHART_HEIGHT = 44


@dataclass(frozen=True)
class PhaseCounts:
    replica_type: str
    phases: tuple[tuple[str, int], ...]  # (phase, pods), in the order phases come in a pod's life


@dataclass(frozen=True)
class Failure:
    replica: str  # worker-3
    pod: str  # "" for an exit tfop kept in the status after recreating the pod
    code: int
    reason: str
    exit_class: str
    finished: datetime | None


@dataclass(frozen=True)
class Chart:
    name: str
    last: str  # its last value, as reported
    low: float
    high: float
    points: str  # an SVG polyline's points, oldest first
    count: int


@dataclass(frozen=True)
class Progress:
    percent: int | None
    eta: datetime | None  # estimatedCompletionTime
    epoch: str  # "4 of 10", or ""
    step: str
    updated: datetime | None
    reported_by: str
    metrics: tuple[tuple[str, str], ...]  # the others, by name as reported


@dataclass(frozen=True)
class Summary:
    phases: tuple[PhaseCounts, ...]
    failures: tuple[Failure, ...]  # newest first
    progress: Progress | None
    charts: tuple[Chart, ...] = ()


PHASE_ORDER = ("Pending", "Running", "Terminating", "Succeeded", "Failed", "Unknown")


def _pod_phase(pod: Object) -> str:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return str((pod.get("status") or {}).get("phase") or "Unknown")


def phase_counts(pods: Iterable[Object]) -> tuple[PhaseCounts, ...]:
    by_type: dict[str, dict[str, int]] = {}
    for pod in sorted(pods, key=replica_order):
        replica_type = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_REPLICA_TYPE, "?")
        phases = by_type.setdefault(replica_type, {})
        phase = _pod_phase(pod)
        phases[phase] = phases.get(phase, 0) + 1
    return tuple(PhaseCounts(replica_type, tuple(sorted(phases.items(), key=lambda item: (
        PHASE_ORDER.index(item[0]) if item[0] in PHASE_ORDER else len(PHASE_ORDER), item[0]))))
        for replica_type, phases in by_type.items())


def _replica(pod: Object) -> str:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return f"{labels.get(LABEL_REPLICA_TYPE, '?')}-{labels.get(LABEL_REPLICA_INDEX, '?')}".lower()


def last_failures(pods: Iterable[Object], recreated: Mapping[tuple[str, str], RecreatedExit]) -> tuple[Failure, ...]:
    """The MAX_FAILURES latest exits that were not 0, of the pods seen (earlier ones included) and of those tfop
    recreated (the status keeps the last exit per replica); one exit told twice is told once."""
    found: dict[tuple[str, datetime | None, int], Failure] = {}
    for pod in pods:
        status = main_container_status(pod)
        for key in ("lastState", "state"):
            terminated = (status.get(key) or {}).get("terminated")
            if isinstance(terminated, dict) and isinstance(terminated.get("exitCode"), int) and terminated["exitCode"]:
                code, reason = int(terminated["exitCode"]), str(terminated.get("reason", ""))
                finished = parse_time(terminated.get("finishedAt"))
                failure = Failure(_replica(pod), str((pod.get("metadata") or {}).get("name", "")), code, reason,
                                  classify_termination(code, reason).value, finished)
                found[(failure.replica, finished, code)] = failure
    for kept in recreated.values():
        replica = f"{kept.replica_type}-{kept.index}"
        if kept.code and (replica, kept.finished, kept.code) not in found:
            found[(replica, kept.finished, kept.code)] = Failure(
                replica, "", kept.code, kept.reason, classify_termination(kept.code, kept.reason).value, kept.finished)
    ordered = sorted(found.values(), key=lambda f: (f.finished is not None, f.finished or datetime.min, f.replica),
                     reverse=True)
    return tuple(ordered[:MAX_FAILURES])


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _of(current: object, total: object) -> str:
    now, whole = _int(current), _int(total)
    if now is None:
        return ""
    return f"{now} of {whole}" if whole is not None else str(now)


def progress(job: Object) -> Progress | None:
    """What the job's pods last reported (trainerStatus), or None when they never did."""
    reported = (job.get("status") or {}).get("trainerStatus")
    if not isinstance(reported, dict):
        return None
    metrics = tuple((str(m.get("name")), str(m.get("value"))) for m in reported.get("metrics") or []
                    if isinstance(m, dict) and m.get("name") not in PLACE_METRICS)
    percent = _int(reported.get("progressPercentage"))
    return Progress(percent if percent is None else max(0, min(100, percent)),
                    parse_time(reported.get("estimatedCompletionTime")),
                    _of(reported.get("currentEpoch"), reported.get("totalEpochs")),
                    _of(reported.get("currentStep"), reported.get("totalSteps")),
                    parse_time(reported.get("lastUpdatedTime")), str(reported.get("reportedBy") or ""), metrics)


def metric_values(job: Object) -> tuple[datetime, dict[str, float]] | None:
    """The moment and numeric metrics of the job's last report, to keep as history (cache.py)."""
    reported = (job.get("status") or {}).get("trainerStatus")
    moment = parse_time(reported.get("lastUpdatedTime")) if isinstance(reported, dict) else None
    if moment is None or not isinstance(reported, dict):
        return None
    values = {}
    for metric in reported.get("metrics") or []:
        if isinstance(metric, dict) and metric.get("name") not in PLACE_METRICS:
            try:
                values[str(metric.get("name"))] = float(str(metric.get("value")))
            except ValueError:
                continue
    return moment, values


def charts(history: Sequence[tuple[datetime, Mapping[str, float]]], last: Sequence[tuple[str, str]]) -> tuple[
        Chart, ...]:
    """A line per metric (the first MAX_CHARTS reported, loss first) over the reports seen, scaled to its own
    range; a metric with fewer than two values has no line to draw."""
    names = sorted({name for _, values in history for name in values}, key=lambda name: (name != "loss", name))
    latest = dict(last)
    drawn = []
    for name in names:
        series = [(moment, values[name]) for moment, values in history if name in values]
        if len(series) < 2:
            continue
        first, final = series[0][0], series[-1][0]
        span = (final - first).total_seconds() or 1.0
        low, high = min(value for _, value in series), max(value for _, value in series)
        height = (high - low) or 1.0
        points = " ".join(f"{(moment - first).total_seconds() / span * CHART_WIDTH:.1f},"
                          f"{CHART_HEIGHT - (value - low) / height * CHART_HEIGHT:.1f}" for moment, value in series)
        drawn.append(Chart(name, latest.get(name, f"{series[-1][1]:g}"), low, high, points, len(series)))
    return tuple(drawn[:MAX_CHARTS])


def summary(job: Object, pods: Sequence[Object], earlier: Sequence[Object],
            recreated: Mapping[tuple[str, str], RecreatedExit],
            history: Sequence[tuple[datetime, Mapping[str, float]]] = ()) -> Summary:
    told = progress(job)
    return Summary(phase_counts(pods), last_failures([*earlier, *pods], recreated), told,
                   charts(history, told.metrics if told else ()))
