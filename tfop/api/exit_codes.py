"""The TFJob contract on the `tensorflow` container's exit code, since its first version: 0 succeeded, 1-127 is a
permanent error (a bug, a bad argument), 128-255 is retryable (killed by a signal: OOM killer, preemption, node
shutdown). The planner decides restarts by it; the page shows it."""

from __future__ import annotations

import enum
from typing import Final, Literal

OOM_KILLED = "OOMKilled"  # the terminated reason the kubelet gives a container the OOM killer hit


class ExitClass(enum.Enum):
    SUCCEEDED = "Succeeded"
    PERMANENT = "Permanent"
    RETRYABLE = "Retryable"


# How a restart is counted (the metrics' exit_class label, a plan's restarts): its exit's class in lower case, or
# unknown where no container exit was seen (evicted, node lost).
ExitClassLabel = Literal["retryable", "permanent", "succeeded", "unknown"]
EXIT_CLASS_LABELS: Final[tuple[ExitClassLabel, ...]] = ("retryable", "permanent", "succeeded", "unknown")
_LABELS: Final[dict[ExitClass, ExitClassLabel]] = {
    ExitClass.RETRYABLE: "retryable", ExitClass.PERMANENT: "permanent", ExitClass.SUCCEEDED: "succeeded"}


def exit_class_label(exit_class: ExitClass | None) -> ExitClassLabel:
    return _LABELS[exit_class] if exit_class is not None else "unknown"


def classify_exit_code(code: int) -> ExitClass:
    """Codes outside 0-255 cannot come from a process; treat them as permanent rather than retry forever."""
    if code == 0:
        return ExitClass.SUCCEEDED
    if 128 <= code <= 255:
        return ExitClass.RETRYABLE
    return ExitClass.PERMANENT


def classify_termination(exit_code: int, reason: str) -> ExitClass:
    # The kernel's OOM killer may kill a child of the main process, which can still exit 0; the kubelet reports
    # the container OOMKilled all the same. A run cut short by memory is retryable, like a 137.
    if reason == OOM_KILLED:
        return ExitClass.RETRYABLE
    return classify_exit_code(exit_code)
