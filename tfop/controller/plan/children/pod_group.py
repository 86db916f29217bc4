"""Gang scheduling: the PodGroup a job's pods are scheduled as one, and what its pods carry to join it.

The gang schedulers tfop knows are plan/gang_schedulers.py's; the two out of tree read the group's minMember (how
many pods must fit at once) and minResources (what they need together), Kubernetes' own its gang minCount
(children/native_gang.py). The group is one entry of the job's own children
(children/job_child.py): the shared policy makes it, keeps it in line and deletes it; what its phase means is
policies/gang.py's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from tfop.api.constants import (
    REPLICA_TYPES,
)
from tfop.api.fields import items, mapping, text
from tfop.controller.plan.children.job_child import JobChildKind, JobState
from tfop.controller.plan.children.native_gang import join_native_gang, native_drift, native_replaced, native_spec
from tfop.controller.plan.gang_schedulers import GANG_SCHEDULER_PLUGINS, GangScheduler
from tfop.controller.plan.job.model import SchedulingPolicy, TFJobSpec
from tfop.controller.plan.observed.own_child import OwnedView
from tfop.controller.plan.quantity import QuantityError, format_quantity, parse_quantity
from tfop.controller.plan.types import POD_GROUP
from tfop.objects import Object

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"  # scheduler-plugins: the pod's group, by name
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
PHASE_PENDING = "Pending"


def pod_group_name(job_name: str) -> str:
    """One group per job, named after it: a pod names its group, so the name must be known before either exists."""
    return job_name


def gang_size(job: TFJobSpec) -> int:
    """How many pods must fit at once: schedulingPolicy.minAvailable, else every replica (so it follows a resize)."""
    policy = job.run_policy.scheduling_policy or SchedulingPolicy()
    min_available = policy.min_available
    return min_available if min_available is not None and min_available > 0 else len(_pods_in_order(job))


def pod_group_spec(job: TFJobSpec, gang: GangScheduler) -> Object:
    """The spec the job's PodGroup should have."""
    if gang.native:
        return native_spec(gang_size(job), _template_priority_class(job))
    policy = job.run_policy.scheduling_policy or SchedulingPolicy()
    pods = _pods_in_order(job)
    min_member = gang_size(job)
    spec: Object = {"minMember": min_member}
    given = policy.min_resources
    if given:
        spec["minResources"] = {name: _canonical(value) for name, value in sorted(given.items())}
    else:
        total = sum_resources(pod_requests(pod) for pod in pods[:min_member])
        if total:
            spec["minResources"] = {name: format_quantity(amount) for name, amount in sorted(total.items())}
    queue = policy.queue
    if gang.queues and queue:
        spec["queue"] = queue
    priority_class = policy.priority_class or _template_priority_class(job)
    if gang.queues and priority_class:
        spec["priorityClassName"] = priority_class
    timeout = policy.schedule_timeout_seconds
    if gang.schedule_timeout and timeout is not None and timeout > 0:
        spec["scheduleTimeoutSeconds"] = timeout
    return spec


def pod_group_kind(gang: GangScheduler) -> JobChildKind:
    """The job's PodGroup as one of its own children, for the configured gang scheduler: kept while the job runs
    and, once it finished, while cleanPodPolicy None keeps its pods (a pod still running keeps its group)."""
    return JobChildKind(
        POD_GROUP, gang.group, gang.version, gang.plural,
        cached=("spec", "status"),  # its status: the phase and what the scheduler says (policies/gang.py)
        kept_in=frozenset({JobState.RUNNING, JobState.FINISHED_PODS_KEPT}),
        name=lambda job: pod_group_name(job.name), wanted=lambda job: pod_group_spec(job.spec, gang),
        drift=native_drift if gang.native else lambda stored, wanted: spec_drift(wanted, stored),
        replaced=native_replaced if gang.native else None)


def spec_drift(wanted: Object, current: Mapping[str, Any]) -> Object | None:
    """The merge patch that brings the cached group to `wanted`, or None if it has it. Fields the operator does
    not set (a scheduler's or a webhook's defaults, e.g. Volcano's queue) are left alone; fields it set before and
    no longer wants are removed."""
    patch: Object = {key: value for key, value in wanted.items() if current.get(key) != value}
    for key in ("minResources", "priorityClassName", "scheduleTimeoutSeconds"):  # never queue: Volcano defaults it
        if key not in wanted and key in current:
            patch[key] = None
    if isinstance(patch.get("minResources"), dict):
        # A merge patch merges maps: resources no longer wanted are removed explicitly.
        old = mapping(current.get("minResources"))
        patch["minResources"] = {**{name: None for name in old if name not in wanted["minResources"]},
                                 **wanted["minResources"]}
    return {"spec": patch} if patch else None


