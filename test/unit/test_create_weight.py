"""A job's creates weigh in the creator pool by its size (tfop/controller/apply/child_writes.py): every pod lists
every replica in TF_CONFIG, so a big job's pod costs the apiserver many small jobs' pods."""

from __future__ import annotations

import pytest

from tfop.controller.apply.child_writes import create_weight
from tfop.kube.fair_pool import RoundRobin


def job(**replicas: int) -> dict[str, object]:
    return {"metadata": {"name": "j", "namespace": "ns"},
            "spec": {"tfReplicaSpecs": {kind: {"replicas": count} for kind, count in replicas.items()}}}


@pytest.mark.parametrize(("replicas", "weight"), [
    ({"Chief": 1, "Worker": 4, "PS": 2}, 1),  # the bench's small job
    ({"Worker": 249}, 1),
    ({"Worker": 248, "PS": 2}, 2),  # 250 replicas
    ({"Chief": 1, "Worker": 1995, "PS": 4}, 9),  # the fairness scenario's big job
    ({"Worker": 5000}, 21),  # the most the CRD admits
])
def test_weight_grows_with_the_replicas(replicas: dict[str, int], weight: int) -> None:
    assert create_weight(job(**replicas)) == weight


def test_beside_small_jobs_the_big_job_holds_one_of_sixteen_threads() -> None:
    queue: RoundRobin[str, str] = RoundRobin(16)
    big = create_weight(job(Chief=1, Worker=1995, PS=4))
    for index in range(20):
        queue.append("big", f"big-{index}", big)
    queue.append("small", "small-0", create_weight(job(Chief=1, Worker=4, PS=2)))
    assert queue.share("big") == 1 and queue.share("small") == 8
