"""Kubernetes' own gang scheduling (scheduling.k8s.io/v1beta1, read in k8s.io/api v0.37.2): the job's PodGroup as
kube-scheduler's GangScheduling plugin reads it, and what a pod carries to join it.

What the API allows, and so what is kept in line: a group's gang policy is set when it is made and never after,
its minCount may change (the scheduler re-queues the waiting pods when it falls), and its priorityClassName is
fixed. A pod names its group in spec.schedulingGroup.podGroupName, also fixed once the pod exists. The scheduler
refuses a group whose pods' priority differs from the group's, so the group takes the priority class the pods
carry (the first template's), not schedulingPolicy.priorityClass, which the pods never get.

tfop makes the PodGroup alone, with no Workload: kube-scheduler reads only PodGroups (a Workload is the template a
controller makes PodGroups from, and workloadRef is optional).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfop.api.fields import mapping, text
from tfop.controller.plan.observed.own_child import OwnedView
from tfop.objects import Object

INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"  # the condition kube-scheduler writes on the group
# The phases tfop tells from that condition (the API's PodGroup has no status.phase).
PHASE_SCHEDULED = "Scheduled"
PHASE_UNSCHEDULABLE = "Unschedulable"


def native_spec(min_count: int, priority_class: str | None) -> Object:
    spec: Object = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return spec


def min_count_of(spec: Mapping[str, Any]) -> int | None:
    count = mapping(mapping(mapping(spec.get("schedulingPolicy")).get("gang"))).get("minCount")
    return count if isinstance(count, int) else None


def native_drift(current: Mapping[str, Any], wanted: Object) -> Object | None:
    """The merge patch of the one field that may change, minCount; None when it is as wanted."""
    count = min_count_of(wanted)
    if min_count_of(current) == count:
        return None
    return {"spec": {"schedulingPolicy": {"gang": {"minCount": count}}}}


def native_replaced(current: Mapping[str, Any], wanted: Object) -> bool:
    """Whether the stored group differs where the API lets nothing change: no gang policy (a group someone else made
    under the job's name), or another priority class."""
    return (min_count_of(current) is None
            or (text(current.get("priorityClassName")) or "") != (text(wanted.get("priorityClassName")) or ""))


def join_native_gang(pod: Object, group_name: str) -> None:
    pod["spec"]["schedulingGroup"] = {"podGroupName": group_name}


def native_phase(group: OwnedView) -> str:
    """The group's state as a phase: Scheduled once kube-scheduler placed the whole gang, Unschedulable while it
    cannot, "" before it tried."""
    condition = next((c for c in reversed(group.conditions) if c.type == INITIALLY_SCHEDULED), None)
    if condition is None:
        return ""
    return PHASE_SCHEDULED if condition.status == "True" else PHASE_UNSCHEDULABLE
