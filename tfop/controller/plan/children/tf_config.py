"""TF_CONFIG, the environment variable that tells each TensorFlow process the cluster and its own task: what
TensorFlow 2's strategies accept (chief, worker, ps and evaluator keys only; the evaluator in the cluster without
counting as a worker), each replica reached by its Service's name and TensorFlow's port.

With enableDynamicWorker the workers and the PS get a sparse cluster, so that workers can come and go without
anyone else's TF_CONFIG changing: a worker knows every PS and itself, a PS only itself, each as a map from its
index (TensorFlow refuses PS j >= 1 given as a one-entry list, "Task 1 was not defined in job ps"). The chief and
the evaluator keep the whole cluster as it was when they started: a ParameterServerStrategy coordinator needs
every worker's address, and is not restarted when workers are added (it tolerates the ones removed)."""

from __future__ import annotations

import json
from typing import Any

from tfop.api.constants import (
    CHIEF_REPLICA_TYPES,
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    REPLICA_PS,
    REPLICA_TYPES,
    REPLICA_WORKER,
)
from tfop.api.fields import items, mapping
from tfop.controller.plan.children.naming import ChildNaming
from tfop.controller.plan.job.model import TFJobSpec
from tfop.objects import Object


def tf_task_type(replica_type: str) -> str:
    """TensorFlow 2 accepts only chief/worker/ps/evaluator (multi_worker_util rejects `master`), so a Master is
    the chief."""
    return "chief" if replica_type in CHIEF_REPLICA_TYPES else replica_type.lower()


def tf_cluster(spec: TFJobSpec, naming: ChildNaming, namespace: str, service_domain: str) -> dict[str, list[str]]:
    """Every replica's address by task type: its Service's name in the job's namespace, and TensorFlow's port."""
    domain = service_domain.strip(".")
    suffix = f".{domain}" if domain else ""
    cluster: dict[str, list[str]] = {}
    for replica_type in REPLICA_TYPES:
        count = spec.replicas(replica_type)
        if count <= 0:
            continue
        port = tf_port(spec.replica_specs[replica_type].template)
        cluster[tf_task_type(replica_type)] = [
            f"{naming.name(replica_type, index)}.{namespace}{suffix}:{port}" for index in range(count)]
    return cluster


def tf_config(cluster: dict[str, list[str]], replica_type: str, index: int, *, sparse: bool = False) -> str:
    """Sorted keys and no spaces: the same job always yields the same pod spec. `sparse`: enableDynamicWorker's
    form for workers and PS (the module's docstring)."""
    given: dict[str, Any] = cluster
    if sparse and replica_type == REPLICA_PS:
        given = {"ps": {str(index): cluster["ps"][index]}}
    elif sparse and replica_type == REPLICA_WORKER:
        given = {"worker": {str(index): cluster["worker"][index]}}
        if cluster.get("ps"):
            given["ps"] = cluster["ps"]
    config = {"cluster": given, "task": {"type": tf_task_type(replica_type), "index": index},
              "environment": "cloud"}
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def cluster_key(spec: TFJobSpec) -> str:
    """What a pod's TF_CONFIG cluster is built from, as recorded on the pod (ANNOTATION_TF_CLUSTER): the replica
    count of each type, e.g. "PS=2,Worker=3". With enableDynamicWorker only the PS count, since the sparse clusters
    of workers and PS name no other worker, and the chief and evaluator keep the cluster they started with. A job of
    one replica has no TF_CONFIG, and its key says so too ("Worker=1"): resized to two, its pod is out of date."""
    counted = (REPLICA_PS,) if spec.enable_dynamic_worker else REPLICA_TYPES
    return ",".join(f"{replica_type}={spec.replicas(replica_type)}" for replica_type in counted
                    if spec.replicas(replica_type) > 0)


def tf_port(template: Object) -> int:
    container = tensorflow_container(template["spec"])
    for port in items(container.get("ports") if container is not None else None):
        if mapping(port).get("name") == DEFAULT_PORT_NAME and isinstance(port.get("containerPort"), int):
            return int(port["containerPort"])
    return DEFAULT_PORT


def tensorflow_container(pod_spec: dict[str, Any]) -> dict[str, Any] | None:
    for container in items(pod_spec.get("containers")):
        if mapping(container).get("name") == DEFAULT_CONTAINER_NAME:
            return container  # type: ignore[no-any-return]
    return None


def set_env(container: dict[str, Any], name: str, value: str) -> None:
    """Replaces any value the user gave: the operator owns TF_CONFIG, and a stale or hand-written cluster would
    make the processes of one job disagree about who their peers are."""
    env = [variable for variable in items(container.get("env")) if mapping(variable).get("name") != name]
    env.append({"name": name, "value": value})
    container["env"] = env
