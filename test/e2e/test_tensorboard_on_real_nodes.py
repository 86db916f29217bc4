"""A job's TensorBoard on the real nodes (docs/tfjob/tensorboard.md): a Keras `model.fit` with Keras's own TensorBoard
callback writes its scalars to the cluster's shared directory (a hostPath every real node mounts, as it would an NFS
share); tfop makes the job's TensorBoard, the TensorFlow image's own `tensorboard` command, and the worker's
anti-affinity to it puts the two on different nodes, so what TensorBoard reads crossed from one node to the other.
The page, as it runs in a cluster (its ServiceAccount with the shipped ClusterRole), serves TensorBoard's scalar
data API through the apiserver's proxy: to a user who may get the job, while the job trains, the same losses the
training's own history has; still after the job succeeded (the TensorBoard is kept for its TTL); and to a user of
the same namespace who may not get the job, nothing (403)."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from localcluster import LocalCluster
from localcluster.operator_config import tensorflow_image
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods, on_real_node, pods_now, story, wait_for_condition
from support.ui import UiServer, reader_token, ui_identity
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for

JOB = "board"
EPOCHS = 8
IMPORT_DEADLINE = 900.0  # seconds for a pod to import TensorFlow on a loaded 2-core machine (TensorBoard does too)
LOG_MOUNT = "/shared"
TENSORBOARD_OF = "tfop.kubeflow.org/tensorboard-of"

# An epoch a second or so, with a validation split (a second run, `validation`); then the history as the training
# saw it, and the pod waits for the test's stop file (at most 15 minutes, so a leaked job ends by itself): the
# test reads the TensorBoard while the job surely runs.
FIT = """
import json, os, time
import numpy as np
import tensorflow as tf
log_dir, stop = os.environ["LOG_DIR"], os.environ["STOP_FILE"]
x = np.random.rand(256, 4).astype("float32")
y = (x.sum(axis=1) > 2).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
pause = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: time.sleep(1))
history = model.fit(x, y, epochs=int(os.environ["EPOCHS"]), batch_size=32, validation_split=0.25, verbose=2,
                    callbacks=[tf.keras.callbacks.TensorBoard(log_dir=log_dir), pause])
print("history " + json.dumps(history.history), flush=True)
deadline = time.monotonic() + 900
while not os.path.exists(stop) and time.monotonic() < deadline:
    time.sleep(0.5)
print("stopped", flush=True)
"""


def fit_job(shared: Path, log_dir: str, stop: str) -> dict[str, Any]:
    container = {
        "name": "tensorflow", "image": tensorflow_image(), "imagePullPolicy": "Never",
        "command": ["python", "-c", FIT],
        "env": [{"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"}, {"name": "LOG_DIR", "value": log_dir},
                {"name": "STOP_FILE", "value": stop}, {"name": "EPOCHS", "value": str(EPOCHS)}],
        "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}, "limits": {"memory": "2Gi"}},
        "volumeMounts": [{"name": "shared", "mountPath": LOG_MOUNT}]}
    # Never on the node of the job's TensorBoard (required anti-affinity holds both ways: whichever the scheduler
    # places second goes to the other node).
    apart = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {TENSORBOARD_OF: JOB}}}]}}
    pod = on_real_node({"containers": [container], "terminationGracePeriodSeconds": 1, "affinity": apart,
                        "volumes": [{"name": "shared", "hostPath": {"path": str(shared), "type": "Directory"}}]})
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": JOB, "annotations": {"tfop.kubeflow.org/tensorboard": log_dir}},
            "spec": {"runPolicy": {"cleanPodPolicy": "All"}, "tfReplicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "Never", "template": {"spec": pod}}}}}


def tensorboard_pods(cluster: LocalCluster, namespace: str) -> list[dict[str, Any]]:
    items = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json",
                                       "-l", f"{TENSORBOARD_OF}={JOB}").stdout)["items"]
    return items  # type: ignore[no-any-return]


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


def running(job: dict[str, Any]) -> bool:
    return any(c["type"] == "Running" and c["status"] == "True" for c in job.get("status", {}).get("conditions", []))


def every_epoch(series: list[list[float]] | None) -> list[list[float]] | None:
    """A scalar series once it has a point for every epoch."""
    return series if series is not None and len(series) == EPOCHS else None


def read_json(ui: UiServer, path: str, token: str) -> Any:
    """The answer of the page to a GET as the token's user, parsed; None unless 200 (TensorBoard not up yet)."""
    status, body = ui.get(path, token=token)
    return json.loads(body) if status == 200 else None


