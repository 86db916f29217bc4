"""The checked-in TFJob CRD against the real apiserver: it installs, accepts what users write, rejects bad input
with a message naming the field, and prints useful columns."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import LocalCluster
from support import tfjobs
from support.tfjobs import pod_template
from tfop import yamlio

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def tfjob(name: str = "job", **replica_specs: Any) -> dict[str, Any]:
    """A TFJob manifest, by default with two workers."""
    return tfjobs.tfjob(name, **(replica_specs or {"Worker": {"replicas": 2, "template": pod_template()}}))


def create(cluster: LocalCluster, namespace: str, manifest: dict[str, Any] | str, dry_run: bool = True) -> Any:
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    args = ["create", "-n", namespace, "-f", "-"] + (["--dry-run=server"] if dry_run else [])
    return cluster.kubectl(*args, input=text, check=False)


def with_spec(job: dict[str, Any], **fields: Any) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["spec"].update(fields)
    return job


def test_crd_is_established_with_names_and_columns(cluster: LocalCluster, tfjob_crd: Path) -> None:
    crd = json.loads(cluster.kubectl("get", "crd", "tfjobs.kubeflow.org", "-o", "json").stdout)
    assert {"type": "Established", "status": "True"}.items() <= next(
        c for c in crd["status"]["conditions"] if c["type"] == "Established").items()
    names = crd["spec"]["names"]
    assert (names["kind"], names["plural"], names["shortNames"], names["categories"]) == (
        "TFJob", "tfjobs", ["tfjob"], ["kubeflow"])
    version = crd["spec"]["versions"][0]
    assert (crd["spec"]["scope"], version["name"], version["subresources"]) == ("Namespaced", "v1", {
        "status": {}, "scale": {"specReplicasPath": ".spec.tfReplicaSpecs.Worker.replicas",
                                "statusReplicasPath": ".status.replicaStatuses.Worker.active",
                                "labelSelectorPath": ".status.replicaStatuses.Worker.selector"}})
    assert [v["subresources"] for v in crd["spec"]["versions"][1:]] == [{"status": {}}, {"status": {}}]
    print(f"CRD installed on kube-apiserver {cluster.version()}", file=sys.stderr)


def test_checked_in_crd_matches_the_apiservers_pod_schema(cluster: LocalCluster) -> None:
    import gen_crd

    openapi = gen_crd.fetch_openapi(cluster.api)
    expected = gen_crd.render(openapi, f"kube-apiserver {cluster.version()}")
    assert gen_crd.OUTPUT.read_text() == expected, "crd/ is stale: run `make crd`"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_every_example_is_accepted(cluster: LocalCluster, tfjob_crd: Path, namespace: str, example: Path) -> None:
    result = create(cluster, namespace, example.read_text(), dry_run=False)
    assert result.returncode == 0, result.stderr
    assert "tfjob.kubeflow.org/" in result.stdout


# Two workers (tfjob()'s default) within 1..4, scaled on CPU, scaling down at most one pod a minute.
ELASTIC: dict[str, Any] = {"minReplicas": 1, "maxReplicas": 4,
           "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
               "type": "Utilization", "averageUtilization": 80}}}],
           "behavior": {"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}}
BOUNDS_MESSAGE = "spec.tfReplicaSpecs.Worker.replicas must be within spec.elasticPolicy.minReplicas and maxReplicas"

ACCEPTED = {
    "seeds-style upper-case keys": tfjob(MASTER={"replicas": 1, "template": pod_template()},
                                         WORKER={"replicas": 2, "template": pod_template()}),
    "lower-case keys": tfjob(chief={"template": pod_template()}, worker={"template": pod_template()}),
    "PS without a tensorflow container": tfjob(Worker={"template": pod_template()},
                                               PS={"replicas": 2, "template": pod_template("server")}),
    "zero replicas": tfjob(Worker={"replicas": 0, "template": pod_template()}),
    # 63 = len("a" * 46) + len("-evaluator-") + len(runtime id: 4) + len("-9")
    "longest name that fits": tfjob("a" * 46, Evaluator={"replicas": 10, "template": pod_template()}),
    # The replica bound (hack/crd-template.yaml): 5000 in all, whatever the key spellings; 10000 with dynamic workers.
    "5000 workers": tfjob(Worker={"replicas": 5000, "template": pod_template()}),
    "5000 replicas over three types": tfjob(chief={"template": pod_template()},
                                            WORKER={"replicas": 3999, "template": pod_template()},
                                            ps={"replicas": 1000, "template": pod_template("server")}),
    "10000 replicas of dynamic workers": with_spec(tfjob(chief={"template": pod_template()},
                                                         Worker={"replicas": 9998, "template": pod_template()},
                                                         PS={"template": pod_template("server")}),
                                                   enableDynamicWorker=True, elasticPolicy={"maxReplicas": 10000}),
    "every run policy field": with_spec(tfjob(), runPolicy={
        "cleanPodPolicy": "All", "ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 60, "backoffLimit": 0,
        "suspend": False, "schedulingPolicy": {"minAvailable": 3, "queue": "q", "priorityClass": "high",
                                               "minResources": {"cpu": "4", "nvidia.com/gpu": 2},
                                               "scheduleTimeoutSeconds": 30}},
        successPolicy="AllWorkers", enableDynamicWorker=True),
    "an elastic policy with metrics and behavior": with_spec(tfjob(), elasticPolicy=ELASTIC),
    "an elastic policy on lower-case workers, replicas defaulted": with_spec(
        tfjob(worker={"template": pod_template()}), elasticPolicy={"maxReplicas": 1}),
}


@pytest.mark.parametrize("manifest", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_valid_variants_are_accepted(cluster: LocalCluster, tfjob_crd: Path, namespace: str,
                                     manifest: dict[str, Any]) -> None:
    result = create(cluster, namespace, manifest)
    assert result.returncode == 0, result.stderr


REJECTED: dict[str, tuple[dict[str, Any], list[str]]] = {
    "unknown replica type": (
        tfjob(Worker={"template": pod_template()}, Trainer={"template": pod_template()}),
        ["spec.tfReplicaSpecs has an unknown replica type"]),
    "chief and master": (
        tfjob(Chief={"template": pod_template()}, Master={"template": pod_template()}),
        ["spec.tfReplicaSpecs", "Chief or a Master, not both"]),
    "two chiefs": (
        tfjob(Chief={"replicas": 2, "template": pod_template()}),
        ["spec.tfReplicaSpecs.Chief.replicas must be 0 or 1"]),
    "negative replicas": (
        tfjob(Worker={"replicas": -1, "template": pod_template()}),
        ["spec.tfReplicaSpecs.Worker.replicas", "greater than or equal to 0"]),
    "replicas not a number": (
        tfjob(Worker={"replicas": "three", "template": pod_template()}),
        ["spec.tfReplicaSpecs.Worker.replicas", "must be of type integer"]),
    "unknown restart policy": (
        tfjob(Worker={"restartPolicy": "Sometimes", "template": pod_template()}),
        ["spec.tfReplicaSpecs.Worker.restartPolicy", "Unsupported value"]),
    "worker without a tensorflow container": (
        tfjob(Worker={"template": pod_template("trainer")}),
        ["spec.tfReplicaSpecs.Worker.template.spec.containers must include a container named tensorflow"]),
    "a container without an image": (
        tfjob(Worker={"template": pod_template()}, PS={"template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "tf"}, {"name": "sidecar"}]}}}),
        ["every container in spec.tfReplicaSpecs[*].template.spec.containers needs an image"]),
    "chief without a template": (
        tfjob(Chief={"replicas": 1}),
        ["spec.tfReplicaSpecs.Chief.template.spec.containers must include a container named tensorflow"]),
    "same type twice in different case": (
        tfjob(Worker={"template": pod_template()}, worker={"template": pod_template()}),
        ["spec.tfReplicaSpecs names a replica type twice"]),
    "no replica specs": (tfjob(), ["spec.tfReplicaSpecs"]),
    "more replicas of one type than the dynamic bound": (
        with_spec(tfjob(Worker={"replicas": 10001, "template": pod_template()}), enableDynamicWorker=True),
        ["spec.tfReplicaSpecs.Worker.replicas", "less than or equal to 10000"]),
    "more replicas of one type than the dense bound": (
        tfjob(Worker={"replicas": 5001, "template": pod_template()}),
        ["spec.tfReplicaSpecs: the replicas of all types together must be at most 5000", "TF_CONFIG"]),
    "more replicas in all than the bound": (
        # A Chief without `replicas` counts 1, its default.
        tfjob(Chief={"template": pod_template()}, worker={"replicas": 4000, "template": pod_template()},
              PS={"replicas": 1000, "template": pod_template("server")}),
        ["spec.tfReplicaSpecs: the replicas of all types together must be at most 5000", "TF_CONFIG"]),
    "more replicas in all than the dynamic bound": (
        with_spec(tfjob(Chief={"template": pod_template()}, worker={"replicas": 9000, "template": pod_template()},
                        PS={"replicas": 1000, "template": pod_template("server")}), enableDynamicWorker=True),
        ["spec.tfReplicaSpecs: the replicas of all types together must be at most 5000 (10000 with"]),
    "name too long for child names": (
        tfjob("a" * 47, Evaluator={"replicas": 10, "template": pod_template()}),
        ["metadata.name is too long"]),
    "name with a dot": (tfjob("mnist.v2"), ["metadata.name must be a DNS-1035 label"]),
    "name starting with a digit": (tfjob("2mnist"), ["metadata.name must be a DNS-1035 label"]),
    "unknown clean pod policy": (
        with_spec(tfjob(), runPolicy={"cleanPodPolicy": "Sometimes"}),
        ["spec.runPolicy.cleanPodPolicy", "Unsupported value"]),
    "negative backoff limit": (
        with_spec(tfjob(), runPolicy={"backoffLimit": -1}), ["spec.runPolicy.backoffLimit"]),
    "zero active deadline": (
        with_spec(tfjob(), runPolicy={"activeDeadlineSeconds": 0}), ["spec.runPolicy.activeDeadlineSeconds"]),
    "negative ttl": (
        with_spec(tfjob(), runPolicy={"ttlSecondsAfterFinished": -5}), ["spec.runPolicy.ttlSecondsAfterFinished"]),
    "unknown success policy": (
        with_spec(tfjob(), successPolicy="AnyWorker"), ["spec.successPolicy", "Unsupported value"]),
    "bad min resources quantity": (
        with_spec(tfjob(), runPolicy={"schedulingPolicy": {"minResources": {"cpu": "lots"}}}),
        ["spec.runPolicy.schedulingPolicy.minResources.cpu"]),
    "elastic minimum above its maximum": (
        with_spec(tfjob(), elasticPolicy={"minReplicas": 3, "maxReplicas": 2}),
        ["spec.elasticPolicy.minReplicas: Invalid value",
         "spec.elasticPolicy.minReplicas must not be greater than spec.elasticPolicy.maxReplicas"]),
    "elastic policy without workers": (
        with_spec(tfjob(Chief={"template": pod_template()}), elasticPolicy={"maxReplicas": 2}),
        ["spec.tfReplicaSpecs: Required value", "spec.elasticPolicy needs a Worker replica spec"]),
    "workers above the elastic maximum": (
        with_spec(tfjob(), elasticPolicy={"maxReplicas": 1}),
        [f"spec.tfReplicaSpecs[Worker].replicas: Invalid value: {BOUNDS_MESSAGE}"]),
    "defaulted workers below the elastic minimum": (
        with_spec(tfjob(WORKER={"template": pod_template()}), elasticPolicy={"minReplicas": 2, "maxReplicas": 3}),
        [BOUNDS_MESSAGE]),
    "elastic policy without a maximum": (
        with_spec(tfjob(), elasticPolicy={"minReplicas": 1}), ["spec.elasticPolicy.maxReplicas: Required value"]),
    "elastic maximum above the replica bound": (
        with_spec(tfjob(), elasticPolicy={"maxReplicas": 5001}),
        ["spec.elasticPolicy.maxReplicas must be at most 5000"]),
    "elastic maximum above the dynamic replica bound": (
        with_spec(tfjob(), elasticPolicy={"maxReplicas": 10001}, enableDynamicWorker=True),
        ["spec.elasticPolicy.maxReplicas", "less than or equal to 10000"]),
    "elastic minimum of zero": (
        with_spec(tfjob(), elasticPolicy={"minReplicas": 0, "maxReplicas": 2}),
        ["spec.elasticPolicy.minReplicas", "greater than or equal to 1"]),
}
REJECTED["no replica specs"][0]["spec"]["tfReplicaSpecs"] = {}


@pytest.mark.parametrize(("manifest", "fragments"), REJECTED.values(), ids=REJECTED.keys())
def test_invalid_manifests_are_rejected_naming_the_field(
        cluster: LocalCluster, tfjob_crd: Path, namespace: str, manifest: dict[str, Any],
        fragments: list[str]) -> None:
    result = create(cluster, namespace, manifest)
    assert result.returncode != 0, f"accepted: {yaml.safe_dump(manifest)}"
    for fragment in fragments:
        assert fragment in result.stderr


def test_kubectl_get_prints_the_printer_columns(cluster: LocalCluster, tfjob_crd: Path, namespace: str) -> None:
    assert create(cluster, namespace, tfjob("columns"), dry_run=False).returncode == 0
    status = {"state": "Running", "phase": "Running", "replicaSummary": "1/2", "runtimeId": "abcd",
              "reason": "TFJobRunning", "podGroupPhase": "Inqueue"}
    cluster.kubectl("patch", "tfjob", "columns", "-n", namespace, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": status}))
    header, row = cluster.kubectl("get", "tfjobs", "-n", namespace).stdout.splitlines()
    assert header.split() == ["NAME", "STATE", "REPLICAS", "WORKERS", "ACTIVE-WORKERS", "PROGRESS", "ETA", "AGE"]
    # No replicaStatuses nor progress written yet: ACTIVE-WORKERS, PROGRESS and ETA are blank, so AGE follows
    # WORKERS.
    assert row.split()[:4] == ["columns", "Running", "1/2", "2"] and len(row.split()) == 5
    cluster.kubectl("patch", "tfjob", "columns", "-n", namespace, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": {"replicaStatuses": {"Worker": {"active": 1}}, "trainerStatus": {
                        "progressPercentage": 45, "estimatedCompletionTime": "2026-12-02T09:30:00Z"}}}))
    header, row = cluster.kubectl("get", "tfjob", "-n", namespace, "-o", "wide").stdout.splitlines()
    assert header.split() == ["NAME", "STATE", "REPLICAS", "WORKERS", "ACTIVE-WORKERS", "PROGRESS", "ETA", "AGE",
                              "PHASE", "REASON", "RUNTIME-ID", "PODGROUP"]
    assert row.split()[3:7] == ["2", "1", "45", "2026-12-02T09:30:00Z"]
    assert row.split()[8:] == ["Running", "TFJobRunning", "abcd", "Inqueue"]
    # The `kubeflow` category lists TFJobs with other Kubeflow kinds.
    assert "tfjob.kubeflow.org/columns" in cluster.kubectl("get", "kubeflow", "-n", namespace, "-o", "name").stdout


def test_kubectl_explain_describes_every_status_field_and_the_template(cluster: LocalCluster,
                                                                       tfjob_crd: Path) -> None:
    crd = yamlio.load(tfjob_crd.read_text())
    status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]

    def undescribed(schema: dict[str, Any], path: str) -> list[str]:
        missing = [] if schema.get("description") else [path]
        for name, child in (schema.get("properties") or {}).items():
            missing += undescribed(child, f"{path}.{name}")
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict) and schema[key].get("properties"):
                missing += [p for p in undescribed(schema[key], f"{path}[]") if p != f"{path}[]"]
        return missing

    assert undescribed(status, "status") == []
    explained = cluster.kubectl("explain", "tfjobs.status").stdout
    for field in ("state", "replicaSummary", "runtimeId", "conditions", "replicaStatuses", "completionTime"):
        assert field in explained
    assert "Created (seen by tfop), Pending" in " ".join(explained.split())
    template = cluster.kubectl("explain", "tfjobs.spec.tfReplicaSpecs.template").stdout
    assert "container" in template and "named tensorflow" in " ".join(template.split()), template


def test_columns_say_what_state_a_job_is_in(cluster: LocalCluster, tfjob_crd: Path) -> None:
    columns = {c["name"]: c for c in yamlio.load(tfjob_crd.read_text())["spec"]["versions"][0][
        "additionalPrinterColumns"]}
    assert list(columns)[:7] == ["State", "Replicas", "Workers", "Active-Workers", "Progress", "ETA", "Age"]
    assert all(c.get("description") for name, c in columns.items() if name != "Age")
    assert columns["State"]["description"] == "Created, Pending, Running, Restarting, Suspended, Succeeded or Failed"


def test_kubectl_scale_sets_the_workers_within_the_elastic_bounds(cluster: LocalCluster, tfjob_crd: Path,
                                                                  namespace: str) -> None:
    """The scale subresource on the apiserver alone (no operator here: the status is written by hand, as tfop
    writes it; test_autoscaler.py has tfop write it)."""
    job = with_spec(tfjob("scaled"), elasticPolicy={"minReplicas": 1, "maxReplicas": 3})
    assert create(cluster, namespace, job, dry_run=False).returncode == 0
    cluster.kubectl("scale", "tfjob/scaled", "-n", namespace, "--replicas=3")
    stored = json.loads(cluster.kubectl("get", "tfjob", "scaled", "-n", namespace, "-o", "json").stdout)
    assert stored["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3

    refused = cluster.kubectl("scale", "tfjob/scaled", "-n", namespace, "--replicas=4", check=False)
    assert refused.returncode != 0
    assert f"spec.tfReplicaSpecs[Worker].replicas: Invalid value: {BOUNDS_MESSAGE}" in refused.stderr, refused.stderr
    refused = cluster.kubectl("scale", "tfjob/scaled", "-n", namespace, "--replicas=0", check=False)
    assert refused.returncode != 0 and BOUNDS_MESSAGE in refused.stderr

    selector = "training.kubeflow.org/job-name=scaled,training.kubeflow.org/replica-type=worker"
    cluster.kubectl("patch", "tfjob", "scaled", "-n", namespace, "--subresource=status", "--type=merge", "-p",
                    json.dumps({"status": {"replicaStatuses": {"Worker": {"active": 2, "selector": selector}}}}))
    scale = cluster.api("GET", f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/scaled/scale")
    assert (scale["kind"], scale["spec"], scale["status"]) == (
        "Scale", {"replicas": 3}, {"replicas": 2, "selector": selector})
