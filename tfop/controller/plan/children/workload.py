"""The Kueue Workload of a queued job, for tfop's own Kueue integration (the operator config's `kueue.integration:
own`), and what an admission puts on the pods tfop makes.

One pod set per replica type the job has pods of, named as Kueue's TFJob adapter names them (the type in lower
case: chief, worker, ps, evaluator), with its count and the pod template tfop makes that type's pods from before
any admission (the user's template and the replica's restartPolicy; not TF_CONFIG, which only names peers and
would make a Workload of thousands of replicas as large as their pods, nor the accelerators' env and host
volumes, which ask for nothing). Kueue counts quota from the templates' requests and matches flavors against their
node selectors.

Named after the job and its runtime id, so a job deleted and created again never meets its predecessor's
Workload; owned by the job (controller), so the garbage collector deletes it with the job. A Workload's pod sets
cannot change once created (Kueue's webhook), so a job whose queue, WorkloadPriorityClass or replica counts change gets
a new one: the entry's `replaced` check (policies/job_children.py deletes it and makes it again once it is gone).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tfop.api.constants import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, ReplicaType
from tfop.api.fields import items, mapping, mapping_at
from tfop.api.kueue import KUEUE_GROUP, KUEUE_VERSION, prebuilt_workload
from tfop.api.runtime_id import runtime_id
from tfop.controller.plan.children.job_child import JobChildKind, JobState
from tfop.controller.plan.children.restart_policy import pod_restart_policy
from tfop.controller.plan.job.model import WORKLOAD_PRIORITY_CLASS, JobMeta, TFJobModel
from tfop.controller.plan.types import WORKLOAD
from tfop.objects import Object

POD_PRIORITY_GROUP = "scheduling.k8s.io"  # a PriorityClass's API group, as a Workload's priorityClassRef names it
# Topology-aware scheduling: what a pod template asks (Kueue's annotations, read into the pod set's request), and
# what the pods of a pod set whose admission has a topology assignment carry, so that Kueue's topology ungater
# finds them (the pod set's label, the Workload's annotation), holds them (the gate) and, ungating each, puts the
# node labels of its domain in its node selector.
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
POD_SET_LABEL = "kueue.x-k8s.io/podset"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
# A priority class the job names and the cache lacks (a typo, or one not applied yet): the Workload, which needs
# its value, is looked for again this soon, by a queued job and by one MultiKueue dispatches alike.
PRIORITY_CLASS_RETRY_SECONDS = 5.0

def workload_name(job: JobMeta) -> str:
    """A copy MultiKueue dispatched to this cluster has the Workload MultiKueue made for it (prebuilt)."""
    return job.prebuilt_workload or f"tfjob-{job.name}-{runtime_id(job.uid)}"


def handed_over_workload(job: Object) -> str | None:
    """The prebuilt Workload of a copy MultiKueue dispatched here: MultiKueue deletes it once it read that the job
    finished (its Finished condition, policies/multikueue.py), so tfop never does."""
    return prebuilt_workload(job)


def pod_set_name(replica_type: str) -> str:
    return replica_type.lower()


def pod_set_template(job: TFJobModel, replica_type: ReplicaType) -> Object:
    """The pod template of one replica type as tfop makes its pods before an admission is applied: metadata
    only labels and annotations (all a Workload's template may have)."""
    replica = job.spec.replica_specs[replica_type]
    template = copy.deepcopy(replica.template)
    template_metadata = mapping(template.get("metadata"))
    spec = mapping(template.get("spec"))
    spec["restartPolicy"] = pod_restart_policy(replica.restart_policy)
    labels = {**mapping(template_metadata.get("labels")), LABEL_JOB_NAME: job.metadata.name,
              LABEL_REPLICA_TYPE: replica_type.lower()}
    metadata: Object = {"labels": labels}
    if template_metadata.get("annotations"):
        metadata["annotations"] = dict(mapping(template_metadata.get("annotations")))
    return {"metadata": metadata, "spec": spec}


def wanted_workload(job: TFJobModel) -> Object | None:
    """The Workload's spec for a job queued by tfop's own integration; None for any other job, and for one whose
    priority class is not known yet (no Workload is made without its priority)."""
    options = job.options
    if options.own_queue is None:
        return None
    spec: Object = {"queueName": options.own_queue}
    ref = options.own_priority_class
    if ref is not None:
        if options.own_priority is None:
            return None
        group = KUEUE_GROUP if ref.kind == WORKLOAD_PRIORITY_CLASS else POD_PRIORITY_GROUP
        spec["priorityClassRef"] = {"group": group, "kind": ref.kind, "name": ref.name}
        spec["priority"] = options.own_priority
    else:
        # Kueue's own job integrations always write a priority, 0 without a class, and Kueue relies on it: v0.19's
        # visibility server dereferences it, and one Workload without it fails its LocalQueue's whole answer.
        spec["priority"] = 0
    spec["podSets"] = [{"name": pod_set_name(replica_type), "count": replica.replicas,
                        "template": (template := pod_set_template(job, replica_type)),
                        "topologyRequest": topology_request(mapping_at(template, "metadata", "annotations"))}
                       for replica_type, replica in job.spec.replica_specs.items() if replica.replicas > 0]
    return spec


def topology_request(annotations: Mapping[str, Any]) -> Object:
    """A pod set's topology request, as Kueue's job integrations make it from the template's annotations: the
    level its pods must (required) or should (preferred) share, or none at all (unconstrained), the first of those
    the template has; and always the label that numbers its pods, by which Kueue ranks them into domains."""
    request: Object = {"podIndexLabel": LABEL_REPLICA_INDEX}
    if isinstance(required := annotations.get(REQUIRED_TOPOLOGY), str):
        request["required"] = required
    elif isinstance(preferred := annotations.get(PREFERRED_TOPOLOGY), str):
        request["preferred"] = preferred
    elif isinstance(unconstrained := annotations.get(UNCONSTRAINED_TOPOLOGY), str):
        request["unconstrained"] = unconstrained.lower() == "true"
    return request


def workload_shape(spec: Mapping[str, Any]) -> tuple[object, ...]:
    """What tfop cannot change in a stored Workload: its queue, WorkloadPriorityClass and pod sets (names,
    counts). A PriorityClass is not part of it: like Kueue, tfop reads one when it makes the Workload and keeps
    it (a PriorityClass's value cannot change; a new global default does not move a queued or running job)."""
    pod_sets = [mapping(pod_set) for pod_set in items(spec.get("podSets"))]
    ref = mapping(spec.get("priorityClassRef"))
    workload_class = ref.get("name") if ref.get("kind") == WORKLOAD_PRIORITY_CLASS else None
    return (spec.get("queueName"), workload_class,
            tuple((pod_set.get("name"), pod_set.get("count")) for pod_set in pod_sets))


def _replaced(stored: Mapping[str, Any], wanted: Object) -> bool:
    return workload_shape(stored) != workload_shape(wanted)


WORKLOAD_KIND = JobChildKind(
    WORKLOAD, KUEUE_GROUP, KUEUE_VERSION, "workloads",
    # Its status is what Kueue decided (admission, eviction); its pod templates are kept too, small beside pods.
    cached=("spec", "status"),
    kept_in=frozenset({JobState.RUNNING, JobState.QUEUED}),
    name=workload_name, wanted=wanted_workload,
    drift=lambda stored, wanted: None,  # what may change (the priority's value) is Kueue's to keep in line
    replaced=_replaced, others_seen=True, kept_first=True, handed_over=handed_over_workload)


@dataclass(frozen=True, slots=True)
class PodSetPlacement:
    """What an admission puts on one replica type's pods: its flavors' node labels as node selector and their
    tolerations, and what admission checks add. Added to the pod as tfop makes it, never to the user's spec; a
    key the template sets already keeps the template's value (Kueue refuses to admit a pod set whose template
    contradicts its flavor, so the two agree on any key they share)."""

    node_selector: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tolerations: tuple[Object, ...] = ()
    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    scheduling_gates: tuple[str, ...] = ()  # the topology gate, for Kueue to lift once it placed the pod


def place_pod(pod: Object, placement: PodSetPlacement) -> None:
    """Applies an admission's placement to a pod body being built (metadata and spec are its own copies)."""
    metadata, spec = pod["metadata"], pod["spec"]
    metadata["labels"] = {**placement.labels, **mapping(metadata.get("labels"))}
    metadata["annotations"] = {**placement.annotations, **mapping(metadata.get("annotations"))}
    if placement.node_selector:
        spec["nodeSelector"] = {**placement.node_selector, **mapping(spec.get("nodeSelector"))}
    if placement.tolerations:
        tolerations = list(items(spec.get("tolerations")))
        spec["tolerations"] = tolerations + [dict(t) for t in placement.tolerations if t not in tolerations]
    if placement.scheduling_gates:
        gates = list(items(spec.get("schedulingGates")))
        spec["schedulingGates"] = gates + [{"name": gate} for gate in placement.scheduling_gates
                                           if {"name": gate} not in gates]
