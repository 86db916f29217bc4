"""Exit codes of the `tensorflow` container and what they mean for the job: the contract's classes
(tfop/api/exit_codes.py) read from a pod's status."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tfop.api.constants import DEFAULT_CONTAINER_NAME
from tfop.api.exit_codes import ExitClass as ExitClass
from tfop.api.exit_codes import classify_termination
from tfop.api.fields import integer, items, mapping, mapping_at, text
from tfop.api.timestamps import parse_time


@dataclass(frozen=True)
class Termination:
    """How a container last ended, as the kubelet reported it."""

    exit_code: int
    reason: str = ""  # e.g. OOMKilled, Error, Completed
    message: str = ""

    @property
    def exit_class(self) -> ExitClass:
        return classify_termination(self.exit_code, self.reason)

    def describe(self) -> str:
        """e.g. `exited with code 137 (OOMKilled)`."""
        return f"exited with code {self.exit_code}" + (f" ({self.reason})" if self.reason else "")


def container_termination(pod: object, container_name: str = DEFAULT_CONTAINER_NAME) -> Termination | None:
    """The container's current termination, or for a container the kubelet restarted in place its last one."""
    for status in items(mapping_at(pod, "status").get("containerStatuses")):
        if mapping(status).get("name") != container_name:
            continue
        for state_key in ("state", "lastState"):
            terminated = mapping_at(status, state_key, "terminated")
            exit_code = integer(terminated.get("exitCode"))
            if exit_code is not None:
                return Termination(exit_code, text(terminated.get("reason")) or "",
                                   text(terminated.get("message")) or "")
    return None


def finished_at(pod: object, container_name: str = DEFAULT_CONTAINER_NAME) -> str:
    """When the termination `container_termination` reads ended, as the kubelet wrote it; "" if it does not say."""
    for status in items(mapping_at(pod, "status").get("containerStatuses")):
        if mapping(status).get("name") == container_name:
            for state_key in ("state", "lastState"):
                finished = text(mapping_at(status, state_key, "terminated").get("finishedAt"))
                if finished:
                    return finished
    return ""


def ended_at(pod: object, container_name: str = DEFAULT_CONTAINER_NAME) -> datetime | None:
    """When the container's current run ended (its kubelet's clock, to the second), or None if it has not."""
    for status in items(mapping_at(pod, "status").get("containerStatuses")):
        if mapping(status).get("name") == container_name:
            return parse_time(mapping_at(status, "state", "terminated").get("finishedAt"))
    return None


def exit_class_name(pod: object) -> str:
    """For metrics: how the pod's tensorflow container last ended, or `unknown` (evicted, node lost)."""
    termination = container_termination(pod)
    return termination.exit_class.value.lower() if termination is not None else "unknown"


def latest_restarted(pods: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Of `pods`, the one whose tensorflow container was restarted in place last (None: none was)."""
    def finished(pod: dict[str, Any]) -> str:
        for status in items(mapping_at(pod, "status").get("containerStatuses")):
            if mapping(status).get("name") == DEFAULT_CONTAINER_NAME:
                return text(mapping_at(status, "lastState", "terminated").get("finishedAt")) or ""
        return ""

    restarted = [pod for pod in pods if finished(pod)]
    return max(restarted, key=finished) if restarted else None