def test_the_page_serves_the_scalars_a_keras_fit_writes_to_whoever_may_get_the_job(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, tmp_path: Path) -> None:
    shared = real_node.shared_dir / namespace
    shared.mkdir(parents=True)
    log_dir, stop = f"{LOG_MOUNT}/logs", shared / "stop"
    alice = reader_token(real_node, namespace, "alice")
    # In the job's namespace, but with no rights on it.
    real_node.kubectl("create", "serviceaccount", "mallory", "-n", namespace)
    mallory = real_node.kubectl("create", "token", "mallory", "-n", namespace, "--duration=30m").stdout.strip()

    def explain() -> str:
        return f"{pods_now(real_node, namespace)}\nevents:\n{story(real_node, namespace)}"

    with ui_identity(real_node, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        try:
            applied = time.monotonic()
            apply(real_node, namespace, fit_job(shared, log_dir, f"{LOG_MOUNT}/stop"))
            base = f"/namespaces/{namespace}/tfjobs/{JOB}/tensorboard"

            [board] = wait_for(lambda: [p for p in tensorboard_pods(real_node, namespace) if ready(p)],
                               IMPORT_DEADLINE, "the job's TensorBoard pod Ready", interval=KUBECTL_INTERVAL,
                               explain=explain)
            board_ready = time.monotonic() - applied
            [container] = board["spec"]["containers"]
            assert container["command"][:2] == ["python", "-c"] and container["command"][3:] == [
                "--logdir", log_dir, "--bind_all", "--port", "6006", "--path_prefix", base]
            assert container["image"] == tensorflow_image()
            # TensorBoard itself says what it is and what it reads.
            environment = wait_for(lambda: read_json(ui, f"{base}/data/environment", alice), DEADLINE,
                                   "TensorBoard's environment through the page", explain=explain)
            assert (environment["version"], environment["data_location"]) == ("2.21.0", log_dir), environment
            # Its own page, what a user opens first: whole, its links kept under the job's TensorBoard path.
            status, index = ui.get(f"{base}/", token=alice)
            assert status == 200, (status, index[:3000])
            assert "<tb-webapp>" in index and "/api/v1/namespaces/" not in index, index[:3000]

            def scalars(run: str, tag: str) -> list[list[float]] | None:
                series: list[list[float]] | None = read_json(
                    ui, f"{base}/data/plugin/scalars/scalars?{urlencode({'run': run, 'tag': tag})}", alice)
                return series

            first = wait_for(lambda: scalars("train", "epoch_loss"), IMPORT_DEADLINE,
                             "the first scalar through the page", interval=KUBECTL_INTERVAL, explain=explain)
            first_seen, first_seen_at = time.monotonic() - applied, time.time()
            [worker] = job_pods(real_node, namespace, JOB)
            assert worker["spec"]["nodeName"] != board["spec"]["nodeName"], "the worker and TensorBoard share a node"

            # The whole fit's epochs, while the job still runs (it waits for the stop file), equal to its history.
            def logged_history() -> dict[str, list[float]] | None:
                log = real_node.kubectl("logs", "-n", namespace, worker["metadata"]["name"], check=False).stdout
                found = re.search(r"^history (.*)$", log, re.M)
                return json.loads(found.group(1)) if found else None

            history = wait_for(logged_history, IMPORT_DEADLINE, "the fit's history in the worker's log",
                               interval=KUBECTL_INTERVAL, explain=explain)
            tags = wait_for(lambda: read_json(ui, f"{base}/data/plugin/scalars/tags", alice), DEADLINE,
                            "the scalar tags")
            assert {"epoch_loss", "epoch_accuracy"} <= set(tags["train"]), tags
            assert {"epoch_loss", "epoch_accuracy"} <= set(tags["validation"]), tags
            for run, key in (("train", "loss"), ("validation", "val_loss")):
                series = wait_for(lambda run=run: every_epoch(scalars(run, "epoch_loss")), DEADLINE,
                                  f"the {run} run's {EPOCHS} losses", interval=KUBECTL_INTERVAL)
                assert [step for _, step, _ in series] == list(range(EPOCHS)), series
                assert all(math.isclose(value, expected, rel_tol=1e-5)
                           for (_, _, value), expected in zip(series, history[key], strict=True)), (series, history)
            assert running(get(real_node, namespace, "tfjob", JOB)), "the job no longer runs"

            # Only to who may get the job: the same namespace is no right to it, a token nobody has is no user.
            for path in (f"{base}/", f"{base}/data/plugin/scalars/tags"):
                assert ui.get(path, token=mallory)[0] == 403, path
                assert ui.get(path, token="made-up")[0] == 401, path

            # Kept after the job succeeded, for its TTL: the same scalars still served.
            stop.touch()
            wait_for_condition(real_node, namespace, JOB, {"Succeeded"}, timeout=DEADLINE)
            wait_for(lambda: not job_pods(real_node, namespace, JOB), DEADLINE, "the worker's pod cleaned up",
                     interval=KUBECTL_INTERVAL)
            after = scalars("train", "epoch_loss")
            assert after is not None and len(after) == EPOCHS, after
        finally:
            ui.stop()
    print(f"TensorBoard: applied -> its pod Ready {board_ready:.1f}s; applied -> first scalar through the page "
          f"{first_seen:.1f}s; first scalar written -> served {first_seen_at - first[0][0]:.1f}s "
          f"(worker on {worker['spec']['nodeName']}, TensorBoard on {board['spec']['nodeName']})")
