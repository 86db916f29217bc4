"""The seeds' manifests as written, against the real apiserver with tfop's conversion webhook and the operator
configured by seed 003's ConfigMap: v1beta1 and v1alpha1 TFJobs are stored as v1 and get the pods and services a
v1 job gets, the v1alpha1 view shows the seed's phase/state, the TfJob goes through `tfop convert`, what v1
cannot hold is refused naming the field, and a v1 job seen through an older version and written back is
unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, children, condition, events_about, job_status
from support.waiting import DEADLINE, wait_for, wait_for_count
from support.webhook import WebhookProcess, apply_until_converted
from tfop import yamlio
from tfop.api.conversion import to_v1
from tfop.controller.plan.job.legacy_gpu import rewrite_legacy_gpu
from tfop.controller.ps_server_configmap import server_script
from tfop.kube.client import KubeClient
from tfop.kube.resource import CONFIGMAPS, PODS, SERVICES

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"
SEED_CONFIG = SEEDS / "003-tf-job-operator-config.yaml"
APPLIED = ["001-example-tfjob.yaml", "001-module6-ex1-gpu.yaml", "001-module6-ex2-gpu.yaml",
           "002-example-job.yaml", "002-tf-smoke-gpu.yaml"]
SERVER_PATH = "/opt/mlkube/grpc_tensorflow_server/grpc_tensorflow_server.py"


@pytest.fixture(scope="module")
def webhook(cluster: LocalCluster, tfjob_crd: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        WebhookProcess]:
    process = WebhookProcess(tmp_path_factory.mktemp("webhook"))
    yield process
    process.stop()
    # The checked-in CRD back as it was (replace, not apply: apply would keep the url next to the service).
    cluster.kubectl("replace", "-f", str(tfjob_crd))


@pytest.fixture
def converting(cluster: LocalCluster, webhook: WebhookProcess) -> WebhookProcess:
    webhook.point_crd_here(cluster)
    return webhook


@pytest.fixture
def operator(cluster: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    """The operator with seed 003's controller config, copied out of its ConfigMap as written."""
    config = tmp_path / "controller_config_file.yaml"
    config.write_text(yamlio.load(SEED_CONFIG.read_text())["data"]["controller_config_file.yaml"])
    process = OperatorProcess(cluster.kubeconfig, tmp_path / "operator.log", "--namespace", namespace,
                              "--config", str(config)).start()
    yield process
    process.terminate()
    print(f"--- operator log ---\n{process.log_tail(60)}")


def seed(name: str) -> dict[str, Any]:
    return dict(yamlio.load((SEEDS / name).read_text()))


def expected_children(job: dict[str, Any], rid: str) -> list[str]:
    """The names a v1 job with the same replicas gets: {job}-{replica type}-{runtime id}-{index}."""
    name = job["metadata"]["name"]
    return sorted(f"{name}-{replica_type.lower()}-{rid}-{index}"
                  for replica_type, spec in job["spec"]["tfReplicaSpecs"].items()
                  for index in range(spec.get("replicas", 1)))


def test_the_crd_serves_the_seeds_versions_and_stores_v1(cluster: LocalCluster, tfjob_crd: Path) -> None:
    crd = json.loads(cluster.kubectl("get", "crd", "tfjobs.kubeflow.org", "-o", "json").stdout)
    versions = {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]}
    assert versions == {"v1": (True, True), "v1beta1": (True, False), "v1alpha1": (True, False)}
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"


