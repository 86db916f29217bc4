"""The chaos soak's job mix (hack/chaos/workload.py, real_jobs.py): what each job's end and faults may touch."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from chaos.real_jobs import REAL_EXAMPLES, real_job
from chaos.workload import END_BACKOFF, END_PERMANENT, RESTART_LIMIT, SHAPES, SUCCEEDED, JobPlan


@pytest.mark.parametrize(("replicas", "policy", "end", "restartable"), [
    ({"Chief": 1, "Worker": 2}, "ExitCode", "success", [("Worker", 0), ("Worker", 1)]),
    ({"Worker": 3}, "ExitCode", "success", [("Worker", 1), ("Worker", 2)]),  # Worker 0 decides: never hit
    ({"PS": 1, "Worker": 2}, "ExitCode", END_PERMANENT, [("PS", 0), ("Worker", 1)]),
    ({"Chief": 1, "Worker": 1}, "Never", "success", []),  # Never restarts nothing
    ({"Worker": 2}, "ExitCode", END_BACKOFF, []),  # its first restart fails it
])
def test_restartable_tasks(replicas: dict[str, int], policy: str, end: str,
                           restartable: list[tuple[str, int]]) -> None:
    assert JobPlan("j", replicas, policy, end, SUCCEEDED).restartable_tasks() == restartable


@pytest.mark.parametrize(("replicas", "policy", "end", "expected"), SHAPES)
def test_each_shape_is_a_valid_tfjob_with_its_backoff_limit(replicas: dict[str, int], policy: str, end: str,
                                                            expected: tuple[str, str]) -> None:
    body = JobPlan("j", replicas, policy, end, expected).body("ns")
    assert body["metadata"] == {"name": "j", "namespace": "ns"}
    assert body["spec"]["runPolicy"]["backoffLimit"] == (0 if end == END_BACKOFF else RESTART_LIMIT)
    assert {kind: spec["replicas"] for kind, spec in body["spec"]["tfReplicaSpecs"].items()} == replicas
    assert {spec["restartPolicy"] for spec in body["spec"]["tfReplicaSpecs"].values()} == {policy}


def test_real_jobs_are_the_examples_renamed_never_hit_by_kwok_faults(tmp_path: Path) -> None:
    rng = random.Random(1)
    plans = [real_job(rng, serial, tmp_path) for serial in range(12)]
    assert {plan.name for plan in plans} == {f"chaos-tf-{serial:04d}" for serial in range(12)}
    for plan in plans:
        body = plan.body("ns")
        assert plan.real and plan.expected == SUCCEEDED and not plan.restartable_tasks()
        assert body["metadata"]["namespace"] == "ns" and body["spec"]["runPolicy"]["backoffLimit"] == RESTART_LIMIT
        assert body["metadata"]["annotations"]["tfop.kubeflow.org/restart-scope"] in REAL_EXAMPLES.values()
        assert all(spec["template"]["spec"]["containers"][0]["image"].startswith("localhost/tfop/tensorflow:")
                   for spec in body["spec"]["tfReplicaSpecs"].values())


def test_the_mwms_job_checkpoints_in_the_shared_directory_and_has_an_evaluator(tmp_path: Path) -> None:
    rng = random.Random(1)
    plans = [real_job(rng, serial, tmp_path) for serial in range(12)]
    mwms = [plan for plan in plans if "Evaluator" in plan.replicas]
    ps = [plan for plan in plans if "PS" in plan.replicas]
    assert mwms and ps and len(mwms) + len(ps) == len(plans)
    for plan in mwms:
        body = plan.body("ns")
        assert plan.replicas == {"Chief": 1, "Worker": 2, "Evaluator": 1}
        assert body["metadata"]["annotations"]["tfop.kubeflow.org/restart-scope"] == "Job"
        assert (tmp_path / plan.name).is_dir()
        for spec in body["spec"]["tfReplicaSpecs"].values():
            pod = spec["template"]["spec"]
            [container] = pod["containers"]
            assert pod["volumes"] == [{"name": "shared", "hostPath": {"path": str(tmp_path), "type": "Directory"}}]
            assert container["volumeMounts"] == [{"name": "shared", "mountPath": "/shared"}]
            assert {"name": "CHECKPOINT_DIR", "value": f"/shared/{plan.name}"} in container["env"]
    for plan in ps:
        assert plan.body("ns")["metadata"]["annotations"]["tfop.kubeflow.org/restart-scope"] == "Replica"
