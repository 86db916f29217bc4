"""Telling a job whose TensorBoard cannot be made why (plan/job/tensorboard.py found the problem): its TensorBoard
condition, False with the reason while the problem lasts, and a Warning event when it starts or changes. The
condition is removed once the job's ask can be met (or is withdrawn), so a job with a TensorBoard, or none asked
for, has no such condition and the job's state never depends on it."""

from __future__ import annotations

from tfop.api.constants import CONDITION_TENSORBOARD, EVENT_WARNING
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobModel

REASON_LOG_DIR_NOT_SHARED = "TensorBoardLogDirNotShared"


def tell_tensorboard(draft: PlanDraft, job: TFJobModel) -> None:
    ask = job.options.tensorboard
    if ask is None or not ask.problem:
        draft.drop_condition(CONDITION_TENSORBOARD)
        return
    message = f"No TensorBoard is made for the log directory {ask.log_dir}: {ask.problem}."
    if draft.message_of(CONDITION_TENSORBOARD) != message:
        draft.event(EVENT_WARNING, REASON_LOG_DIR_NOT_SHARED, message)
    draft.set_condition(CONDITION_TENSORBOARD, true=False, reason=REASON_LOG_DIR_NOT_SHARED, message=message)