@pytest.mark.parametrize("manifest", APPLIED)
def test_a_seed_manifest_runs_as_written(cluster: LocalCluster, kube_client: KubeClient, namespace: str,
                                         converting: WebhookProcess, operator: OperatorProcess,
                                         manifest: str) -> None:
    written = seed(manifest)
    name = written["metadata"]["name"]
    # What the apiserver would store for the same job written in v1 (its schema defaults included), asking for
    # nvidia.com/gpu where the seed asked for the alpha GPU resource, as the webhook converts it.
    converted = rewrite_legacy_gpu(to_v1(written).obj, "nvidia.com/gpu").job
    as_v1 = json.loads(cluster.kubectl("create", "--dry-run=server", "-o", "json", "-n", namespace, "-f", "-",
                                       input=json.dumps(converted)).stdout)
    output = apply_until_converted(cluster, namespace, (SEEDS / manifest).read_text())
    assert f"tfjob.kubeflow.org/{name}" in output

    stored = kube_client.get(TFJOBS, name, namespace)  # read as v1, the storage version
    assert stored["spec"] == as_v1["spec"]
    rid = wait_for(lambda: job_status(kube_client, namespace, name).get("runtimeId"), message="runtimeId")
    expected = expected_children(stored, rid)
    pods = {p["metadata"]["name"]: p for p in wait_for_count(
        lambda: children(kube_client, PODS, namespace, name), len(expected), message="pods")}
    services = wait_for_count(lambda: children(kube_client, SERVICES, namespace, name), len(expected),
                              message="services")
    assert sorted(pods) == expected == sorted(s["metadata"]["name"] for s in services)

    for pod_name, pod in pods.items():
        tensorflow = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
        limits = tensorflow.get("resources", {}).get("limits", {})
        env = {e["name"]: e.get("value") for e in tensorflow.get("env", [])}
        assert "alpha.kubernetes.io/nvidia-gpu" not in limits
        if "nvidia.com/gpu" in limits:  # seed 003's accelerators entry, written for the alpha GPU resource
            assert env["LD_LIBRARY_PATH"] == "/usr/lib/nvidia:/usr/lib/x86_64-linux-gnu"
            assert {v["name"]: v["hostPath"]["path"] for v in pod["spec"]["volumes"] if "hostPath" in v} == {
                "lib": "/usr/lib/nvidia-384", "bin": "/usr/lib/nvidia-384/bin",
                "libcuda": "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}
        if "-ps-" in pod_name:  # seed 002's PS has no template: the default gRPC server
            assert tensorflow["command"] == ["python", SERVER_PATH]
            assert tensorflow["image"] == "tensorflow/tensorflow:2.21.0"
            assert json.loads(env["TF_CONFIG"])["task"]["type"] == "ps"
    if any("-ps-" in pod_name for pod_name in pods):
        configmap = kube_client.get(CONFIGMAPS, "tfop-grpc-server", namespace)
        assert configmap["data"]["grpc_tensorflow_server.py"] == server_script()

    # What `kubectl get tfjobs.v1alpha1.kubeflow.org` shows: the seed's phase/state view.
    table = cluster.kubectl("get", "tfjobs.v1alpha1.kubeflow.org", name, "-n", namespace).stdout
    assert table.split("\n")[0].split()[:4] == ["NAME", "PHASE", "STATE", "RUNTIME-ID"]
    row = table.split("\n")[1].split()
    assert (row[0], row[1] in ("Creating", "Running"), row[2], row[3]) == (name, True, "Running", rid), table


def test_example_job_finishes_and_the_v1alpha1_view_matches_the_seeds_output(
        cluster: LocalCluster, kube_client: KubeClient, namespace: str, converting: WebhookProcess,
        operator: OperatorProcess) -> None:
    apply_until_converted(cluster, namespace, (SEEDS / "002-example-job.yaml").read_text())
    rid = wait_for(lambda: job_status(kube_client, namespace, "example-job").get("runtimeId"), message="runtimeId")
    wait_for(lambda: condition(kube_client, namespace, "example-job", "Running"), DEADLINE, "the job to run")
    exit_pod(kube_client, namespace, f"example-job-master-{rid}-0", 0)
    wait_for(lambda: condition(kube_client, namespace, "example-job", "Succeeded"), DEADLINE, "the job to succeed")

    def alpha_view_when_done() -> dict[str, Any] | None:
        view: dict[str, Any] = json.loads(cluster.kubectl("get", "tfjobs.v1alpha1.kubeflow.org", "example-job", "-n",
                                                          namespace, "-o", "json").stdout)
        return view if view["status"].get("phase") == "Done" else None

    # CleanUp while the other replicas' pods go, then Done: a phase-only change may wait for tfop's 5 s window.
    alpha = wait_for(alpha_view_when_done, DEADLINE, "the v1alpha1 phase Done")
    assert alpha["spec"]["RuntimeId"] == rid
    assert alpha["status"]["state"] == "Succeeded"
    states = {s["tf_replica_type"]: (s["state"], s["ReplicasStates"]) for s in alpha["status"]["replicaStatuses"]}
    assert states["MASTER"] == ("Succeeded", {"Succeeded": 1})
    assert [entry["tfReplicaType"] for entry in alpha["spec"]["replicaSpecs"]] == ["MASTER", "WORKER", "PS"]


def test_seed_003_tfjob_runs_through_tfop_convert(cluster: LocalCluster, kube_client: KubeClient, namespace: str,
                                                  operator: OperatorProcess) -> None:
    converted = subprocess.run([sys.executable, "-m", "tfop", "convert", str(SEEDS / "003-example-tfjob.yaml")],
                               capture_output=True, text=True, check=False)
    assert (converted.returncode, converted.stderr) == (0, "")
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=converted.stdout)
    rid = wait_for(lambda: job_status(kube_client, namespace, "example-tfjob").get("runtimeId"), message="runtimeId")
    [pod] = wait_for_count(lambda: children(kube_client, PODS, namespace, "example-tfjob"), 1, message="pod")
    assert pod["metadata"]["name"] == f"example-tfjob-master-{rid}-0"
    tensorflow = pod["spec"]["containers"][0]
    assert tensorflow["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert {e["name"]: e["value"] for e in tensorflow["env"]}["LD_LIBRARY_PATH"] == (
        "/usr/lib/nvidia:/usr/lib/x86_64-linux-gnu")


