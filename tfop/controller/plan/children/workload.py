"""The Kueue Workload of a queued job, for tfop's own Kueue integration (the operator config's `kueue.integration:
own`), and what an admission puts on the pods tfop makes.

One pod set per replica type the job has pods of, named as Kueue's TFJob adapter names them (the type in lower
case: chief, worker, ps, evaluator), with its count and the pod template tfop makes that type's pods from before
any admission (the user's template, the replica's restartPolicy, the configured accelerators' env and volumes;
not TF_CONFIG, which only names peers and would make a Workload of thousands of replicas as large as their
pods). Kueue counts quota from the templates' requests and matches flavors against their node selectors.

Named after the job and its runtime id, so a job deleted and created again never meets its predecessor's
Workload; owned by the job (controller), so the garbage collector deletes it with the job. A Workload's pod sets
cannot change once created (Kueue's webhook), so a job whose queue or replica counts change gets a new one
(policies/kueue_admission.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tfop.api.constants import (
    LABEL_JOB_NAME,
    LABEL_MANAGED_BY,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_TYPE,
    LABEL_RUNTIME_ID,
    MANAGED_BY,
    OPERATOR_NAME,
)
from tfop.api.fields import items, mapping
from tfop.api.kueue import KUEUE_GROUP, KUEUE_VERSION
from tfop.api.runtime_id import runtime_id
from tfop.controller.plan.children.accelerators import apply_accelerators
from tfop.controller.plan.controller_config import Accelerators
from tfop.controller.plan.job.model import JobMeta, TFJobModel
from tfop.objects import Object

API_VERSION = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
KIND = "Workload"


def workload_name(job: JobMeta) -> str:
    return f"tfjob-{job.name}-{runtime_id(job.uid)}"


def pod_set_name(replica_type: str) -> str:
    return replica_type.lower()


def pod_set_counts(job: TFJobModel) -> tuple[tuple[str, int], ...]:
    """(pod set name, count) of each replica type with pods, in the order the spec lists them."""
    return tuple((pod_set_name(replica_type), replica.replicas)
                 for replica_type, replica in job.spec.replica_specs.items() if replica.replicas > 0)


def pod_set_template(job: TFJobModel, replica_type: str, accelerators: Accelerators,
                     restart_policy: str) -> Object:
    """The pod template of one replica type as tfop makes its pods before an admission is applied: metadata
    only labels and annotations (all a Workload's template may have)."""
    template = copy.deepcopy(job.spec.replica_specs[replica_type].template)
    template_metadata = mapping(template.get("metadata"))
    spec = mapping(template.get("spec"))
    spec["restartPolicy"] = restart_policy
    apply_accelerators(spec, accelerators)
    labels = {**mapping(template_metadata.get("labels")), LABEL_JOB_NAME: job.metadata.name,
              LABEL_REPLICA_TYPE: replica_type.lower()}
    metadata: Object = {"labels": labels}
    if template_metadata.get("annotations"):
        metadata["annotations"] = dict(mapping(template_metadata.get("annotations")))
    return {"metadata": metadata, "spec": spec}


def workload(job: TFJobModel, queue: str, owner: Object, templates: Mapping[str, Object],
             priority: int | None = None) -> Object:
    """The body of the job's Workload; `templates`: each replica type's pod template (pod_set_template);
    `priority`: the value of the WorkloadPriorityClass the job names (which Kueue keeps in line afterwards)."""
    spec: Object = {"queueName": queue, "podSets": []}
    if job.options.own_priority_class is not None and priority is not None:
        spec["priorityClassRef"] = {"group": KUEUE_GROUP, "kind": "WorkloadPriorityClass",
                                    "name": job.options.own_priority_class}
        spec["priority"] = priority
    metadata = job.metadata
    pod_sets = [{"name": name, "count": count, "template": templates[replica_type]}
                for (name, count), replica_type in zip(pod_set_counts(job), _types_with_pods(job), strict=True)]
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": workload_name(metadata), "namespace": metadata.namespace,
                         "labels": {LABEL_JOB_NAME: metadata.name, LABEL_RUNTIME_ID: runtime_id(metadata.uid),
                                    LABEL_OPERATOR_NAME: OPERATOR_NAME, LABEL_MANAGED_BY: MANAGED_BY},
                         "ownerReferences": [dict(owner)]},
            "spec": {**spec, "podSets": pod_sets}}


def _types_with_pods(job: TFJobModel) -> list[str]:
    return [replica_type for replica_type, replica in job.spec.replica_specs.items() if replica.replicas > 0]


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
