"""The desired Pod (with its TF_CONFIG, tf_config.py) and headless Service of each replica of a TFJob;
DesiredChildren builds every child's body from the parsed job (plan/job/model.py), whose pod templates are passed
through.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from tfop.api.constants import (
    ANNOTATION_TF_CLUSTER,
    CHIEF_REPLICA_TYPES,
    DEFAULT_PORT_NAME,
    FINALIZER_REPLICA_TRACKING,
    JOB_ROLE_MASTER,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_MANAGED_BY,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    LABEL_RUNTIME_ID,
    MANAGED_BY,
    NAMING_RUNTIME_ID,
    OPERATOR_NAME,
    REPLICA_WORKER,
    TF_CONFIG_ENV,
    ReplicaType,
)
from tfop.api.fields import integer, items, mapping, mapping_at
from tfop.api.runtime_id import child_name, runtime_id
from tfop.controller.plan.children.accelerators import apply_accelerators
from tfop.controller.plan.children.batch_job import replica_job
from tfop.controller.plan.children.job_child import owner_reference
from tfop.controller.plan.children.job_children import job_child_kinds
from tfop.controller.plan.children.naming import ChildNaming
from tfop.controller.plan.children.node_loss_tolerations import tolerate_node_loss
from tfop.controller.plan.children.pod_group import join_gang
from tfop.controller.plan.children.progress_reporting import report_progress
from tfop.controller.plan.children.restart_policy import pod_restart_policy
from tfop.controller.plan.children.tf_config import (
    cluster_key,
    set_env,
    tensorflow_container,
    tf_cluster,
    tf_config,
    tf_port,
)
from tfop.controller.plan.children.workload import PodSetPlacement, place_pod
from tfop.controller.plan.controller_config import DEFAULT_SERVICE_DOMAIN, Accelerators, ProgressSettings
from tfop.controller.plan.gang_schedulers import GangScheduler
from tfop.controller.plan.job.default_ps_server import uses_script
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.observed.child import Child
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import JOB, POD, SERVICE
from tfop.objects import Object

PROGRESS_OFF = ProgressSettings()

__all__ = [
    "DesiredChildren", "child_name", "desired_pod", "desired_service",
    "pod_restart_policy", "replica_slot_of",
    "selector_labels", "total_replicas",
]


def total_replicas(job: Object) -> int:
    """The replicas a raw job asks for in all, read leniently (the applier weighs a job's creates by it)."""
    return sum(integer(mapping(replica).get("replicas")) or 0
               for replica in mapping_at(job, "spec", "tfReplicaSpecs").values())


def selector_labels(job_name: str, replica_type: str, runtime_id: str, index: int) -> dict[str, str]:
    """The labels that single out one replica's pod; a Service selects exactly its pod with them."""
    return {
        LABEL_JOB_NAME: job_name,
        LABEL_REPLICA_TYPE: replica_type.lower(),
        LABEL_REPLICA_INDEX: str(index),
        LABEL_RUNTIME_ID: runtime_id,
    }


def replica_slot_of(child: Child) -> ReplicaSlot | None:
    """The slot a Pod or Service fills, read from its replica-type and replica-index labels whatever its name:
    the wiring passes only children this job controls, and those the Kubeflow training operator made fill their
    slots as tfop's own do."""
    return child.slot


class DesiredChildren:
    """Builds the children of one job; what all of them share (TF_CONFIG's cluster, owner, labels) is computed
    once, so building a thousand pods stays linear in the cluster size per pod."""

    def __init__(self, job: TFJobModel, service_domain: str = DEFAULT_SERVICE_DOMAIN,
                 accelerators: Accelerators = MappingProxyType({}), gang: GangScheduler | None = None,
                 naming: ChildNaming | None = None, *, replaces_lost_pods: bool = False,
                 placements: Mapping[str, PodSetPlacement] = MappingProxyType({}),
                 progress: ProgressSettings = PROGRESS_OFF) -> None:
        """`placements`: by replica type, what the Kueue admission of the job's own Workload puts on its pods;
        `progress`: the progress endpoint the pods are given a token and the address of, when it is on."""
        self._job = job
        self._progress = progress
        self._placements = placements
        # tfop replaces the job's pods on lost nodes itself (children/node_loss_tolerations.py)
        self._replaces_lost_pods = replaces_lost_pods
        self._spec = job.spec
        self._gang = gang
        self._accelerators = accelerators
        self._name = job.metadata.name
        self._namespace = job.metadata.namespace
        self._runtime_id = runtime_id(job.metadata.uid)
        self._naming = naming or ChildNaming(NAMING_RUNTIME_ID, self._name, self._runtime_id)
        self._owner = owner_reference(job.metadata)
        self._master = self._master_slot()
        # A lone replica needs no TF_CONFIG; a dynamic job's always gets one, as workers may join it.
        self._cluster = (tf_cluster(job.spec, self._naming, self._namespace, service_domain)
                         if job.spec.total_replicas() > 1 or job.spec.enable_dynamic_worker else None)
        self._cluster_key = cluster_key(job.spec)
        # Whether the job's pods mount the default PS server's script, which must exist in the namespace.
        self.needs_server_script = any(uses_script(mapping(replica.template.get("spec")))
                                       for replica in job.spec.replica_specs.values())

    def body(self, kind: str, slot: ReplicaSlot | None) -> Object:
        """The body of a planned creation (the applier asks as it sends it): a replica's child for its slot, the
        job's own for None."""
        if slot is None:
            own = next((child for child in job_child_kinds(self._gang, own_kueue=True) if child.kind == kind), None)
            if own is None:
                raise ValueError(f"a replica's {kind} needs its slot")
            return own.body(self._job)
        if kind not in _REPLICA_CHILDREN:
            raise ValueError(f"{kind} is not a replica's child")
        return _REPLICA_CHILDREN[kind](self, slot.replica_type, slot.index)

    def pod(self, replica_type: ReplicaType, index: int) -> Object:
        pod = self._replica_pod(replica_type, index)
        # Held until the job's status records how the replica ended (replicas/finished.py); the Job backend's pods
        # are the Job controller's, which has a finalizer of its own.
        pod["metadata"]["finalizers"] = [FINALIZER_REPLICA_TRACKING]
        if self._replaces_lost_pods:
            tolerate_node_loss(pod["spec"])
        return pod

    def _replica_pod(self, replica_type: ReplicaType, index: int) -> Object:
        """The pod of one replica, as the Pods backend creates it and as the Jobs backend's template; tfop's
        node-loss tolerations only for the former, whose pods it replaces under the same name."""
        replica = self._spec.replica_specs[replica_type]
        template = copy.deepcopy(replica.template)
        template_metadata = mapping(template.get("metadata"))
        metadata: dict[str, Any] = {
            "name": self._naming.name(replica_type, index),
            "namespace": self._namespace,
            "labels": {**mapping(template_metadata.get("labels")), **self._labels(replica_type, index)},
            "ownerReferences": [dict(self._owner)],
        }
        metadata["annotations"] = {**mapping(template_metadata.get("annotations")),
                                   ANNOTATION_TF_CLUSTER: self._cluster_key}
        spec = template["spec"]
        spec["restartPolicy"] = pod_restart_policy(replica.restart_policy)
        apply_accelerators(spec, self._accelerators)
        report_progress(spec, self._progress, self._namespace, self._name)
        if self._cluster is not None:
            container = tensorflow_container(spec)
            if container is not None:
                set_env(container, TF_CONFIG_ENV, tf_config(self._cluster, replica_type, index,
                                                            sparse=self._spec.enable_dynamic_worker))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
        placement = self._placements.get(replica_type)
        if placement is not None:
            place_pod(pod, placement)
        if self._gang is not None:
            join_gang(pod, self._name, replica_type, self._gang)
        return pod

    def batch_job(self, replica_type: ReplicaType, index: int) -> Object:
        """The Job backend's Job of one replica: its pod as the template (controller/plan/children/batch_job.py)."""
        return replica_job(self._replica_pod(replica_type, index),
                           self._spec.replica_specs[replica_type].restart_policy, self._spec.run_policy.backoff_limit)

    def service(self, replica_type: ReplicaType, index: int) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": self._naming.name(replica_type, index),
                "namespace": self._namespace,
                "labels": self._labels(replica_type, index),
                "ownerReferences": [dict(self._owner)],
            },
            "spec": {
                "clusterIP": "None",
                "selector": self._naming.selector(replica_type, index),
                "ports": self._service_ports(replica_type),
                # TensorFlow processes dial their peers while starting; a readiness probe in the user's template
                # must not hide a peer's address until it is ready, or the cluster never comes up.
                "publishNotReadyAddresses": True,
            },
        }

    def _labels(self, replica_type: ReplicaType, index: int) -> dict[str, str]:
        labels = {**selector_labels(self._name, replica_type, self._runtime_id, index),
                  **self._naming.selector(replica_type, index)}
        labels[LABEL_OPERATOR_NAME] = OPERATOR_NAME
        labels[LABEL_MANAGED_BY] = MANAGED_BY
        if ReplicaSlot(replica_type, index) == self._master:
            labels[LABEL_JOB_ROLE] = JOB_ROLE_MASTER
        return labels

    def _master_slot(self) -> ReplicaSlot | None:
        """The chief (Chief or Master) if the job has one, else worker 0."""
        for replica_type in (*CHIEF_REPLICA_TYPES, REPLICA_WORKER):
            if self._spec.replicas(replica_type) > 0:
                return ReplicaSlot(replica_type, 0)
        return None

    def _service_ports(self, replica_type: ReplicaType) -> list[dict[str, Any]]:
        """The container's named ports, each number once (the apiserver refuses a Service that repeats one), and
        always the port TF_CONFIG names, so peers can reach it."""
        template = self._spec.replica_specs[replica_type].template
        container = tensorflow_container(template["spec"])
        ports: list[dict[str, Any]] = []
        seen: set[tuple[Any, Any]] = set()
        for port in items(container.get("ports") if container is not None else None):
            if not isinstance(port, dict) or not port.get("name"):
                continue
            number, protocol = port.get("containerPort"), port.get("protocol") or "TCP"
            if (number, protocol) in seen or any(p["name"] == port["name"] for p in ports):
                continue
            seen.add((number, protocol))
            service_port = {"name": port["name"], "port": number, "targetPort": number}
            if port.get("protocol"):
                service_port["protocol"] = port["protocol"]
            ports.append(service_port)
        port_number = tf_port(template)
        if (port_number, "TCP") not in seen:
            # e.g. a PS without a tensorflow container, or TensorFlow's port declared without a name
            ports.append({"name": DEFAULT_PORT_NAME, "port": port_number, "targetPort": port_number})
        return ports


# The body of each replica's kind, by the plan's name for it (plan/types.py); the job's own are its table's.
_REPLICA_CHILDREN: dict[str, Callable[[DesiredChildren, ReplicaType, int], Object]] = {
    POD: DesiredChildren.pod, SERVICE: DesiredChildren.service, JOB: DesiredChildren.batch_job}


def desired_pod(job: TFJobModel, replica_type: ReplicaType, index: int,
                service_domain: str = DEFAULT_SERVICE_DOMAIN) -> Object:
    return DesiredChildren(job, service_domain).pod(replica_type, index)


def desired_service(job: TFJobModel, replica_type: ReplicaType, index: int) -> Object:
    return DesiredChildren(job).service(replica_type, index)
