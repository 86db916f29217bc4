"""Playing kubelet for the tests: kwok runs pods, these helpers end them with exit codes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from tfop.kube.client import KubeClient
from tfop.kube.resource import PODS

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float = 30.0, message: str = "condition") -> T:
    """Poll until `check` returns something truthy; fail with `message` and the last value seen."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}; last value: {value!r}")
        time.sleep(0.1)
        value = check()
    return value


def terminated_status(exit_code: int, reason: str | None = None, restart_count: int = 0) -> dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"name": "tensorflow", "image": "tensorflow/tensorflow", "imageID": "", "ready": False,
            "restartCount": restart_count,
            "state": {"terminated": {"exitCode": exit_code, "reason": reason or ("Completed" if exit_code == 0
                                                                                  else "Error"),
                                     "startedAt": now, "finishedAt": now}}}


def exit_pod(client: KubeClient, namespace: str, name: str, exit_code: int, reason: str | None = None) -> None:
    """The tensorflow container exits with `exit_code` and is not restarted (restartPolicy Never)."""
    phase = "Succeeded" if exit_code == 0 else "Failed"
    client.patch_status(PODS, name, {"status": {"phase": phase, "containerStatuses": [
        terminated_status(exit_code, reason)]}}, namespace)


def restart_in_place(client: KubeClient, namespace: str, name: str, exit_code: int, restart_count: int) -> None:
    """What the kubelet reports after restarting a container in place (OnFailure/Always)."""
    last = terminated_status(exit_code)
    status = {"name": "tensorflow", "image": "tensorflow/tensorflow", "imageID": "", "ready": True,
              "restartCount": restart_count, "lastState": last["state"],
              "state": {"running": {"startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}}
    client.patch_status(PODS, name, {"status": {"phase": "Running", "containerStatuses": [status]}}, namespace)


def wait_for_count(fetch: Callable[[], Any], count: int, timeout: float = 30.0, message: str = "") -> Any:
    """Poll `fetch` until what it returns has exactly `count` entries; returns that value."""
    seen: list[Any] = []

    def check() -> bool:
        seen[:] = [fetch()]
        return len(seen[0]) == count

    wait_for(lambda: check() or None, timeout, f"{count} {message}".strip())
    return seen[0]
