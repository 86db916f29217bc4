"""The training examples, applied as a user applies them, train for real on the local cluster's real node: every
replica reads the TF_CONFIG tfop wrote, joins the same TensorFlow cluster (found through the headless Services'
DNS names), the chief trains its steps and the TFJob Succeeds. tfop runs as a process on the host."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, job_pods, wait_for_condition

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
JOINED = re.compile(r"tfop-example: task=(\w+):(\d+) workers=(\d+) chief=(\d+) ps=(\d+)")


@pytest.mark.parametrize(("example", "tasks"), [
    ("mwms.yaml", {"chief:0", "worker:0", "worker:1"}),
    ("ps-strategy.yaml", {"chief:0", "worker:0", "worker:1", "ps:0"}),
])
def test_example_trains_to_succeeded_with_every_replica_in_one_cluster(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, example: str, tasks: set[str]) -> None:
    manifest: dict[str, Any] = yaml.safe_load((EXAMPLES / example).read_text())
    # Keep every pod once the job is done, so the servers' logs (PS, workers) can be read afterwards; the example
    # itself cleans them up (cleanPodPolicy Running).
    manifest["spec"].setdefault("runPolicy", {})["cleanPodPolicy"] = "None"
    name = manifest["metadata"]["name"]
    apply(real_node, namespace, manifest)
    job = wait_for_condition(real_node, namespace, name, {"Failed", "Succeeded"}, timeout=600)

    logs = {f"{p['metadata']['labels']['training.kubeflow.org/replica-type']}:"
            f"{p['metadata']['labels']['training.kubeflow.org/replica-index']}":
            real_node.kubectl("logs", "-n", namespace, p["metadata"]["name"], check=False).stdout
            for p in job_pods(real_node, namespace, name)}
    true = {c["type"] for c in job["status"]["conditions"] if c["status"] == "True"}
    assert "Succeeded" in true, f"{job['status']}\n" + "\n".join(f"--- {t}\n{text[-2000:]}" for t, text in
                                                                  logs.items())
    joined = {task: JOINED.search(text) for task, text in logs.items()}
    assert set(joined) == tasks
    for task, match in joined.items():
        assert match, f"{task} never said which cluster it joined:\n{logs[task][-2000:]}"
        assert f"{match[1]}:{match[2]}" == task  # each replica is the task tfop told it it is
    # ...and all of them joined one cluster of the same shape.
    assert len({m.groups()[2:] for m in joined.values() if m}) == 1
    assert re.search(r"step \d+ loss \d", logs["chief:0"]), logs["chief:0"][-2000:]
