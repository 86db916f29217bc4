"""A job's TensorBoard (plan/job/tensorboard.py, plan/children/tensorboard.py, plan/policies/tensorboard.py): which
volume an ask finds, the Deployment and Service it makes, and when they are made, kept and deleted. Every
expected row is written out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.plan_builders import NOW, RID, container, make_job, parsed, running, running_pods, services_for
from support.plan_builders import suspended as suspended_status
from tfop.api.errors import FieldError
from tfop.config import ConfigError, parse_config
from tfop.controller.plan.children.tensorboard import TENSORBOARD_KIND, TENSORBOARD_SERVICE_KIND, contains, drift
from tfop.controller.plan.controller_config import ControllerConfig, TensorBoardSettings
from tfop.controller.plan.job.tensorboard import TensorBoardAsk, tensorboard_ask
from tfop.controller.plan.planner import plan
from tfop.controller.plan.types import POD, SERVICE, TENSORBOARD, TENSORBOARD_SERVICE, Plan, PlanContext

TB = f"mnist-tb-{RID}"
PVC = {"name": "logs", "persistentVolumeClaim": {"claimName": "mnist-logs"}}
MOUNT = {"name": "logs", "mountPath": "/logs"}
SETTINGS = TensorBoardSettings()


def with_templates(templates: dict[str, dict[str, Any]], annotations: dict[str, str]) -> dict[str, Any]:
    job = make_job(dict.fromkeys(templates, 1))
    for replica_type, spec in templates.items():
        job["spec"]["tfReplicaSpecs"][replica_type]["template"] = {"spec": spec}
    job["metadata"]["annotations"] = annotations
    return job


def writing_to(*mounts: dict[str, Any], volumes: list[dict[str, Any]] | None = None,
               **pod: Any) -> dict[str, Any]:
    return {"containers": [container(volumeMounts=list(mounts))], "volumes": [PVC] if volumes is None else volumes,
            **pod}


ASK = "tfop.kubeflow.org/tensorboard"
TTL = "tfop.kubeflow.org/tensorboard-ttl-seconds"
IMAGE = "tensorflow/tensorflow:2.16.1"
RO = {"name": "logs", "mountPath": "/logs", "readOnly": True}

ASKS: dict[str, tuple[dict[str, Any], TensorBoardAsk | list[str] | None]] = {
    "no annotation: no ask": (with_templates({"Worker": writing_to(MOUNT)}, {}), None),
    "the chief's mount of the directory itself": (
        with_templates({"Chief": writing_to(MOUNT), "Worker": writing_to()}, {ASK: "/logs"}),
        TensorBoardAsk("/logs", 3600, IMAGE, PVC, RO, {})),
    "a directory below the mount, written with a trailing slash; the job's TTL": (
        with_templates({"Worker": writing_to(MOUNT)}, {ASK: "/logs/run-1/", TTL: "600"}),
        TensorBoardAsk("/logs/run-1", 600, IMAGE, PVC, RO, {})),
    "the deepest of two mounts above it, with its subPath; the pod's pull secrets and user kept": (
        with_templates({"Worker": writing_to(
            {"name": "data", "mountPath": "/"}, {"name": "logs", "mountPath": "/logs/", "subPath": "tb"},
            volumes=[{"name": "data", "nfs": {"server": "n", "path": "/"}}, PVC],
            imagePullSecrets=[{"name": "registry"}], securityContext={"runAsUser": 1000}, hostNetwork=True)},
            {ASK: "/logs/a"}),
        TensorBoardAsk("/logs/a", 3600, IMAGE, PVC, {"name": "logs", "mountPath": "/logs/", "subPath": "tb",
                                                     "readOnly": True},
                       {"imagePullSecrets": [{"name": "registry"}], "securityContext": {"runAsUser": 1000}})),
    "a mount next to the directory's name is no mount of it": (
        with_templates({"Worker": writing_to({"name": "logs", "mountPath": "/log"})}, {ASK: "/logs"}),
        TensorBoardAsk("/logs", 3600, problem="no replica's container mounts a volume at /logs or above it: "
                                              "TensorBoard reads the log directory from the volume the replicas "
                                              "write it to")),
    "an emptyDir: only its own pod sees it": (
        with_templates({"Worker": writing_to(MOUNT, volumes=[{"name": "logs", "emptyDir": {}}])}, {ASK: "/logs"}),
        TensorBoardAsk("/logs", 3600, problem="the Worker's container 'tensorflow' mounts volume 'logs' at /logs: "
                                              "an emptyDir, which only its own pod sees; put the log directory on "
                                              "a volume other pods can mount too, such as a "
                                              "PersistentVolumeClaim")),
    "mounted by subPathExpr": (
        with_templates({"Worker": writing_to({**MOUNT, "subPathExpr": "$(POD_NAME)"})}, {ASK: "/logs"}),
        TensorBoardAsk("/logs", 3600, problem="the Worker's container 'tensorflow' mounts volume 'logs' at /logs "
                                              "by subPathExpr, which names the replica's own variables")),
    "a relative directory and a TTL that is no number: both told": (
        with_templates({"Worker": writing_to(MOUNT)}, {ASK: "logs", TTL: "1h"}),
        [("metadata.annotations[tfop.kubeflow.org/tensorboard]: must be the absolute path of the job's log "
         "directory, such as /logs, not 'logs'"),
         ("metadata.annotations[tfop.kubeflow.org/tensorboard-ttl-seconds]: must be a whole number of seconds "
         "from 0 to 2592000, not '1h'")]),
}


@pytest.mark.parametrize(("job", "expected"), ASKS.values(), ids=ASKS.keys())
def test_the_ask_finds_the_volume_the_replicas_write_the_logs_to(
        job: dict[str, Any], expected: TensorBoardAsk | list[str] | None) -> None:
    ask, errors = tensorboard_ask(job, SETTINGS)
    if isinstance(expected, list):
        assert (ask, [str(error) for error in errors]) == (None, expected)
    else:
        assert (ask, errors) == (expected, [])


def test_the_configs_image_wins_over_the_jobs() -> None:
    ask, _ = tensorboard_ask(with_templates({"Worker": writing_to(MOUNT)}, {ASK: "/logs"}),
                             TensorBoardSettings(image="example.org/tensorboard:2", ttl_seconds=60))
    assert ask is not None and (ask.image, ask.ttl_seconds) == ("example.org/tensorboard:2", 60)


REAL_NODES = {"tfop.local/real-node": "true"}
TOLERATION = {"key": "tfop.local/real-node", "operator": "Exists", "effect": "NoSchedule"}


def test_the_configs_placement_wins_over_the_jobs_own() -> None:
    """The job's nodeSelector and tolerations are for its training; the TensorBoard goes where the config says,
    beside the pod fields it takes from the job."""
    job = with_templates({"Worker": writing_to(MOUNT, nodeSelector={"accelerator": "a100"},
                                               tolerations=[{"key": "gpu", "operator": "Exists"}],
                                               securityContext={"runAsUser": 1000})}, {ASK: "/logs"})
    ask, _ = tensorboard_ask(job, TensorBoardSettings(node_selector=REAL_NODES, tolerations=(TOLERATION,)))
    assert ask == TensorBoardAsk("/logs", 3600, IMAGE, PVC, RO, {
        "securityContext": {"runAsUser": 1000}, "nodeSelector": REAL_NODES, "tolerations": [TOLERATION]})
    ask, _ = tensorboard_ask(job, SETTINGS)
    assert ask == TensorBoardAsk("/logs", 3600, IMAGE, PVC, RO, {"securityContext": {"runAsUser": 1000}})


def claim(asked: list[str], bound: list[str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "mnist-logs"}, "spec": {"accessModes": asked},
            **({"status": {"accessModes": bound}} if bound is not None else {})}


ON_GPUS = writing_to(MOUNT, nodeSelector={"accelerator": "a100"}, tolerations=[{"key": "gpu", "operator": "Exists"}])
PLACED = TensorBoardSettings(node_selector=REAL_NODES, tolerations=(TOLERATION,))
CONFIGS_NODES = TensorBoardAsk("/logs", 3600, IMAGE, PVC, RO, {"nodeSelector": REAL_NODES,
                                                               "tolerations": [TOLERATION]})
BESIDE_THE_JOB = TensorBoardAsk("/logs", 3600, IMAGE, PVC, RO, {
    "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": "mnist"}}}]}},
    "tolerations": [{"key": "gpu", "operator": "Exists"}]})
CLAIMS: dict[str, tuple[dict[str, dict[str, Any]], TensorBoardAsk]] = {
    "a claim the cache does not hold: the config's nodes": ({}, CONFIGS_NODES),
    "ReadWriteMany: the config's nodes": ({"mnist-logs": claim(["ReadWriteMany"])}, CONFIGS_NODES),
    "asked ReadWriteOnce, bound to a volume many nodes may mount: the config's nodes": (
        {"mnist-logs": claim(["ReadWriteOnce"], ["ReadWriteOnce", "ReadWriteMany"])}, CONFIGS_NODES),
    "ReadOnlyMany beside ReadWriteOnce: the config's nodes": (
        {"mnist-logs": claim(["ReadWriteOnce", "ReadOnlyMany"])}, CONFIGS_NODES),
    "ReadWriteOnce: beside the job's pods, tolerating what they do": (
        {"mnist-logs": claim(["ReadWriteOnce"])}, BESIDE_THE_JOB),
    "ReadWriteOnce as bound, though it asked for none (a claim made before its modes were checked)": (
        {"mnist-logs": claim([], ["ReadWriteOnce"])}, BESIDE_THE_JOB),
    "another claim of the namespace is no matter": ({"other": claim(["ReadWriteOncePod"])}, CONFIGS_NODES),
    "ReadWriteOncePod: the replica holds it, so none is made": (
        {"mnist-logs": claim(["ReadWriteOncePod"])},
        TensorBoardAsk("/logs", 3600, problem="the Worker's container 'tensorflow' mounts volume 'logs' at /logs: "
                                              "claim 'mnist-logs', ReadWriteOncePod, which only one pod may mount "
                                              "at a time; put the log directory on a claim other pods can mount "
                                              "too, such as a ReadWriteMany one")),
}


@pytest.mark.parametrize(("claims", "expected"), CLAIMS.values(), ids=CLAIMS.keys())
def test_a_claim_one_node_holds_puts_the_tensorboard_beside_the_job(claims: dict[str, dict[str, Any]],
                                                                    expected: TensorBoardAsk) -> None:
    ask, errors = tensorboard_ask(with_templates({"Worker": ON_GPUS}, {ASK: "/logs"}), PLACED, claims)
    assert (ask, errors) == (expected, [])


def test_an_invalid_ask_fails_the_job_as_every_annotation_does() -> None:
    assert [str(e) for e in tensorboard_ask(with_templates({"Worker": writing_to(MOUNT)}, {ASK: "/a/../b"}),
                                            SETTINGS)[1]] == [str(FieldError(
        "metadata.annotations[tfop.kubeflow.org/tensorboard]",
        "must be the absolute path of the job's log directory, such as /logs, not '/a/../b'"))]


CONFIGS = {
    "left out": ({}, TensorBoardSettings("", 3600)),
    "both": ({"tensorboard": {"image": "tb:1", "ttlSeconds": 0}}, TensorBoardSettings("tb:1", 0)),
    "a pool of nodes, its taint tolerated": (
        {"tensorboard": {"nodeSelector": {"pool": "tools"}, "tolerations": [
            {"key": "pool", "operator": "Equal", "value": "tools", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 30}]}},
        TensorBoardSettings(node_selector={"pool": "tools"}, tolerations=(
            {"key": "pool", "operator": "Equal", "value": "tools", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 30}))),
}


@pytest.mark.parametrize(("document", "expected"), CONFIGS.values(), ids=CONFIGS.keys())
def test_the_config_file(document: dict[str, Any], expected: TensorBoardSettings) -> None:
    assert parse_config(document).tensorboard == expected


def test_the_config_refuses_a_ttl_beyond_thirty_days() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"tensorboard": {"ttlSeconds": 2592001}})
    assert str(refused.value) == ("tensorboard.ttlSeconds must be a whole number of seconds from 0 to 2592000, "
                                  "not 2592001")


REFUSED = {
    "a selector's value that is no string": (
        {"nodeSelector": {"pool": 1}},
        "tensorboard.nodeSelector must map label names to values (strings), not 'pool': 1"),
    "tolerations that are no list": ({"tolerations": {"key": "a"}}, "tensorboard.tolerations must be a list, not dict"),
    "a toleration's unknown key": (
        {"tolerations": [{"key": "a", "operater": "Exists"}]},
        ("tensorboard.tolerations[0] has unknown key 'operater': a toleration has key, operator, value, effect "
         "and tolerationSeconds")),
    "an operator of neither kind": (
        {"tolerations": [{"key": "a", "operator": "In"}]},
        "tensorboard.tolerations[0].operator must be Equal or Exists, not 'In'"),
    "Exists with a value": (
        {"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]},
        "tensorboard.tolerations[0] has operator Exists and a value: an Exists toleration takes none"),
    "an effect Kubernetes has not": (
        {"tolerations": [{"key": "a", "effect": "NoRun"}]},
        "tensorboard.tolerations[0].effect must be NoSchedule, PreferNoSchedule or NoExecute, not 'NoRun'"),
    "seconds that are no whole number": (
        {"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": "30"}]},
        "tensorboard.tolerations[0].tolerationSeconds must be a whole number of seconds, not '30'"),
}


@pytest.mark.parametrize(("tensorboard", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_the_config_refuses_a_placement_that_would_fail_every_tensorboard(tensorboard: dict[str, Any],
                                                                          message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"tensorboard": tensorboard})
    assert str(refused.value) == message


def asking(**annotations: str) -> dict[str, Any]:
    return with_templates({"Chief": writing_to(MOUNT), "Worker": writing_to()}, {ASK: "/logs", **annotations})


def suspended(job: dict[str, Any], *, suspend: bool) -> dict[str, Any]:
    job = suspended_status(job)
    job["spec"] = {**job["spec"], "runPolicy": {"suspend": suspend}}
    return job


PREFIX = "/namespaces/ns/tfjobs/mnist/tensorboard"
LABELS = {"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/runtime-id": RID,
          "training.kubeflow.org/operator-name": "tfjob-controller", "app.kubernetes.io/managed-by": "tfop"}
OWNER = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist", "uid": "uid-1", "controller": True,
         "blockOwnerDeletion": True}
# TensorBoard's main as tfop ships it, run from its text (the file, read here as it is in the checkout).
SERVER_TEXT = (Path(__file__).resolve().parents[2] / "tfop" / "psserver" / "tensorboard_server.py").read_text()
POD_LABELS = {"tfop.kubeflow.org/tensorboard-of": "mnist", "training.kubeflow.org/runtime-id": RID}
DEPLOYMENT_SPEC = {
    "replicas": 1, "selector": {"matchLabels": POD_LABELS},
    "template": {"metadata": {"labels": POD_LABELS}, "spec": {
        "automountServiceAccountToken": False, "enableServiceLinks": False,
        "containers": [{
            "name": "tensorboard", "image": IMAGE,
            "command": ["python", "-c", SERVER_TEXT, "--logdir", "/logs", "--bind_all", "--port", "6006",
                        "--path_prefix", PREFIX],
            "ports": [{"name": "http", "containerPort": 6006}],
            "readinessProbe": {"httpGet": {"path": f"{PREFIX}/", "port": "http"}},
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
            "volumeMounts": [RO]}],
        "volumes": [PVC]}}}
SERVICE_SPEC = {"type": "ClusterIP", "selector": POD_LABELS,
                "ports": [{"name": "http", "port": 6006, "targetPort": "http"}]}


def test_the_deployment_and_the_service_as_sent() -> None:
    job = parsed(asking())
    assert TENSORBOARD_KIND.body(job) == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": TB, "namespace": "ns", "labels": LABELS, "ownerReferences": [OWNER]},
        "spec": DEPLOYMENT_SPEC}
    assert TENSORBOARD_SERVICE_KIND.body(job) == {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": TB, "namespace": "ns", "labels": {**LABELS, "tfop.kubeflow.org/tensorboard-of": "mnist"},
                     "ownerReferences": [OWNER]},
        "spec": SERVICE_SPEC}


STORED_SERVICE = {**SERVICE_SPEC, "clusterIP": "198.18.96.7", "sessionAffinity": "None",
                  "ports": [{"name": "http", "port": 6006, "targetPort": "http", "protocol": "TCP"}]}
DRIFTS: dict[str, tuple[dict[str, Any], bool]] = {
    "as made, with what the apiserver adds": (STORED_SERVICE, False),
    "a port changed by hand": ({**STORED_SERVICE, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
                               True),
    "a port added by hand": ({**STORED_SERVICE, "ports": [*STORED_SERVICE["ports"], {"name": "x", "port": 1}]},
                             True),
    "the selector changed": ({**STORED_SERVICE, "selector": {"app": "other"}}, True),
}


@pytest.mark.parametrize(("stored", "patched"), DRIFTS.values(), ids=DRIFTS.keys())
def test_the_in_line_check(stored: dict[str, Any], patched: bool) -> None:
    assert contains(stored, SERVICE_SPEC) is not patched
    assert drift(stored, SERVICE_SPEC) == ({"spec": SERVICE_SPEC} if patched else None)


def own(kind: str, *, spec: dict[str, Any], terminating: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": TB, "namespace": "ns", "uid": f"{kind}-uid"}
    if terminating:
        metadata["deletionTimestamp"] = "2026-11-21T09:00:00Z"
    return {"metadata": metadata, "spec": spec}


BOTH = {TENSORBOARD: [own(TENSORBOARD, spec=DEPLOYMENT_SPEC)],
        TENSORBOARD_SERVICE: [own(TENSORBOARD_SERVICE, spec=STORED_SERVICE)]}
FINISHED_AT = "2026-11-21T09:00:00Z"  # an hour before NOW
REPLICAS = {"Chief": 1, "Worker": 1}


def succeeded(job: dict[str, Any]) -> dict[str, Any]:
    return {**job, "status": {"conditions": [{"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded"}],
                              "completionTime": FINISHED_AT, "startTime": "2026-11-21T08:00:00Z"}}


@dataclass(frozen=True)
class Row:
    job: dict[str, Any]
    own: dict[str, list[dict[str, Any]]]
    pods: list[dict[str, Any]] = field(default_factory=lambda: running_pods(REPLICAS))
    create: list[tuple[str, str]] = field(default_factory=list)
    delete: list[tuple[str, str]] = field(default_factory=list)
    patch: list[str] = field(default_factory=list)
    requeue_after: float | None = None
    condition: tuple[str, str] | None = None  # the TensorBoard condition's (status, reason)
    warning: str = ""  # the Warning event told
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)  # the cached claims the plan is handed


NOT_SHARED = ("No TensorBoard is made for the log directory /logs: the Chief's container 'tensorflow' mounts volume "
              "'logs' at /logs: an emptyDir, which only its own pod sees; put the log directory on a volume other "
              "pods can mount too, such as a PersistentVolumeClaim.")


def on_empty_dir() -> dict[str, Any]:
    return running(with_templates({"Chief": writing_to(MOUNT, volumes=[{"name": "logs", "emptyDir": {}}]),
                                   "Worker": writing_to()}, {ASK: "/logs"}))


def with_condition(job: dict[str, Any], message: str) -> dict[str, Any]:
    status = job["status"]
    return {**job, "status": {**status, "conditions": [*status["conditions"], {
        "type": "TensorBoard", "status": "False", "reason": "TensorBoardLogDirNotShared", "message": message,
        "observedGeneration": 1, "lastTransitionTime": "2026-11-21T10:00:00Z",
        "lastUpdateTime": "2026-11-21T10:00:00Z"}]}}


ROWS = {
    "running, none yet: both made": Row(running(asking()), {}, create=[(TENSORBOARD, TB), (TENSORBOARD_SERVICE, TB)]),
    "running, both there and in line: nothing to do": Row(running(asking()), BOTH),
    "running, the Service's port changed by hand: patched back": Row(running(asking()), {
        **BOTH, TENSORBOARD_SERVICE: [own(TENSORBOARD_SERVICE, spec={**STORED_SERVICE, "ports": [{"port": 80}]})]},
        patch=[TENSORBOARD_SERVICE]),
    "running, the annotation removed: both go": Row(running(with_templates(
        {"Chief": writing_to(MOUNT), "Worker": writing_to()}, {})), BOTH,
        delete=[(TENSORBOARD, TB), (TENSORBOARD_SERVICE, TB)]),
    "running, the Deployment's name still held by the one being deleted: not made, and the replicas do not wait":
        Row(running(asking()), {TENSORBOARD: [own(TENSORBOARD, spec=DEPLOYMENT_SPEC, terminating=True)]}, pods=[],
            create=[(TENSORBOARD_SERVICE, TB), *[(kind, f"mnist-{t}-{RID}-0") for kind in (POD, SERVICE)
                                                 for t in ("chief", "worker")]]),
    "running, the log directory on an emptyDir: none made, the condition and a Warning say why": Row(
        on_empty_dir(), {}, condition=("False", "TensorBoardLogDirNotShared"), warning=NOT_SHARED),
    "running, the same problem told already: the condition stays, no second Warning": Row(
        with_condition(on_empty_dir(), NOT_SHARED), {}, condition=("False", "TensorBoardLogDirNotShared")),
    "running, the problem mended: the condition goes, both made": Row(
        with_condition(running(asking()), NOT_SHARED), {}, create=[(TENSORBOARD, TB), (TENSORBOARD_SERVICE, TB)]),
    "running, its claim ReadWriteOncePod: none made, the condition and a Warning say why": Row(
        running(asking()), {}, claims={"mnist-logs": claim(["ReadWriteOncePod"])},
        condition=("False", "TensorBoardLogDirNotShared"), warning=(
            "No TensorBoard is made for the log directory /logs: the Chief's container 'tensorflow' mounts volume "
            "'logs' at /logs: claim 'mnist-logs', ReadWriteOncePod, which only one pod may mount at a time; put the "
            "log directory on a claim other pods can mount too, such as a ReadWriteMany one.")),
    "running, both there, its claim seen ReadWriteOnce since: the Deployment patched beside the job's pods": Row(
        running(asking()), BOTH, claims={"mnist-logs": claim(["ReadWriteOnce"])}, patch=[TENSORBOARD]),
    "suspended: both go": Row(suspended(asking(), suspend=True), BOTH, pods=[],
                              delete=[(TENSORBOARD, TB), (TENSORBOARD_SERVICE, TB)]),
    "finished an hour ago, a TTL of two: kept, looked at again when it ends": Row(
        succeeded(asking(**{TTL: "7200"})), BOTH, pods=[], requeue_after=3600.0),
    "finished an hour ago, the default TTL of an hour: both go": Row(
        succeeded(asking()), BOTH, pods=[], delete=[(TENSORBOARD, TB), (TENSORBOARD_SERVICE, TB)]),
    "finished, none there: none made after the end": Row(succeeded(asking(**{TTL: "7200"})), {}, pods=[]),
    "finished with an invalid TTL: the config's default read": Row(
        succeeded(asking(**{TTL: "soon"})), BOTH, pods=[], delete=[(TENSORBOARD, TB), (TENSORBOARD_SERVICE, TB)]),
}


def plan_row(row: Row) -> Plan:
    services = services_for(REPLICAS) if row.pods else []
    return plan(PlanContext(row.job, {POD: row.pods, SERVICE: services, **row.own}, NOW, ControllerConfig(),
                            claims=row.claims))


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_made_while_the_job_runs_and_kept_for_its_ttl(row: Row) -> None:
    result = plan_row(row)
    assert [(creation.kind, creation.name) for creation in result.create] == row.create
    assert [(ref.kind, ref.name) for ref in result.delete] == row.delete
    assert [patch.kind for patch in result.patch] == row.patch
    if row.requeue_after is not None:
        assert result.requeue_after == row.requeue_after
    conditions = result.status.to_json().get("conditions", []) if result.status is not None else \
        row.job["status"]["conditions"]
    assert next(((c["status"], c["reason"]) for c in conditions if c["type"] == "TensorBoard"), None) == row.condition
    assert [event.message for event in result.events if event.type == "Warning"] == (
        [row.warning] if row.warning else [])


def test_a_pod_of_the_tensorboard_is_no_replica() -> None:
    """Its pods carry neither the job-name nor the operator-name label: the job's pod informer never sees them."""
    spec = TENSORBOARD_KIND.wanted(parsed(asking()))
    assert spec is not None
    assert not {"training.kubeflow.org/job-name", "training.kubeflow.org/operator-name"} & set(
        spec["template"]["metadata"]["labels"])
