"""Playing kubelet on kwok's pods, for the tests and the bench: these end a pod's container with an exit code."""

from __future__ import annotations

import time
from typing import Any

from tfop.kube.client import KubeClient
from tfop.kube.resource import PODS


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


def finish_deletion(client: KubeClient, namespace: str, name: str, uid: str) -> None:
    """The kubelet's last word on a deleted pod once its containers stopped: the delete with grace 0 that removes
    it (only the pod with `uid`, never one made since under its name)."""
    client.delete(PODS, name, namespace, uid=uid, grace_period_seconds=0)
