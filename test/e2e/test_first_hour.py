"""A new user's first hour, as the docs tell it: `kubectl get tfjobs` says truly what each job is doing
(Pending, Running, Restarting, Suspended, Succeeded, with the final tally in REPLICAS), the operator's log tells
each job's story on lines that the grep recipe of docs/operating/logs.md finds, the PVC example runs with the
local PV, and a kubeconfig whose CA does not verify the apiserver ends tfop at once with exit 1."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.crds import crd_established
from support.operator_process import OperatorProcess
from support.tfjobs import replica, tfjob
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for
from tfop.kube.client import KubeClient

REPO = Path(__file__).resolve().parents[2]


def columns(cluster: LocalCluster, namespace: str, name: str) -> dict[str, str]:
    """`kubectl get tfjob NAME`'s cells by column name, cut where the header's names start: REPLICAS may hold spaces
    once the job finished, and the columns after it (WORKERS, ACTIVE-WORKERS, AGE) must not shift it."""
    lines = cluster.kubectl("get", "tfjob", name, "-n", namespace, check=False).stdout.splitlines()
    if len(lines) < 2:
        return {}
    header, line = lines[0], lines[1]
    starts = [match.start() for match in re.finditer(r"\S+", header)]
    names = header.split()
    return {names[i]: line[start:starts[i + 1] if i + 1 < len(starts) else None].strip()
            for i, start in enumerate(starts)}


def state_and_replicas(cluster: LocalCluster, namespace: str, name: str) -> tuple[str, str]:
    cells = columns(cluster, namespace, name)
    return cells.get("STATE", ""), cells.get("REPLICAS", "")


def apply(cluster: LocalCluster, namespace: str, manifest: dict[str, Any] | Path) -> None:
    if isinstance(manifest, Path):
        cluster.kubectl("apply", "-n", namespace, "-f", str(manifest))
    else:
        cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(manifest))


def pod_of(cluster: LocalCluster, namespace: str, job: str, replica_type: str, index: int) -> str:
    selector = (f"training.kubeflow.org/job-name={job},training.kubeflow.org/replica-type={replica_type},"
                f"training.kubeflow.org/replica-index={index}")
    names = cluster.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "name").stdout.split()
    return names[0].removeprefix("pod/") if len(names) == 1 else ""


def grep_recipe(log: Path, namespace: str, job: str) -> list[dict[str, Any]]:
    """The recipe of docs/operating/logs.md, `grep '"job": "NAMESPACE/NAME"'`, over the operator's log."""
    needle = f'"job": "{namespace}/{job}"'
    return [json.loads(line) for line in log.read_text().splitlines() if needle in line]