def test_a_v1_job_asking_for_the_alpha_gpu_resource_gets_pods_asking_for_nvidia_gpu(
        kube_client: KubeClient, namespace: str, operator: OperatorProcess) -> None:
    """No node offers alpha.kubernetes.io/nvidia-gpu (the apiserver accepts it, so the pod would wait forever):
    tfop asks for the current resource in the pods it makes, with seed 003's accelerators, and says so."""
    job = seed("002-tf-smoke-gpu.yaml")
    template = job["spec"]["replicaSpecs"][0]["template"]
    kube_client.create(TFJOBS, {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "legacy"},
                                "spec": {"tfReplicaSpecs": {"Worker": {"template": template}}}}, namespace)
    [pod] = wait_for_count(lambda: children(kube_client, PODS, namespace, "legacy"), 1, message="pod")
    tensorflow = pod["spec"]["containers"][0]
    assert tensorflow["resources"] == {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}
    assert {e["name"]: e["value"] for e in tensorflow["env"]}["LD_LIBRARY_PATH"] == (
        "/usr/lib/nvidia:/usr/lib/x86_64-linux-gnu")
    stored = kube_client.get(TFJOBS, "legacy", namespace)["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    assert stored["spec"]["containers"][0]["resources"] == {"limits": {"alpha.kubernetes.io/nvidia-gpu": 1}}
    warning = wait_for(lambda: [e for e in events_about(kube_client, namespace, "legacy")
                                if e["reason"] == "GPUResourceRenamed"], message="a GPUResourceRenamed event")
    assert warning[0]["type"] == "Warning"
    assert warning[0]["message"] == (
        f"TFJob {namespace}/legacy: pods ask for nvidia.com/gpu where the template asks for "
        "alpha.kubernetes.io/nvidia-gpu, which no node offers since Kubernetes 1.10: Worker (container tensorflow, "
        "limits 1). Write nvidia.com/gpu in the template (or `tfop convert` the manifest) to silence this.")


def test_what_v1_cannot_hold_is_refused_naming_the_field(cluster: LocalCluster, namespace: str,
                                                        converting: WebhookProcess) -> None:
    manifest = seed("002-example-job.yaml")
    manifest["spec"]["RuntimeId"] = "76no"
    manifest["spec"]["terminationPolicy"] = {"chief": {"replicaName": "WORKER", "replicaIndex": 0}}
    wait_for(lambda: apply_attempt(cluster, namespace, manifest), DEADLINE, "a refusal from the webhook", interval=0.5)
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(manifest), check=False)
    assert result.returncode != 0
    assert "spec.RuntimeId" in result.stderr and "spec.terminationPolicy.chief" in result.stderr, result.stderr
    assert "example-job" not in cluster.kubectl("get", "tfjobs", "-n", namespace).stdout


