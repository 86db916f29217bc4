"""The TF_CONFIG contract and the default PS server, checked by real TensorFlow (the pinned tensorflow-cpu of
hack/tensorflow-venv.sh, in subprocesses): tfop creates the pods on the real apiserver, the test reads every pod's
TF_CONFIG back and lets TensorFlow parse it, and runs the shipped gRPC server script as a PS that a TensorFlow
client uses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ports import free_port
from support.operator_process import OperatorProcess
from support.tensorflow import SCRIPTS, tensorflow_python
from support.tfjobs import TFJOBS, children, job_status, replica
from support.waiting import wait_for, wait_for_count
from tfop.kube.client import KubeClient
from tfop.kube.resource import CONFIGMAPS, PODS

TYPE_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
TF_TIMEOUT = 300.0  # a cold TensorFlow import on a busy 2-core machine takes tens of seconds

# name -> (replica specs, spec fields)
MIXES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "all-types": ({"Chief": replica(), "Worker": replica(2), "PS": replica(2), "Evaluator": replica()}, {}),
    "master": ({"Master": replica(), "Worker": replica(2), "PS": replica()}, {}),
    "workers-only": ({"Worker": replica(3)}, {}),
    "single": ({"Worker": replica()}, {}),
    "dynamic-workers": ({"Chief": replica(), "Worker": replica(2), "PS": replica(2)}, {"enableDynamicWorker": True}),
    "default-ps": ({"Worker": replica(2), "PS": {"replicas": 2}}, {}),
}


@pytest.fixture(scope="module")
def tf_python() -> Path:
    return tensorflow_python()




def create(client: KubeClient, namespace: str, name: str, replicas: dict[str, Any], **spec: Any) -> list[Any]:
    """Creates the job and returns its pods, once all exist."""
    client.create(TFJOBS, {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
                           "spec": {"tfReplicaSpecs": replicas, **spec}}, namespace)
    count = sum(r.get("replicas", 1) for r in replicas.values())
    return list(wait_for_count(lambda: children(client, PODS, namespace, name), count, message=f"pods of {name}"))


def tf_config_of(pod: dict[str, Any]) -> str | None:
    tensorflow = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
    return next((e["value"] for e in tensorflow.get("env", []) if e["name"] == "TF_CONFIG"), None)


def run_tf(tf_python: Path, script: str, stdin: str = "", env: dict[str, str] | None = None) -> Any:
    result = subprocess.run([str(tf_python), str(SCRIPTS / script)], input=stdin, capture_output=True, text=True,
                            check=False, timeout=TF_TIMEOUT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                                                                  **(env or {})})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_every_replica_mix_gives_tensorflow_one_cluster_and_one_chief(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess, tf_python: Path) -> None:
    pods = {name: create(kube_client, namespace, name, replicas, **spec) for name, (replicas, spec) in MIXES.items()}
    specs = {name: spec for name, (_, spec) in MIXES.items()}
    entries = [{"pod": pod["metadata"]["name"], "tf_config": tf_config_of(pod)}
               for job_pods in pods.values() for pod in job_pods]
    seen = {result["pod"]: result for result in run_tf(tf_python, "read_tf_config.py", json.dumps(entries))}

    for name, job_pods in pods.items():
        spec = specs[name]
        results = [seen[pod["metadata"]["name"]] for pod in job_pods]
        if len(job_pods) == 1:  # one process: no TF_CONFIG, TensorFlow runs it locally
            assert tf_config_of(job_pods[0]) is None and results[0]["cluster"] == {}, name
            continue
        if spec.get("enableDynamicWorker"):
            assert_sparse(name, job_pods, results)
            continue
        assert [r["error"] for r in results] == [None] * len(results), name
        clusters = {json.dumps(r["cluster"], sort_keys=True) for r in results}
        assert len(clusters) == 1, f"{name}: pods disagree about the cluster: {clusters}"
        for pod, result in zip(job_pods, results, strict=True):
            labels = pod["metadata"]["labels"]
            expected_type = "chief" if labels[TYPE_LABEL] in ("chief", "master") else labels[TYPE_LABEL]
            assert (result["task_type"], result["task_id"]) == (expected_type, int(labels[INDEX_LABEL])), result
        # TensorFlow makes the evaluator the chief of its own partition (is_chief is True for it); of the
        # training cluster, exactly one task is the chief.
        chiefs = [r["pod"] for r in results if r["is_chief"] and r["task_type"] != "evaluator"]
        assert len(chiefs) == 1, f"{name}: chiefs {chiefs}"
        cluster = results[0]["cluster"]
        assert "master" not in cluster
        trainers = len(cluster.get("chief", [])) + len(cluster.get("worker", []))
        assert {r["worker_count"] for r in results} == {trainers}, name  # an evaluator is not counted
    assert "evaluator" in seen[f"all-types-evaluator-{job_rid(kube_client, namespace, 'all-types')}-0"]["cluster"]


def assert_sparse(name: str, job_pods: list[Any], results: list[dict[str, Any]]) -> None:
    """enableDynamicWorker, as TensorFlow reads it: each worker's cluster is every PS and itself, each PS's only
    itself, keyed by its own index (the PS at index 1 too, which the Go operator's one-entry list loses), and the
    chief's the whole cluster."""
    by_task = {(r["task_type"], r["task_id"]): r["cluster"] for r in results}
    assert len(by_task) == len(job_pods), name
    chief = by_task[("chief", 0)]
    assert {task: len(addresses) for task, addresses in chief.items()} == {"chief": 1, "worker": 2, "ps": 2}, chief
    def alone(task: str, index: int) -> Any:  # TensorFlow shows a job whose indices are 0..n-1 as a list
        return [chief[task][0]] if index == 0 else {str(index): chief[task][index]}

    for index in (0, 1):
        assert by_task[("ps", index)] == {"ps": alone("ps", index)}, name
        assert by_task[("worker", index)] == {"ps": chief["ps"], "worker": alone("worker", index)}, name


def job_rid(client: KubeClient, namespace: str, name: str) -> str:
    return str(wait_for(lambda: job_status(client, namespace, name).get("runtimeId"), message="runtimeId"))


def test_the_default_ps_server_serves_a_variable_to_a_tensorflow_client(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess, tf_python: Path, tmp_path: Path) -> None:
    """The script from the ConfigMap tfop keeps, run with the PS pod's TF_CONFIG, its addresses moved to
    loopback; the chief of the same TF_CONFIG places a variable on /job:ps/task:0 and reads it back."""
    pods = create(kube_client, namespace, "ps-job", {"Chief": replica(), "PS": {"replicas": 1}})
    by_type = {pod["metadata"]["labels"][TYPE_LABEL]: pod for pod in pods}
    script = wait_for(lambda: kube_client.get(CONFIGMAPS, "tfop-grpc-server", namespace)["data"],
                      message="the server script's ConfigMap")["grpc_tensorflow_server.py"]
    (tmp_path / "server.py").write_text(script)
    tensorflow = next(c for c in by_type["ps"]["spec"]["containers"] if c["name"] == "tensorflow")
    assert tensorflow["command"][1].endswith("/grpc_tensorflow_server.py")

    ps_config = json.loads(tf_config_of(by_type["ps"]) or "{}")
    loopback = {address: f"127.0.0.1:{free_port()}" for addresses in ps_config["cluster"].values()
                for address in addresses}

    def local(config: dict[str, Any]) -> str:
        return json.dumps({**config, "cluster": {job: [loopback[a] for a in addresses]
                                                 for job, addresses in config["cluster"].items()}})

    server_log = (tmp_path / "ps.log").open("w")
    server = subprocess.Popen([str(tf_python), str(tmp_path / "server.py")], stdout=server_log,
                              stderr=subprocess.STDOUT, start_new_session=True,
                              env={**os.environ, "TF_CONFIG": local(ps_config), "TF_CPP_MIN_LOG_LEVEL": "2"})
    try:
        wait_for(lambda: server.poll() is not None or "serving /job:ps/task:0" in (tmp_path / "ps.log").read_text(),
                 TF_TIMEOUT, "the PS server to start")
        assert server.poll() is None, (tmp_path / "ps.log").read_text()
        chief_config = json.loads(tf_config_of(by_type["chief"]) or "{}")
        answer = run_tf(tf_python, "ps_client.py", env={"TF_CONFIG": local(chief_config)})
        assert answer["value"] == 42.0
        assert "/job:ps/replica:0/task:0" in answer["device"]
        assert server.poll() is None, (tmp_path / "ps.log").read_text()
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        server_log.close()