def test_states_and_lifecycle_logs_tell_the_truth(cluster: LocalCluster, tfjob_crd: Path, namespace: str,
                                                  tmp_path: Path) -> None:
    log = tmp_path / "tfop.log"
    operator = OperatorProcess(cluster.kubeconfig, log, "--namespace", namespace).start()
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    try:
        # Pods that no node accepts stay Pending: so does the job.
        unschedulable = tfjob("stuck", Worker=replica(2))
        unschedulable["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {"no-such": "node"}
        apply(cluster, namespace, unschedulable)
        wait_for(lambda: state_and_replicas(cluster, namespace, "stuck") == ("Pending", "0/2"),
                 message="stuck: Pending 0/2", interval=KUBECTL_INTERVAL)

        apply(cluster, namespace, REPO / "examples" / "distributed.yaml")
        wait_for(lambda: state_and_replicas(cluster, namespace, "dist-mnist") == ("Running", "4/4"), timeout=DEADLINE,
                 message="dist-mnist: Running 4/4", interval=KUBECTL_INTERVAL)
        worker = pod_of(cluster, namespace, "dist-mnist", "worker", 1)
        exit_pod(client, namespace, worker, 137, "OOMKilled")
        wait_for(lambda: any(line["event"].startswith("replica restarting")
                             for line in grep_recipe(log, namespace, "dist-mnist")), message="a restart line",
                 interval=KUBECTL_INTERVAL)
        wait_for(lambda: state_and_replicas(cluster, namespace, "dist-mnist") == ("Running", "4/4"), timeout=DEADLINE,
                 message="dist-mnist: Running 4/4 again", interval=KUBECTL_INTERVAL)

        cluster.kubectl("patch", "tfjob", "stuck", "-n", namespace, "--type=merge",
                        "-p", '{"spec": {"runPolicy": {"suspend": true}}}')
        wait_for(lambda: state_and_replicas(cluster, namespace, "stuck")[0] == "Suspended", message="stuck: Suspended",
                 interval=KUBECTL_INTERVAL)

        exit_pod(client, namespace, pod_of(cluster, namespace, "dist-mnist", "chief", 0), 0)
        wait_for(lambda: state_and_replicas(cluster, namespace, "dist-mnist") == ("Succeeded", "1/4 succeeded"),
                 timeout=DEADLINE, message="dist-mnist: Succeeded 1/4 succeeded", interval=KUBECTL_INTERVAL)

        short = tfjob("short", {"ttlSecondsAfterFinished": 0}, Worker=replica(1))
        apply(cluster, namespace, short)
        wait_for(lambda: pod_of(cluster, namespace, "short", "worker", 0), message="short's pod",
                 interval=KUBECTL_INTERVAL)
        exit_pod(client, namespace, pod_of(cluster, namespace, "short", "worker", 0), 1)
        wait_for(lambda: any(line["event"] == "job deleted after its TTL"
                             for line in grep_recipe(log, namespace, "short")), message="short deleted by its TTL",
                 interval=KUBECTL_INTERVAL)
    finally:
        operator.terminate()
        print(log.read_text()[-6000:])

    story = [(line["event"], line["level"]) for line in grep_recipe(log, namespace, "dist-mnist")
             if line["level"] == "info"]
    print("\n".join(f"{level:5} {event}" for event, level in story))
    events = [event for event, _ in story]
    for expected in ("job created", "job running: every replica runs", "replica restarting: recreating its pod",
                     "job succeeded"):
        assert expected in events, f"no {expected!r} line in {events}"
    assert events.index("job created") < events.index("job running: every replica runs") < events.index(
        "replica restarting: recreating its pod") < events.index("job succeeded")
    [restart] = [line for line in grep_recipe(log, namespace, "dist-mnist") if line["event"].startswith("replica")]
    assert {k: restart[k] for k in ("replica_type", "replica_index", "exit_code", "exit_class", "restarts")} == {
        "replica_type": "Worker", "replica_index": 1, "exit_code": 137, "exit_class": "retryable", "restarts": 1}
    assert any(line["level"] == "debug" and line["event"] == "created pods"
               for line in grep_recipe(log, namespace, "dist-mnist"))
    stuck = [line["event"] for line in grep_recipe(log, namespace, "stuck") if line["level"] == "info"]
    assert "job suspended" in stuck
    short_story = [line["event"] for line in grep_recipe(log, namespace, "short") if line["level"] == "info"]
    assert "job failed" in short_story and "job deleted after its TTL" in short_story
    # Every line of the log is JSON, libraries' lines included.
    for line in log.read_text().splitlines():
        json.loads(line)


def test_the_pvc_example_runs_with_the_local_pv(cluster: LocalCluster, tfjob_crd: Path, namespace: str,
                                                tmp_path: Path) -> None:
    operator = OperatorProcess(cluster.kubeconfig, tmp_path / "tfop.log", "--namespace", namespace).start()
    pv = REPO / "examples" / "local" / "pv-for-pvc-example.yaml"
    try:
        cluster.kubectl("apply", "-f", str(pv))
        apply(cluster, namespace, REPO / "examples" / "pvc.yaml")
        wait_for(lambda: cluster.kubectl("get", "pvc", "mnist-models", "-n", namespace, "-o",
                                         "jsonpath={.status.phase}").stdout == "Bound", timeout=DEADLINE,
                 message="the example's claim to bind to the local PV", interval=KUBECTL_INTERVAL)
        wait_for(lambda: state_and_replicas(cluster, namespace, "mnist-save") == ("Running", "1/1"), timeout=DEADLINE,
                 message="mnist-save: Running 1/1", interval=KUBECTL_INTERVAL)
    finally:
        operator.terminate()
        cluster.kubectl("delete", "-n", namespace, "-f", str(REPO / "examples" / "pvc.yaml"), "--wait=false",
                        check=False)
        cluster.kubectl("delete", "-f", str(pv), "--wait=false", check=False)


def test_a_ca_that_does_not_verify_the_apiserver_ends_tfop_with_exit_1(cluster: LocalCluster,
                                                                        tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    # The admin's own certificate is no CA: the apiserver's certificate cannot be verified against it.
    kubeconfig.write_text(cluster.kubeconfig.read_text().replace(str(cluster.pki / "ca.crt"),
                                                                 str(cluster.pki / "admin.crt")))
    result = subprocess.run([sys.executable, "-m", "tfop", "run", "--kubeconfig", str(kubeconfig), "--log-format",
                             "json", "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0"],
                            capture_output=True, text=True, timeout=60, check=False)
    print(result.stderr)
    assert result.returncode == 1
    *structured, plain = result.stderr.splitlines()
    assert plain.startswith(f"tfop: error: the apiserver at {cluster.server} has a certificate that does not verify")
    assert "certificate-authority" in plain
    [record] = [json.loads(line) for line in structured]
    assert record["event"] == "cluster unreachable"
    # Not retried: the client tried once per request, not five times with backoff.
    assert "Traceback" not in result.stderr


def test_a_cluster_without_the_crd_ends_tfop_with_exit_1_and_the_install_command(
        cluster: LocalCluster, tfjob_crd: Path, tmp_path: Path) -> None:
    """The CRD is deleted for this test and put back: tests run one at a time, and none has a job left."""
    cluster.kubectl("delete", "crd", "tfjobs.kubeflow.org", "--wait=true", f"--timeout={DEADLINE:.0f}s",
                    timeout=DEADLINE + 60)
    try:
        result = subprocess.run([sys.executable, "-m", "tfop", "run", "--kubeconfig", str(cluster.kubeconfig),
                                 "--log-format", "json", "--metrics-addr", "127.0.0.1:0", "--health-addr",
                                 "127.0.0.1:0"], capture_output=True, text=True, timeout=60, check=False)
    finally:
        cluster.kubectl("apply", "-f", str(tfjob_crd))
        wait_for(lambda: crd_established(cluster, "tfjobs.kubeflow.org"), DEADLINE, "the TFJob CRD to be Established",
                 interval=KUBECTL_INTERVAL)
    print(result.stderr)
    assert result.returncode == 1
    *structured, plain = result.stderr.splitlines()
    assert plain == (f"tfop: error: the cluster at {cluster.server} has no TFJob CRD (tfjobs.kubeflow.org); install "
                     "it: kubectl apply -f crd/kubeflow.org_tfjobs.yaml (from the tfop repository), or kubectl "
                     "apply -k deploy/")
    [record] = [json.loads(line) for line in structured]
    assert record["event"] == "TFJob CRD missing" and record["exit_code"] == 1
