"""Table tests of the desired children: names, labels, owner, pod spec pass-through, Services and TF_CONFIG."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from support.plan_builders import parsed
from tfop.api.constants import ChildNamingScheme, ReplicaType
from tfop.api.defaults import apply_defaults
from tfop.api.runtime_id import RUNTIME_ID_LENGTH, runtime_id
from tfop.controller.plan.children.desired import (
    DesiredChildren,
    child_name,
    desired_pod,
    desired_service,
    pod_restart_policy,
    replica_slot_of,
)
from tfop.controller.plan.children.naming import ChildNaming, naming_of
from tfop.controller.plan.children.tf_config import tf_task_type
from tfop.controller.plan.job_status import TFJobStatus
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.slots import ReplicaSlot

RID = runtime_id("uid-1")
# Replica counts by type: canonical (typed) or as a user may spell them.
Counts = Mapping[ReplicaType, int] | Mapping[str, int]


def make_job(replicas: Counts, *, policy: str | None = None, **spec: Any) -> dict[str, Any]:
    """A TFJob as a user writes it (not defaulted)."""
    replica_specs = {replica_type: {"replicas": count, "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1"}]}}} for replica_type, count in replicas.items()}
    if policy is not None:
        for replica in replica_specs.values():
            replica["restartPolicy"] = policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": "mnist", "namespace": "ns", "uid": "uid-1", "generation": 1},
            "spec": {"tfReplicaSpecs": replica_specs, **spec}}


def job(replicas: Counts, **spec: Any) -> dict[str, Any]:
    return apply_defaults(make_job(replicas, **spec))


def env_of(pod: dict[str, Any], name: str = "TF_CONFIG") -> str | None:
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
    values = [variable.get("value") for variable in container.get("env", []) if variable["name"] == name]
    assert len(values) <= 1
    return values[0] if values else None


# ---------------------------------------------------------------- identity

@pytest.mark.parametrize(("args", "expected"), [
    (("mnist", "Worker", "x7k2", 0), "mnist-worker-x7k2-0"),
    (("mnist", "PS", "x7k2", 12), "mnist-ps-x7k2-12"),
    (("my-job", "Chief", "abcd", 0), "my-job-chief-abcd-0"),
    (("j", "Evaluator", "a2b3", 1), "j-evaluator-a2b3-1"),
    (("j", "Master", "a2b3", 0), "j-master-a2b3-0"),
], ids=["worker", "ps two digits", "chief", "evaluator", "master"])
def test_child_name(args: tuple[str, str, str, int], expected: str) -> None:
    assert child_name(*args) == expected


@pytest.mark.parametrize("uid", ["uid-1", "8f1c4e1a-2b7d-4c1e-9d7a-0c2f5b9e3a11", "", "ünïcode"],
                         ids=["short", "real uid", "empty", "unicode"])
def test_runtime_id_is_short_lowercase_and_deterministic(uid: str) -> None:
    rid = runtime_id(uid)
    assert len(rid) == RUNTIME_ID_LENGTH and rid == runtime_id(uid)
    assert all(char in "abcdefghijklmnopqrstuvwxyz234567" for char in rid)


def test_runtime_id_is_pinned() -> None:
    """Children of running jobs carry it in their names: changing the derivation would orphan them on upgrade."""
    assert runtime_id("uid-1") == "jje2"
    assert runtime_id("8f1c4e1a-2b7d-4c1e-9d7a-0c2f5b9e3a11") == "t6yl"


def test_a_recreated_job_gets_a_new_runtime_id() -> None:
    rids = {runtime_id(f"8f1c4e1a-2b7d-4c1e-9d7a-0c2f5b9e3a{n:02d}") for n in range(50)}
    assert len(rids) == 50


# ---------------------------------------------------------------- pods

@pytest.mark.parametrize(("replicas", "master"), [
    ({"Chief": 1, "Worker": 2}, ReplicaSlot("Chief", 0)),
    ({"Master": 1, "Worker": 2, "PS": 1}, ReplicaSlot("Master", 0)),
    ({"Worker": 2, "PS": 1}, ReplicaSlot("Worker", 0)),
    ({"Chief": 0, "Worker": 2}, ReplicaSlot("Worker", 0)),
    ({"PS": 2}, None),
], ids=["chief", "master", "worker 0 without a chief", "chief with zero replicas", "only ps"])
def test_job_role_master_is_on_the_chief_or_worker_0(replicas: dict[ReplicaType, int],
                                                     master: ReplicaSlot | None) -> None:
    tfjob = job(replicas)
    roles = {ReplicaSlot(replica_type, index)
             for replica_type, count in replicas.items() for index in range(count)
             if desired_pod(parsed(tfjob), replica_type, index)["metadata"]["labels"].get(
                 "training.kubeflow.org/job-role") == "master"}
    assert roles == ({master} if master else set())


def test_pod_metadata() -> None:
    tfjob = job({"Worker": 2})
    tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "labels": {"team": "ml", "training.kubeflow.org/replica-index": "spoofed"}, "annotations": {"a": "b"}}
    pod = desired_pod(parsed(tfjob), "Worker", 1)
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    assert pod["metadata"] == {
        "name": f"mnist-worker-{RID}-1", "namespace": "ns",
        "labels": {"team": "ml", "training.kubeflow.org/job-name": "mnist",
                   "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1",
                   "training.kubeflow.org/runtime-id": RID,
                   "training.kubeflow.org/operator-name": "tfjob-controller", "app.kubernetes.io/managed-by": "tfop"},
        "annotations": {"a": "b", "tfop.kubeflow.org/tf-cluster": "Worker=2"},
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist", "uid": "uid-1",
                             "controller": True, "blockOwnerDeletion": True}],
        "finalizers": ["tfop.kubeflow.org/replica-tracking"],
    }


@pytest.mark.parametrize(("replica_policy", "pod_policy"), [
    ("ExitCode", "Never"), ("Never", "Never"), ("OnFailure", "OnFailure"), ("Always", "Always"),
], ids=["ExitCode", "Never", "OnFailure", "Always"])
def test_pod_restart_policy(replica_policy: str, pod_policy: str) -> None:
    assert pod_restart_policy(replica_policy) == pod_policy
    tfjob = job({"Worker": 1}, policy=replica_policy)
    assert desired_pod(parsed(tfjob), "Worker", 0)["spec"]["restartPolicy"] == pod_policy


def test_user_pod_fields_pass_through_untouched_and_copied() -> None:
    tfjob = job({"Worker": 2})
    template_spec = tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    template_spec.update({
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "azurefile"}}],
        "nodeSelector": {"accelerator": "a100"}, "schedulerName": "volcano",
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "restartPolicy": "Always",
    })
    template_spec["containers"][0].update({
        "resources": {"limits": {"nvidia.com/gpu": 1}}, "args": ["--epochs", "3"],
        "env": [{"name": "A", "value": "1"}, {"name": "TF_CONFIG", "value": "stale"}, {"name": "B", "value": "2"}],
        "volumeMounts": [{"name": "data", "mountPath": "/tmp/tensorflow", "subPath": "module6-ex2-gpu"}],
    })
    template_spec["containers"].append({"name": "sidecar", "image": "busybox"})
    before = copy.deepcopy(tfjob)
    pod = desired_pod(parsed(tfjob), "Worker", 0)
    expected = copy.deepcopy(template_spec)
    expected["restartPolicy"] = "Never"  # from the replica's ExitCode, not the template's
    expected["containers"][0]["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"},
                                        {"name": "TF_CONFIG", "value": env_of(pod)}]
    assert pod["spec"] == expected
    assert json.loads(env_of(pod) or "")["task"] == {"type": "worker", "index": 0}  # the user's stale one is gone
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 8
    assert tfjob == before


# ---------------------------------------------------------------- TF_CONFIG for every replica mix

def address(replica_type: str, index: int, port: int = 2222, domain: str = "svc") -> str:
    return f"mnist-{replica_type.lower()}-{RID}-{index}.ns.{domain}:{port}"


MIXES: dict[str, tuple[dict[str, int], dict[str, list[str]] | None]] = {
    "one worker: not distributed": ({"Worker": 1}, None),
    "one chief: not distributed": ({"Chief": 1}, None),
    "one master: not distributed": ({"Master": 1}, None),
    "two workers": ({"Worker": 2}, {"worker": [f"mnist-worker-{RID}-0.ns.svc:2222",
                                               f"mnist-worker-{RID}-1.ns.svc:2222"]}),
    "chief and workers": ({"Chief": 1, "Worker": 2},
                          {"chief": [address("Chief", 0)], "worker": [address("Worker", 0), address("Worker", 1)]}),
    "master is emitted as chief": ({"Master": 1, "Worker": 1, "PS": 1},
                                   {"chief": [address("Master", 0)], "worker": [address("Worker", 0)],
                                    "ps": [address("PS", 0)]}),
    "workers, ps and an evaluator": ({"Worker": 2, "PS": 2, "Evaluator": 1},
                                     {"worker": [address("Worker", 0), address("Worker", 1)],
                                      "ps": [address("PS", 0), address("PS", 1)],
                                      "evaluator": [address("Evaluator", 0)]}),
    "zero workers are left out": ({"Chief": 1, "Worker": 0, "PS": 1},
                                  {"chief": [address("Chief", 0)], "ps": [address("PS", 0)]}),
    "chief and evaluator": ({"Chief": 1, "Evaluator": 1},
                            {"chief": [address("Chief", 0)], "evaluator": [address("Evaluator", 0)]}),
    "everything": ({"Chief": 1, "Worker": 3, "PS": 2, "Evaluator": 1},
                   {"chief": [address("Chief", 0)], "worker": [address("Worker", i) for i in range(3)],
                    "ps": [address("PS", 0), address("PS", 1)], "evaluator": [address("Evaluator", 0)]}),
    "seed style keys": ({"MASTER": 1, "WORKER": 1, "PS": 2},
                        {"chief": [address("Master", 0)], "worker": [address("Worker", 0)],
                         "ps": [address("PS", 0), address("PS", 1)]}),
}


@pytest.mark.parametrize(("replicas", "cluster"), list(MIXES.values()), ids=list(MIXES))
def test_tf_config_for_every_replica(replicas: dict[str, int], cluster: dict[str, list[str]] | None) -> None:
    tfjob = job(replicas)
    for replica_type in tfjob["spec"]["tfReplicaSpecs"]:
        for index in range(tfjob["spec"]["tfReplicaSpecs"][replica_type]["replicas"]):
            value = env_of(desired_pod(parsed(tfjob), replica_type, index))
            if cluster is None:
                assert value is None
                continue
            assert value is not None
            assert json.loads(value) == {"cluster": cluster, "environment": "cloud",
                                         "task": {"type": tf_task_type(replica_type), "index": index}}
            assert value == json.dumps(json.loads(value), sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize(("replica_type", "task_type"), [
    ("Chief", "chief"), ("Master", "chief"), ("Worker", "worker"), ("PS", "ps"), ("Evaluator", "evaluator"),
], ids=["chief", "master", "worker", "ps", "evaluator"])
def test_tf_task_types_are_the_ones_tensorflow_2_accepts(replica_type: str, task_type: str) -> None:
    assert tf_task_type(replica_type) == task_type


def test_tf_config_uses_each_type_s_port_and_the_configured_domain() -> None:
    tfjob = job({"Worker": 1, "PS": 1})
    tfjob["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "tfjob-port", "containerPort": 3333}]
    tfjob["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"] = [{"name": "grpc", "image": "tf"}]
    value = env_of(desired_pod(parsed(tfjob), "Worker", 0, "svc.cluster.local"))
    assert json.loads(value or "")["cluster"] == {
        "worker": [address("Worker", 0, 3333, "svc.cluster.local")],
        "ps": [address("PS", 0, 2222, "svc.cluster.local")]}


# enableDynamicWorker: workers and PS know the PS and themselves, the chief and evaluator the whole cluster.
SPARSE: dict[str, tuple[dict[str, int], dict[tuple[str, int], dict[str, Any]]]] = {
    "chief, workers and two PS": ({"Chief": 1, "Worker": 2, "PS": 2}, {
        ("Chief", 0): {"chief": [address("Chief", 0)], "worker": [address("Worker", 0), address("Worker", 1)],
                       "ps": [address("PS", 0), address("PS", 1)]},
        ("Worker", 0): {"worker": {"0": address("Worker", 0)}, "ps": [address("PS", 0), address("PS", 1)]},
        ("Worker", 1): {"worker": {"1": address("Worker", 1)}, "ps": [address("PS", 0), address("PS", 1)]},
        ("PS", 0): {"ps": {"0": address("PS", 0)}},
        ("PS", 1): {"ps": {"1": address("PS", 1)}},
    }),
    "a lone worker still gets TF_CONFIG, for the workers who join it": ({"Worker": 1}, {
        ("Worker", 0): {"worker": {"0": address("Worker", 0)}},
    }),
    "an evaluator keeps the whole cluster": ({"Worker": 1, "PS": 1, "Evaluator": 1}, {
        ("Worker", 0): {"worker": {"0": address("Worker", 0)}, "ps": [address("PS", 0)]},
        ("PS", 0): {"ps": {"0": address("PS", 0)}},
        ("Evaluator", 0): {"worker": [address("Worker", 0)], "ps": [address("PS", 0)],
                           "evaluator": [address("Evaluator", 0)]},
    }),
}


@pytest.mark.parametrize(("replicas", "clusters"), list(SPARSE.values()), ids=list(SPARSE))
def test_dynamic_workers_get_a_sparse_tf_config(replicas: dict[ReplicaType, int],
                                                clusters: dict[tuple[ReplicaType, int], dict[str, Any]]) -> None:
    tfjob = job(replicas)
    tfjob["spec"]["enableDynamicWorker"] = True
    for (replica_type, index), cluster in clusters.items():
        config = json.loads(env_of(desired_pod(parsed(tfjob), replica_type, index)) or "")
        assert config == {"cluster": cluster, "environment": "cloud",
                          "task": {"type": tf_task_type(replica_type), "index": index}}


@pytest.mark.parametrize(("replicas", "dynamic", "key"), [
    ({"Worker": 1}, False, "Worker=1"),
    ({"Chief": 1, "Worker": 3, "PS": 2, "Evaluator": 1}, False, "Chief=1,Worker=3,PS=2,Evaluator=1"),
    ({"Master": 1, "Worker": 0}, False, "Master=1"),
    ({"Chief": 1, "Worker": 3, "PS": 2}, True, "PS=2"),
    ({"Chief": 1, "Worker": 3}, True, ""),
], ids=["one worker", "every type", "zero workers are left out", "dynamic: the PS only", "dynamic without PS"])
def test_each_pod_records_the_replica_counts_of_its_tf_config(replicas: dict[str, int], dynamic: bool,
                                                               key: str) -> None:
    tfjob = job(replicas)
    tfjob["spec"]["enableDynamicWorker"] = dynamic
    replica_type = next(iter(tfjob["spec"]["tfReplicaSpecs"]))
    pod = desired_pod(parsed(tfjob), replica_type, 0)
    assert pod["metadata"]["annotations"]["tfop.kubeflow.org/tf-cluster"] == key


def test_tf_config_is_the_same_for_the_same_job() -> None:
    first, second = job({"Chief": 1, "Worker": 2}), job({"Chief": 1, "Worker": 2})
    assert desired_pod(parsed(first), "Worker", 1) == desired_pod(parsed(second), "Worker", 1)
    builder = DesiredChildren(parsed(first))
    assert builder.pod("Worker", 1) == builder.pod("Worker", 1) == desired_pod(parsed(first), "Worker", 1)


# ---------------------------------------------------------------- services

def test_service_is_headless_and_selects_exactly_its_pod() -> None:
    tfjob = job({"Worker": 2})
    service = desired_service(parsed(tfjob), "Worker", 1)
    pod = desired_pod(parsed(tfjob), "Worker", 1)
    assert service["kind"] == "Service" and service["metadata"]["name"] == pod["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == {
        "training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1", "training.kubeflow.org/runtime-id": RID}
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    other = desired_pod(parsed(tfjob), "Worker", 0)
    assert not service["spec"]["selector"].items() <= other["metadata"]["labels"].items()
    assert service["metadata"]["ownerReferences"] == pod["metadata"]["ownerReferences"]


@pytest.mark.parametrize(("containers", "ports"), [
    ([{"name": "tensorflow"}], [{"name": "tfjob-port", "port": 2222, "targetPort": 2222}]),
    ([{"name": "tensorflow", "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
                                       {"containerPort": 7000}]}],
     [{"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"},
      {"name": "tfjob-port", "port": 2222, "targetPort": 2222}]),
    ([{"name": "grpc", "ports": [{"name": "grpc", "containerPort": 5000}]}],
     [{"name": "tfjob-port", "port": 2222, "targetPort": 2222}]),
    ([{"name": "tensorflow", "ports": [{"name": "grpc", "containerPort": 2222}]}],
     [{"name": "grpc", "port": 2222, "targetPort": 2222}]),
    ([{"name": "tensorflow", "ports": [{"containerPort": 2222}]}],
     [{"name": "tfjob-port", "port": 2222, "targetPort": 2222}]),
    ([{"name": "tensorflow", "ports": [{"name": "tfjob-port", "containerPort": 3333},
                                       {"name": "metrics", "containerPort": 3333}]}],
     [{"name": "tfjob-port", "port": 3333, "targetPort": 3333}]),
    ([{"name": "tensorflow", "ports": [{"name": "a", "containerPort": 5000},
                                       {"name": "a", "containerPort": 5001}]}],
     [{"name": "a", "port": 5000, "targetPort": 5000}, {"name": "tfjob-port", "port": 2222, "targetPort": 2222}]),
], ids=["default port", "named ports only", "ps without tensorflow container", "2222 under another name is reused",
        "2222 without a name is reused", "one number under two names: the first", "one name twice: the first"])
def test_service_ports(containers: list[dict[str, Any]], ports: list[dict[str, Any]]) -> None:
    """No Service ever repeats a port number or name (the apiserver would refuse it), and TF_CONFIG's port is
    always on it."""
    raw = make_job({"PS": 1, "Worker": 1})
    raw["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"] = containers
    template = apply_defaults(raw)["spec"]["tfReplicaSpecs"]["PS"]["template"]
    # The template goes in as it is, past validation (which refuses a port name given twice).
    model = parsed(make_job({"PS": 1, "Worker": 1}))
    specs = {**model.spec.replica_specs, "PS": replace(model.spec.replica_specs["PS"], template=template)}
    model = replace(model, spec=replace(model.spec, replica_specs=specs))
    assert desired_service(model, "PS", 0)["spec"]["ports"] == ports


@pytest.mark.parametrize(("declared", "pod_ports", "tf_port"), [
    ([], [{"name": "tfjob-port", "containerPort": 2222}], 2222),
    ([{"name": "grpc", "containerPort": 2222}], [{"name": "grpc", "containerPort": 2222}], 2222),
    ([{"name": "tfjob-port", "containerPort": 3000}], [{"name": "tfjob-port", "containerPort": 3000}], 3000),
    ([{"name": "metrics", "containerPort": 9090}],
     [{"name": "metrics", "containerPort": 9090}, {"name": "tfjob-port", "containerPort": 2222}], 2222),
], ids=["none declared", "2222 under another name", "tfjob-port on another number", "another port"])
def test_the_tensorflow_port_is_declared_once(declared: list[dict[str, Any]], pod_ports: list[dict[str, Any]],
                                              tf_port: int) -> None:
    raw = make_job({"Worker": 2})
    raw["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = declared
    pod = desired_pod(parsed(apply_defaults(raw)), "Worker", 0)
    assert pod["spec"]["containers"][0]["ports"] == pod_ports
    assert json.loads(env_of(pod) or "{}")["cluster"]["worker"][1].endswith(f":{tf_port}")


# ---------------------------------------------------------------- reading children back

@pytest.mark.parametrize(("labels", "name", "slot"), [
    ({"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "3"},
     f"mnist-worker-{RID}-3", ReplicaSlot("Worker", 3)),
    ({"training.kubeflow.org/replica-type": "ps", "training.kubeflow.org/replica-index": "0"},
     f"mnist-ps-{RID}-0", ReplicaSlot("PS", 0)),
    ({"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "3"},
     "mnist-worker-3", ReplicaSlot("Worker", 3)),
    ({"training.kubeflow.org/replica-type": "chief", "training.kubeflow.org/replica-index": "0"},
     "anything", ReplicaSlot("Chief", 0)),
    ({"training.kubeflow.org/replica-type": "boss", "training.kubeflow.org/replica-index": "0"},
     f"mnist-boss-{RID}-0", None),
    ({"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "-1"},
     f"mnist-worker-{RID}--1", None),
    ({"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "²"},
     f"mnist-worker-{RID}-²", None),
    ({}, f"mnist-worker-{RID}-0", None),
], ids=["worker", "ps", "the Go operator's name", "any name", "unknown type", "negative index",
        "unicode digit", "no labels"])
def test_replica_slot_of(labels: dict[str, str], name: str, slot: ReplicaSlot | None) -> None:
    assert replica_slot_of(Child.of({"metadata": {"name": name, "labels": labels}})) == slot


@pytest.mark.parametrize("scheme", ["RuntimeId", "TypeIndex"])
def test_every_desired_child_fills_its_own_slot(scheme: ChildNamingScheme) -> None:
    tfjob = job({"Chief": 1, "Worker": 3, "PS": 2, "Evaluator": 1})
    builder = DesiredChildren(parsed(tfjob), naming=ChildNaming(scheme, "mnist", RID))
    for replica_type, replica in tfjob["spec"]["tfReplicaSpecs"].items():
        for index in range(replica["replicas"]):
            for child in (builder.pod(replica_type, index), builder.service(replica_type, index)):
                assert replica_slot_of(Child.of(child)) == ReplicaSlot(replica_type, index)


def test_type_index_naming_speaks_the_go_operators_names_and_selects_its_pods() -> None:
    """A job adopted from the Kubeflow training operator: a recreated pod gets that operator's name, TF_CONFIG
    lists the peers under those names, and a Service selects pods without a runtime-id label (the Go operator's)."""
    tfjob = job({"Worker": 2, "PS": 1})
    builder = DesiredChildren(parsed(tfjob), naming=ChildNaming("TypeIndex", "mnist", RID))
    pod, service = builder.pod("Worker", 1), builder.service("Worker", 1)
    assert pod["metadata"]["name"] == service["metadata"]["name"] == "mnist-worker-1"
    assert service["spec"]["selector"] == {"training.kubeflow.org/job-name": "mnist",
                                           "training.kubeflow.org/replica-type": "worker",
                                           "training.kubeflow.org/replica-index": "1"}
    assert pod["metadata"]["labels"]["training.kubeflow.org/operator-name"] == "tfjob-controller"
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert json.loads(env["TF_CONFIG"])["cluster"] == {
        "worker": ["mnist-worker-0.ns.svc:2222", "mnist-worker-1.ns.svc:2222"], "ps": ["mnist-ps-0.ns.svc:2222"]}


GO_POD = {"metadata": {"name": "mnist-worker-0", "labels": {
    "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}}}
OUR_POD = {"metadata": {"name": f"mnist-worker-{RID}-0", "labels": {
    "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}}}


@pytest.mark.parametrize(("status", "children", "default", "scheme"), [
    ({}, [], "RuntimeId", "RuntimeId"),
    ({}, [], "TypeIndex", "TypeIndex"),
    ({}, [GO_POD], "RuntimeId", "TypeIndex"),
    ({}, [OUR_POD], "TypeIndex", "RuntimeId"),
    ({}, [OUR_POD, GO_POD], "RuntimeId", "TypeIndex"),
    ({"childNaming": "TypeIndex"}, [], "RuntimeId", "TypeIndex"),
    ({"childNaming": "RuntimeId"}, [GO_POD], "TypeIndex", "RuntimeId"),
    ({"childNaming": "bogus"}, [GO_POD], "RuntimeId", "TypeIndex"),
], ids=["new job", "new job, Go naming configured", "adopted from the Go operator", "tfop's own children",
        "mixed: the Go names win", "recorded", "recorded wins over children", "unknown value ignored"])
def test_naming_of(status: dict[str, Any], children: list[dict[str, Any]], default: ChildNamingScheme,
                   scheme: str) -> None:
    tfjob = {**job({"Worker": 1}), "status": status}
    naming = naming_of("mnist", tfjob["metadata"]["uid"], TFJobStatus.from_json(status),
                       [Child.of(child) for child in children], default)
    assert naming.scheme == scheme
