"""The training examples, applied as a user applies them, train for real on the local cluster's real node: every
replica reads the TF_CONFIG tfop wrote, joins the same TensorFlow cluster (found through the headless Services'
DNS names), the chief trains its steps and the TFJob Succeeds. tfop runs as a process on the host, with the
controller config `make run` gives it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.operator_config import tensorflow_image
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, dns_denials, job_pods, story, wait_for_condition
from tfop import yamlio

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
JOINED = re.compile(r"tfop-example: task=(\w+):(\d+) workers=(\d+) chief=(\d+) ps=(\d+)")


def example(name: str) -> dict[str, Any]:
    manifest: dict[str, Any] = yamlio.load((EXAMPLES / name).read_text())
    # Keep every pod once the job is done, so the servers' logs (PS, workers) can be read afterwards; the example
    # itself cleans them up (cleanPodPolicy Running).
    manifest["spec"].setdefault("runPolicy", {})["cleanPodPolicy"] = "None"
    return manifest


def run_to_succeeded(cluster: LocalCluster, operator: OperatorProcess, namespace: str,
                     manifest: dict[str, Any]) -> dict[str, str]:
    """Applies the TFJob and waits for it to Succeed; returns each replica's log by task ("worker:1")."""
    name = manifest["metadata"]["name"]
    apply(cluster, namespace, manifest)
    job = wait_for_condition(cluster, namespace, name, {"Failed", "Succeeded"}, timeout=600)
    logs = {f"{p['metadata']['labels']['training.kubeflow.org/replica-type']}:"
            f"{p['metadata']['labels']['training.kubeflow.org/replica-index']}":
            cluster.kubectl("logs", "-n", namespace, p["metadata"]["name"], check=False).stdout
            for p in job_pods(cluster, namespace, name)}
    true = {c["type"] for c in job["status"]["conditions"] if c["status"] == "True"}
    replica_logs = "\n".join(f"--- {task}\n{text[-2000:]}" for task, text in logs.items())
    assert "Succeeded" in true, (f"{job['status']}\n{replica_logs}\n--- events\n{story(cluster, namespace)}\n"
                                 f"--- tfop\n{operator.job_story(namespace, name)}\n"
                                 f"--- DNS denials\n{dns_denials(cluster, namespace)}")
    print(f"--- {name}: chief:0\n{logs['chief:0'][-1500:]}")  # shown by pytest -rP: what the training said
    return logs


@pytest.mark.parametrize(("example_file", "tasks"), [
    ("mwms.yaml", {"chief:0", "worker:0", "worker:1"}),
    ("ps-strategy.yaml", {"chief:0", "worker:0", "worker:1", "ps:0"}),
    ("keras_mwms.yaml", {"chief:0", "worker:0", "worker:1"}),
])
def test_example_trains_to_succeeded_with_every_replica_in_one_cluster(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, example_file: str,
        tasks: set[str]) -> None:
    logs = run_to_succeeded(real_node, operator, namespace, example(example_file))

    joined = {task: JOINED.search(text) for task, text in logs.items()}
    assert set(joined) == tasks
    for task, match in joined.items():
        assert match, f"{task} never said which cluster it joined:\n{logs[task][-2000:]}"
        assert f"{match[1]}:{match[2]}" == task  # each replica is the task tfop told it it is
    # ...and all of them joined one cluster of the same shape.
    assert len({m.groups()[2:] for m in joined.values() if m}) == 1
    # The Keras example reports epochs (model.fit), the others steps.
    assert re.search(r"(step|epoch) \d+ loss \d", logs["chief:0"]), logs["chief:0"][-2000:]


def test_ps_strategy_with_the_default_ps_server_trains_to_succeeded(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str) -> None:
    """A PS with no tensorflow container gets tfop's default server, in the image of the controller config's
    tfImage: with `make run`'s config that is the TensorFlow image the real nodes hold, so the PS starts (with
    tfop's own default, a registry's image, it would wait in ImagePullBackOff) and the chief trains on it."""
    manifest = example("ps-strategy.yaml")
    ps = manifest["spec"]["tfReplicaSpecs"]["PS"]
    # Still on the real nodes (their selector and toleration), but with nothing to run: tfop supplies it.
    ps["template"]["spec"] = {**ps["template"]["spec"], "containers": []}
    logs = run_to_succeeded(real_node, operator, namespace, manifest)

    [ps_pod] = [p for p in job_pods(real_node, namespace, manifest["metadata"]["name"])
                if p["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "ps"]
    [server] = ps_pod["spec"]["containers"]
    assert server["image"] == tensorflow_image()
    assert "serving /job:ps/task:0 at grpc://" in logs["ps:0"], logs["ps:0"][-2000:]
    assert "variables on /job:ps/replica:0/task:0" in logs["chief:0"], logs["chief:0"][-2000:]
    assert re.search(r"step \d+ loss \d", logs["chief:0"]), logs["chief:0"][-2000:]
