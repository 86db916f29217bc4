"""When the job last saved a checkpoint: read from its pods' progress reports into status.lastCheckpointTime, and
written on its live pods as volcano.sh/last-checkpoint-time, for a scheduler that picks as victims the pods that
lose the least work (docs/tfjob/disruptions.md#say-when-the-last-checkpoint-was).

The program says it as the report's metric lastCheckpointTime (an RFC 3339 time or seconds since 1970), which the
Kubeflow SDK's reporter carries as it carries any metric. The time is the pod's clock: one later than tfop's receipt
of the report is taken as that receipt, so a clock ahead cannot make the job look freshly saved. The status's time
only moves forward: a report without the metric keeps it.

The annotation follows the status as stored, never one this pass may still hold back, so a pod never says more than
the status does. It is patched only where it differs, and at most once per ANNOTATION_STEP seconds of checkpoint
time per pod: a job that saves every few seconds costs each pod one patch per 30 s rather than one per save, and
the latest save is written once it is ANNOTATION_STEP old with none newer (the pass is requeued for it). A new pod
gets it in the pass that first sees it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from tfop.api.constants import ANNOTATION_LAST_CHECKPOINT_TIME, METRIC_LAST_CHECKPOINT_TIME
from tfop.api.timestamps import format_time, parse_moment, parse_time
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.frozen import replace
from tfop.controller.plan.job_status import TrainerStatus
from tfop.controller.plan.observed.pod import PodView
from tfop.controller.plan.types import PodAnnotation

ANNOTATION_STEP = 30.0  # seconds of checkpoint time per patch of a pod, at most


def reported_checkpoint(report: TrainerStatus) -> datetime | None:
    """The checkpoint time a report names, no later than tfop received it; None when it names none."""
    value = next((metric.value for metric in report.metrics or () if metric.name == METRIC_LAST_CHECKPOINT_TIME), None)
    moment = None if value is None else parse_moment(value)
    if moment is None or report.last_updated_time is None:
        return moment
    return min(moment, report.last_updated_time)


def record_checkpoint(draft: PlanDraft, report: TrainerStatus | None) -> None:
    reported = None if report is None else reported_checkpoint(report)
    stored = draft.status.last_checkpoint_time
    if reported is not None and (stored is None or reported > stored):
        draft.status = replace(draft.status, last_checkpoint_time=reported)


def annotate_checkpoint(draft: PlanDraft, pods: Iterable[PodView]) -> None:
    """The live pods whose annotation is to say the stored checkpoint time now; a requeue for those it is not yet
    time to patch."""
    saved = draft.previous.last_checkpoint_time
    if saved is None:
        return
    value = format_time(saved)
    age = (draft.now - saved).total_seconds()
    for pod in pods:
        written = pod.annotations.get(ANNOTATION_LAST_CHECKPOINT_TIME)
        if pod.terminating or pod.ended or written == value:
            continue
        before = parse_time(written)
        if before is None or before > saved or (saved - before).total_seconds() >= ANNOTATION_STEP \
                or age >= ANNOTATION_STEP:
            draft.annotate.append(PodAnnotation(pod.name, pod.uid, ANNOTATION_LAST_CHECKPOINT_TIME, value))
        else:
            draft.requeue(ANNOTATION_STEP - age)