def apply_attempt(cluster: LocalCluster, namespace: str, manifest: dict[str, Any]) -> bool:
    result = cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(manifest), check=False)
    return "cannot be stored as kubeflow.org/v1" in result.stderr


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
def test_a_v1_job_written_back_through_an_older_version_is_unchanged(
        cluster: LocalCluster, kube_client: KubeClient, namespace: str, converting: WebhookProcess,
        version: str) -> None:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.21.0"}]}}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "full"}, "spec": {
        "tfReplicaSpecs": {"Chief": {"replicas": 1, "restartPolicy": "OnFailure", "template": template},
                           "Worker": {"replicas": 2, "template": template},
                           "Evaluator": {"replicas": 1, "template": template}},
        "runPolicy": {"cleanPodPolicy": "All", "backoffLimit": 2, "suspend": True},
        "successPolicy": "AllWorkers"}}
    created = kube_client.create(TFJOBS, job, namespace)

    def written_back() -> bool:
        old = cluster.kubectl("get", f"tfjobs.{version}.kubeflow.org", "full", "-n", namespace, "-o", "json",
                              check=False)
        if old.returncode != 0:
            return False
        return cluster.kubectl("replace", "-f", "-", input=old.stdout, check=False).returncode == 0

    wait_for(written_back, DEADLINE, f"a round trip through {version}", interval=0.5)
    after = kube_client.get(TFJOBS, "full", namespace)
    assert after["spec"] == created["spec"]
    assert after["metadata"].get("annotations") is None


def test_the_webhook_component_serves_conversion_from_every_replica(cluster: LocalCluster, tmp_path: Path) -> None:
    """deploy/webhook, used from an overlay as docs/install/webhook.md says, rendered by kubectl's kustomize
    (cert-manager's kinds cannot be applied here: their CRDs are not installed)."""
    deploy = Path(__file__).resolve().parents[2] / "deploy"
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(deploy, tmp_path)],
        "components": [os.path.relpath(deploy / "webhook", tmp_path)]}))
    rendered = {(o["kind"], o["metadata"]["name"]): o for o in yamlio.load_all(
        cluster.kubectl("kustomize", "--load-restrictor=LoadRestrictionsNone", str(tmp_path)).stdout)}
    crd = rendered[("CustomResourceDefinition", "tfjobs.kubeflow.org")]
    assert crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "tfop-system/tfop-webhook"
    service_ref = crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
    service = rendered[("Service", service_ref["name"])]
    assert service["metadata"]["namespace"] == service_ref["namespace"] == "tfop-system"
    assert service["spec"]["ports"] == [{"name": "webhook", "port": service_ref["port"], "targetPort": "webhook"}]
    deployment = rendered[("Deployment", "tfop")]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert {"--webhook-addr=:9443", "--webhook-cert-dir=/run/tfop/webhook"} <= set(container["args"])
    assert {"name": "webhook", "containerPort": 9443} in container["ports"]
    certificate = rendered[("Certificate", "tfop-webhook")]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["webhook-cert"]["secret"]["secretName"] == certificate["spec"]["secretName"]
    assert f"{service['metadata']['name']}.tfop-system.svc" in certificate["spec"]["dnsNames"]
