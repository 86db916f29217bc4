"""The README's walk-through, end to end: the `tfop` command runs, a user applies the distributed example with
kubectl, watches it in `kubectl get tfjobs`, and it succeeds once its pods exit 0. Then SIGTERM stops the
operator within the time its Deployment gives it, without waiting out its drain."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from ports import free_port
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for
from tfop import yamlio
from tfop.kube.client import KubeClient

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENT = REPO / "deploy" / "manifests" / "deployment.yaml"
# The time the kustomize base's pod has to stop after SIGTERM before the kubelet kills it.
STOP_GRACE = next(document["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
                  for document in yamlio.load_all(DEPLOYMENT.read_text())
                  if document and document.get("kind") == "Deployment")


def tfjob_row(cluster: LocalCluster, namespace: str) -> list[str]:
    lines = cluster.kubectl("get", "tfjobs", "-n", namespace).stdout.splitlines()
    return lines[1].split() if len(lines) > 1 else []


def test_distributed_example_runs_to_success_and_sigterm_stops_the_operator(
        cluster: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> None:
    tfop = shutil.which("tfop", path=str(Path(sys.executable).parent))
    assert tfop, "the tfop console script is installed with the package"
    log = tmp_path / "tfop.log"
    with log.open("wb") as out:
        # A drain far beyond the wait for its exit below: with nothing in flight, SIGTERM must not wait it out.
        process = subprocess.Popen(
            [tfop, "run", "--kubeconfig", str(cluster.kubeconfig), "--namespace", namespace,
             "--metrics-addr", f"127.0.0.1:{free_port()}", "--health-addr", f"127.0.0.1:{free_port()}",
             "--drain-seconds", "3600"],
            stdout=out, stderr=subprocess.STDOUT)
    try:
        cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "examples" / "distributed.yaml"))
        wait_for(lambda: tfjob_row(cluster, namespace)[1:3] == ["Running", "4/4"], timeout=DEADLINE,
                 message="kubectl get tfjobs to show Running 4/4", interval=KUBECTL_INTERVAL)

        client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
        pods = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json",
                                          "-l", "training.kubeflow.org/job-name=dist-mnist").stdout)["items"]
        # The chief decides the job; the pods still running are then cleaned up (cleanPodPolicy: Running).
        [chief] = [p for p in pods if p["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "chief"]
        exit_pod(client, namespace, chief["metadata"]["name"], 0)
        wait_for(lambda: tfjob_row(cluster, namespace)[1:2] == ["Succeeded"], timeout=DEADLINE,
                 message="kubectl get tfjobs to show Succeeded", interval=KUBECTL_INTERVAL)
        # The success tells the exit that decided it: `... successfully completed: Chief 0 exited with code 0.`
        reasons = ("SuccessfulCreate", "TFJobSucceeded", "Chief 0 exited with code 0")
        wait_for(lambda: all(reason in cluster.kubectl("describe", "tfjob", "dist-mnist", "-n", namespace).stdout
                             for reason in reasons), message=f"kubectl describe to show the events {reasons}",
                 interval=KUBECTL_INTERVAL)
    finally:
        process.terminate()
        try:
            # Not the suite's DEADLINE: what this proves is that tfop does not outlast the grace, after which the
            # kubelet would kill it.
            code: int | None = process.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            code = None
        print(log.read_text()[-4000:])
    assert code == 0, (f"tfop did not exit 0 within the {STOP_GRACE} s the deployment gives it after SIGTERM "
                       f"(terminationGracePeriodSeconds, deploy/manifests/deployment.yaml): {code}")
    assert '"event": "stopped"' in log.read_text()
