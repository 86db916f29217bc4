"""Training progress from inside real pods (docs/tfjob/progress.md): the operator serves its progress endpoint on
the host's address on the pod network, and the pods of a TFJob post to it with the environment and the projected
token tfop gave them. A custom loop reports with the Kubeflow SDK's own update_trainjob_status (PyPI kubeflow
0.5.0, its virtualenv's site-packages mounted into the pod), and a Keras `model.fit` with tfop's shipped callback
(from the projected volume, nothing installed): both show in the job's status, in `kubectl get tfjobs` and on the
job's page (to a user who may read the job) while the pods run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.operator_config import tensorflow_image
from ports import free_port
from support.operator_process import OperatorProcess
from support.progress import progress_config, trainer_sdk_python
from support.real_node_jobs import apply, get, on_real_node, pods_now
from support.ui import UiServer, reader_token, ui_identity
from support.waiting import DEADLINE, wait_for

IMPORT_DEADLINE = 900.0  # seconds for a pod to import TensorFlow (or the SDK) on a loaded 2-core machine
SDK_MOUNT = "/opt/kubeflow-sdk"

CUSTOM_LOOP = """
import time
from kubeflow.trainer import update_trainjob_status
total = 3
for step in range(1, total + 1):
    time.sleep(6)  # the SDK sends at most one report per 5 seconds
    sent = update_trainjob_status(progress_percent=100 * step // total, estimated_remaining_seconds=6 * (total - step),
                                  metrics={"loss": 1.0 / step, "currentStep": step, "totalSteps": total})
    print("step", step, "sent", sent, flush=True)
time.sleep(3600)  # kept running: the test reads the status while the job runs, then deletes it
"""

KERAS_FIT = """
import os, sys, time
import numpy as np
import tensorflow as tf
sys.path.insert(0, "/var/run/secrets/tfop.kubeflow.org/progress")
from tfop_progress import ProgressCallback
x = np.random.rand(64, 4).astype("float32")
y = (x.sum(axis=1) > 2).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
model.fit(x, y, epochs=3, batch_size=16, verbose=2, callbacks=[ProgressCallback()])
print("fit done", flush=True)
time.sleep(3600)
"""


@pytest.fixture
def progress_operator(real_node: LocalCluster, tfjob_crd: Path, namespace: str,
                      tmp_path: Path) -> Iterator[OperatorProcess]:
    """tfop on the host, its progress endpoint on the host's address on the pod network (the pods' gateway)."""
    config = progress_config(tmp_path / "config.yaml", free_port(), host=real_node.network.gateway,
                             extra=f"tfImage: {tensorflow_image()}\n")
    process = OperatorProcess(real_node.kubeconfig, tmp_path / "tfop.log", "--namespace", namespace,
                              "--config", str(config)).start()
    yield process
    process.kill()


@pytest.fixture
def page(real_node: LocalCluster, namespace: str, tmp_path: Path) -> Iterator[tuple[UiServer, str]]:
    """The page, under the shipped ui role, and the token of a user who may read the namespace's TFJobs."""
    reader = reader_token(real_node, namespace, "reader")
    with ui_identity(real_node, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        try:
            yield ui, reader
        finally:
            ui.stop()


def shown_on_the_page(page: tuple[UiServer, str], namespace: str, name: str, *pieces: str) -> None:
    """The job's page, as the reader gets it, once it has every piece (its cache follows the status)."""
    ui, token = page

    def body() -> str | None:
        status, text = ui.get(f"/namespaces/{namespace}/tfjobs/{name}", token=token)
        return text if status == 200 and all(piece in text for piece in pieces) else None
    wait_for(body, DEADLINE, f"{name}'s page to show {pieces}")


def job(name: str, script: str, **spec: Any) -> dict[str, Any]:
    env = [{"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"}]
    container: dict[str, Any] = {
        "name": "tensorflow", "image": tensorflow_image(), "imagePullPolicy": "Never",
        "command": ["python", "-c", script], "env": env,
        "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}}}
    pod: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 1, **spec}
    if "volumes" in spec:
        container["volumeMounts"] = [{"name": v["name"], "mountPath": SDK_MOUNT, "readOnly": True}
                                     for v in spec["volumes"]]
        env.append({"name": "PYTHONPATH", "value": SDK_MOUNT})
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"runPolicy": {"cleanPodPolicy": "All"}, "tfReplicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "Never", "template": {"spec": on_real_node(pod)}}}}}


def progress_when(cluster: LocalCluster, namespace: str, name: str, done: Any) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        progress = get(cluster, namespace, "tfjob", name).get("status", {}).get("trainerStatus")
        return progress if progress and done(progress) else None

    try:
        return wait_for(check, timeout=IMPORT_DEADLINE, message=f"{name}'s reported progress")
    except AssertionError as error:
        raise AssertionError(f"{error}; {pods_now(cluster, namespace)}") from None


def columns(cluster: LocalCluster, namespace: str, name: str) -> dict[str, str]:
    header, row = cluster.kubectl("get", "tfjobs", name, "-n", namespace).stdout.splitlines()[:2]
    return dict(zip(header.split(), row.split(), strict=False))


def test_a_custom_loop_reports_with_the_kubeflow_sdk_from_its_pod(real_node: LocalCluster, namespace: str,
                                                                 progress_operator: OperatorProcess,
                                                                 page: tuple[UiServer, str]) -> None:
    site_packages = next(trainer_sdk_python().parent.parent.glob("lib/python3*/site-packages"))
    apply(real_node, namespace, job("custom-loop", CUSTOM_LOOP, volumes=[
        {"name": "kubeflow-sdk", "hostPath": {"path": str(site_packages), "type": "Directory"}}]))
    progress = progress_when(real_node, namespace, "custom-loop", lambda p: p.get("progressPercentage") == 100)
    assert (progress["currentStep"], progress["totalSteps"], progress["estimatedRemainingSeconds"]) == (3, 3, 0)
    assert progress["metrics"][0] == {"name": "loss", "value": "0.3333333333333333"}
    assert progress["reportedBy"].startswith("custom-loop-worker-")
    shown = columns(real_node, namespace, "custom-loop")
    assert (shown["STATE"], shown["PROGRESS"], shown["ETA"]) == ("Running", "100", progress["estimatedCompletionTime"])
    shown_on_the_page(page, namespace, "custom-loop", 'id="progress-percent">100 %', 'id="progress-eta">ETA ')


def test_keras_fit_reports_with_the_shipped_callback(real_node: LocalCluster, namespace: str,
                                                     progress_operator: OperatorProcess,
                                                     page: tuple[UiServer, str]) -> None:
    apply(real_node, namespace, job("keras-fit", KERAS_FIT))
    progress = progress_when(real_node, namespace, "keras-fit", lambda p: p.get("progressPercentage") == 100)
    metrics = {metric["name"]: metric["value"] for metric in progress["metrics"]}
    assert (progress["currentEpoch"], progress["totalEpochs"], progress["currentStep"], progress["totalSteps"]) == (
        3, 3, 12, 12)
    assert {"loss", "accuracy", "currentEpoch", "totalEpochs"} <= set(metrics)
    assert float(metrics["loss"]) > 0
    shown = columns(real_node, namespace, "keras-fit")
    assert (shown["STATE"], shown["PROGRESS"]) == ("Running", "100")
    shown_on_the_page(page, namespace, "keras-fit", 'id="progress-percent">100 %')
