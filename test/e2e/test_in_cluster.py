"""The operator as users deploy it: the kustomize base (its own image, its ServiceAccount, probes, two replicas
electing a leader) applied to the local cluster, its pods on the real node, reaching the apiserver the way any
in-cluster client does (KUBERNETES_SERVICE_HOST, the ServiceAccount's token). It runs a TFJob to success."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import LocalCluster
from localcluster.node import NODE_LABEL, node_images
from support.real_node_jobs import apply, job_pods, shell_container, story, tfjob, wait_for_condition
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
OPERATOR_NAMESPACE = "tfop-system"


def overlay(directory: Path, image: str) -> Path:
    """The base as is, but for what this cluster needs: the image built here, never pulled; the real node (kwok
    would only pretend to run the operator); no CRD (the session installed it, and deleting the overlay afterwards
    must not delete every TFJob) and no Prometheus Operator objects (this cluster has no such CRDs)."""
    name, tag = image.rsplit(":", 1)
    directory.mkdir()
    (directory / "kustomization.yaml").write_text(json.dumps({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(DEPLOY, directory)],
        "images": [{"name": "tfop", "newName": name, "newTag": tag}],
        "patches": [
            *({"patch": json.dumps({"$patch": "delete", "apiVersion": api, "kind": kind,
                                    "metadata": {"name": obj, **({"namespace": OPERATOR_NAMESPACE} if ns else {})}})}
              for api, kind, obj, ns in (
                  ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "tfjobs.kubeflow.org", False),
                  ("monitoring.coreos.com/v1", "ServiceMonitor", "tfop", True),
                  ("monitoring.coreos.com/v1", "PrometheusRule", "tfop", True))),
            {"target": {"kind": "Deployment", "name": "tfop"}, "patch": json.dumps([
                {"op": "add", "path": "/spec/template/spec/nodeSelector", "value": {NODE_LABEL: "true"}},
                {"op": "add", "path": "/spec/template/spec/tolerations",
                 "value": [{"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]},
                {"op": "replace", "path": "/spec/template/spec/containers/0/imagePullPolicy", "value": "Never"},
            ])},
        ],
    }, indent=1))
    return directory


@pytest.fixture
def deployed(real_node: LocalCluster, tfjob_crd: Path, tmp_path: Path) -> Iterator[LocalCluster]:
    [image] = [ref for ref, _ in node_images() if ref.rsplit(":", 1)[0].endswith("/tfop")]
    kustomization = overlay(tmp_path / "overlay", image)
    real_node.kubectl("apply", "-k", str(kustomization))
    try:
        yield real_node
    finally:
        # Pods on a real node stop for real: up to the grace period, so wait, and the later tests find no
        # leftover operator watching every namespace.
        real_node.kubectl("delete", "-k", str(kustomization), "--wait=true", f"--timeout={DEADLINE:.0f}s",
                          check=False, timeout=DEADLINE + 60)


def test_the_kustomize_base_runs_the_operator_in_cluster_and_it_runs_a_job_to_success(
        deployed: LocalCluster, namespace: str, busybox: str) -> None:
    cluster = deployed
    rollout = cluster.kubectl("rollout", "status", "deployment/tfop", "-n", OPERATOR_NAMESPACE, "--timeout=300s",
                              check=False, timeout=330)
    pods = json.loads(cluster.kubectl("get", "pods", "-n", OPERATOR_NAMESPACE, "-o", "json",
                                      "-l", "app.kubernetes.io/name=tfop").stdout)["items"]
    assert rollout.returncode == 0, rollout.stderr + "\n" + "\n".join(
        f"--- {p['metadata']['name']}: {p['status'].get('conditions')}\n"
        + cluster.kubectl("logs", "-n", OPERATOR_NAMESPACE, p["metadata"]["name"], "--tail=30", check=False).stdout
        for p in pods) + f"\n--- events\n{story(cluster, OPERATOR_NAMESPACE)}"
    for pod in pods:  # both replicas: on the real node, as the ServiceAccount, Ready by their readiness probe
        assert pod["spec"]["nodeName"] in cluster.node_names
        assert pod["spec"]["serviceAccountName"] == "tfop"
        assert any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])

    apply(cluster, namespace, tfjob("in-cluster", {"Chief": {"restartPolicy": "ExitCode", "spec": {
        "containers": [shell_container(busybox, "echo trained; exit 0")]}}}))
    job = wait_for_condition(cluster, namespace, "in-cluster", {"Failed", "Succeeded"})
    assert "Succeeded" in {c["type"] for c in job["status"]["conditions"] if c["status"] == "True"}, job["status"]
    [pod] = job_pods(cluster, namespace, "in-cluster")
    assert cluster.kubectl("logs", "-n", namespace, pod["metadata"]["name"]).stdout.strip() == "trained"

    def operator_logs() -> str:
        # A replica that loses its lease exits and is restarted: its earlier lines (say, "job created" before a
        # slow apiserver cost it the lease) are in the previous container's log.
        operators = json.loads(cluster.kubectl("get", "pods", "-n", OPERATOR_NAMESPACE, "-o", "json",
                                               "-l", "app.kubernetes.io/name=tfop").stdout)["items"]
        previous = "".join(
            cluster.kubectl("logs", "-n", OPERATOR_NAMESPACE, p["metadata"]["name"], "--previous", "--prefix",
                            "--tail=-1", check=False).stdout
            for p in operators if any(c.get("restartCount", 0) for c in p["status"].get("containerStatuses", [])))
        return previous + cluster.kubectl("logs", "-n", OPERATOR_NAMESPACE, "-l", "app.kubernetes.io/name=tfop",
                                          "--prefix", "--tail=-1").stdout
    # kubectl logs reads the operator's own lines: one replica leads, synced its caches through the relay, and
    # tells the job's story with job=namespace/name on every line.
    job_key = f'"job": "{namespace}/in-cluster"'
    logs = wait_for(lambda: (text := operator_logs()) and '"job succeeded"' in text and text, timeout=DEADLINE,
                    message="an operator pod to log that the job succeeded", interval=KUBECTL_INTERVAL)
    assert '"became leader"' in logs and '"caches synced"' in logs
    lines = [line for line in logs.splitlines() if job_key in line]
    assert any('"job created"' in line for line in lines), logs
    assert any('"job succeeded"' in line for line in lines), logs
