"""The job mix: kwok TFJobs whose outcome is decided in advance by how the harness will end them.

kwok runs a pod until something writes its status, so each job's end is a step the harness takes (the deciding
replica exits 0, a worker exits 1, a replica is killed under backoffLimit 0), and what the job must end as follows
from that step and the documented rules (docs/tfjob/reference.md#restart-policies-and-exit-codes). Faults that hit a
job change what it must end as (a permanent exit fails it, a delete removes it) and how many restarts it must show.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

SUCCEEDED = ("Succeeded", "TFJobSucceeded")
FAILED = ("Failed", "TFJobFailed")
BACKOFF_EXCEEDED = ("Failed", "BackoffLimitExceeded")
DELETED = ("Deleted", "")

END_SUCCESS = "success"  # the deciding replica (Chief, else Worker 0) exits 0
END_PERMANENT = "permanent"  # a Worker exits 1
END_BACKOFF = "backoff"  # a Worker is killed (137) under backoffLimit 0
RESTART_LIMIT = 1000  # far above what a run's faults restart, so only END_BACKOFF jobs fail by it


@dataclass
class JobPlan:
    """One job: its shape, how it will end, and what it must show for it."""

    name: str
    replicas: dict[str, int]  # replica type -> count
    restart_policy: str  # ExitCode, OnFailure or Never, for every replica type
    end: str
    expected: tuple[str, str]  # (condition or Deleted, reason)
    restarts: dict[str, int] = field(default_factory=dict)  # the restarts faults caused, by replica type
    uid: str = ""
    ending: bool = False  # the step that ends it (or a permanent fault) was taken
    deleted: bool = False
    manifest: dict[str, Any] | None = None  # a real TensorFlow job's whole TFJob (hack/chaos/real_jobs.py)

    @property
    def real(self) -> bool:
        """A job of real TensorFlow on the real nodes: it ends by itself, and the faults aimed at kwok jobs leave it
        alone."""
        return self.manifest is not None

    @property
    def deciding_type(self) -> str:
        return "Chief" if "Chief" in self.replicas else "Worker"

    def restartable_tasks(self) -> list[tuple[str, int]]:
        """The tasks a retryable fault may hit: every one but the deciding replica 0, whose exit ends the job
        (ending it with an in-place restart count would hide the restarts it had), and none under Never, which
        restarts nothing, nor in a job that fails at its first restart."""
        if self.restart_policy == "Never" or self.end == END_BACKOFF or self.real:
            return []
        return [(kind, index) for kind, count in sorted(self.replicas.items()) for index in range(count)
                if (kind, index) != (self.deciding_type, 0)]

    def body(self, namespace: str) -> dict[str, Any]:
        if self.manifest is not None:
            return {**self.manifest, "metadata": {**self.manifest["metadata"], "namespace": namespace}}
        container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0"}
        specs = {kind: {"replicas": count, "restartPolicy": self.restart_policy,
                        "template": {"spec": {"containers": [container]}}}
                 for kind, count in self.replicas.items()}
        run_policy = {"backoffLimit": 0 if self.end == END_BACKOFF else RESTART_LIMIT}
        return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "metadata": {"name": self.name, "namespace": namespace},
                "spec": {"runPolicy": run_policy, "tfReplicaSpecs": specs}}


# (replica counts, restart policy, how it ends, its outcome): the shapes users run, each with a known end.
SHAPES: tuple[tuple[dict[str, int], str, str, tuple[str, str]], ...] = (
    ({"Chief": 1, "Worker": 2}, "ExitCode", END_SUCCESS, SUCCEEDED),
    ({"Chief": 1, "PS": 1, "Worker": 2}, "ExitCode", END_SUCCESS, SUCCEEDED),
    ({"Worker": 3}, "ExitCode", END_SUCCESS, SUCCEEDED),
    ({"Worker": 2}, "OnFailure", END_SUCCESS, SUCCEEDED),
    ({"Chief": 1, "Worker": 1}, "Never", END_SUCCESS, SUCCEEDED),
    ({"PS": 1, "Worker": 2}, "ExitCode", END_PERMANENT, FAILED),
    ({"Worker": 2}, "ExitCode", END_BACKOFF, BACKOFF_EXCEEDED),
)


def new_job(rng: random.Random, serial: int) -> JobPlan:
    replicas, policy, end, expected = rng.choice(SHAPES)
    return JobPlan(f"chaos-{serial:04d}", dict(replicas), policy, end, expected)