def join_gang(pod: Object, job_name: str, replica_type: str, gang: GangScheduler) -> None:
    """What a pod carries to be scheduled with its group (in place)."""
    spec = pod["spec"]
    if not spec.get("schedulerName"):
        spec["schedulerName"] = gang.scheduler_name
    metadata = pod["metadata"]
    if gang.native:
        join_native_gang(pod, pod_group_name(job_name))
    elif gang.name == GANG_SCHEDULER_PLUGINS:
        metadata["labels"][POD_GROUP_LABEL] = job_name
    else:
        metadata["annotations"] = {**mapping(metadata.get("annotations")), VOLCANO_GROUP_ANNOTATION: job_name,
                                   VOLCANO_TASK_ANNOTATION: replica_type.lower()}


def admission_wait(group: OwnedView | None, gang: GangScheduler) -> str | None:
    """Why the job's pods may not be created yet, or None. Only Volcano holds them, until it admits the group."""
    if not gang.pods_wait_for_admission:
        return None
    if group is None:
        return "is not created yet"
    if group.phase not in ("", PHASE_PENDING):
        return None
    return f"is {group.phase or PHASE_PENDING}" + _scheduler_says(group)


def _scheduler_says(group: OwnedView) -> str:
    """The newest message a scheduler left in the group's conditions."""
    said = [condition.message for condition in group.conditions if condition.message]
    return f" ({said[-1]})" if said else ""


# --- what a pod requests, counted as the scheduler counts it -----------------------------------------------------

def pod_requests(pod_spec: Object) -> dict[str, Fraction]:
    """A pod's effective request per resource, as kube-scheduler computes it: the larger of the containers' sum
    (with the restartable init containers, sidecars, that run beside them) and the largest regular init container
    (plus the sidecars started before it), plus the pod's overhead. A container's request is its limit where it
    gives no request (the apiserver defaults it so)."""
    containers: dict[str, Fraction] = sum_resources(_container_requests(c) for c in items(pod_spec.get("containers")))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for init in items(pod_spec.get("initContainers")):
        requests = _container_requests(init)
        if mapping(init).get("restartPolicy") == "Always":
            sidecars = sum_resources([sidecars, requests])
            continue
        for name, amount in sum_resources([sidecars, requests]).items():
            init_peak[name] = max(init_peak.get(name, Fraction(0)), amount)
    running = sum_resources([containers, sidecars])
    effective = {name: max(running.get(name, Fraction(0)), init_peak.get(name, Fraction(0)))
                 for name in {*running, *init_peak}}
    return sum_resources([effective, _quantities(pod_spec.get("overhead"))])


def sum_resources(resource_lists: Any) -> dict[str, Fraction]:
    total: dict[str, Fraction] = defaultdict(Fraction)
    for resources in resource_lists:
        for name, amount in resources.items():
            total[name] += amount
    return {name: amount for name, amount in total.items() if amount}


def _container_requests(container: object) -> dict[str, Fraction]:
    resources = mapping(mapping(container).get("resources"))
    return {**_quantities(resources.get("limits")), **_quantities(resources.get("requests"))}


def _quantities(resource_list: object) -> dict[str, Fraction]:
    parsed: dict[str, Fraction] = {}
    for name, value in mapping(resource_list).items():
        try:
            parsed[str(name)] = parse_quantity(value)
        except QuantityError:
            continue  # the apiserver refuses such a pod; the refusal, not the group, tells the user
    return parsed


def _canonical(value: object) -> str:
    try:
        return format_quantity(parse_quantity(value))
    except QuantityError:
        return str(value)


def _pods_in_order(job: TFJobSpec) -> list[Object]:
    """The pod spec of every replica, chief first (the order the minAvailable first pods are counted in)."""
    specs = job.replica_specs
    return [mapping(specs[replica_type].template.get("spec"))
            for replica_type in REPLICA_TYPES if replica_type in specs
            for _ in range(specs[replica_type].replicas)]


def _template_priority_class(job: TFJobSpec) -> str | None:
    for replica_type in REPLICA_TYPES:
        if replica_type in job.replica_specs:
            name = text(mapping(job.replica_specs[replica_type].template.get("spec")).get("priorityClassName"))
            if name:
                return name
    return None
