"""Network isolation, the planner's part for a job's NetworkPolicy (its body: plan/children/network_policy.py; its
annotations: plan/job/annotations.py): made before any replica's children (the applier creates a job's own
children first and stops at a refusal, so no pod of an isolated job is created before it), kept in line with the
annotations while the job runs, and deleted when the switch is turned off."""

from __future__ import annotations

from typing import Any

from tfop.api.fields import mapping, mapping_at
from tfop.controller.plan.children.network_policy import network_policy_name, network_policy_spec
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.status import is_terminating
from tfop.controller.plan.types import NETWORK_POLICY, ChildPatch, Creation, PlanContext


def plan_network_policy(draft: PlanDraft, job: TFJobModel, context: PlanContext) -> None:
    """Creates the policy the job asks for, patches it back in line with the annotations, and deletes any other
    (the switch turned off, a stray), for a job that runs."""
    isolation = job.options.isolation
    name, current = network_policy_name(job.metadata.name, job.metadata.uid), None
    for policy in context.of_kind(NETWORK_POLICY):
        if is_terminating(policy):
            continue
        if isolation.isolated and current is None and mapping_at(policy, "metadata").get("name") == name:
            current = policy
        else:
            draft.delete_child(NETWORK_POLICY, policy)
    if not isolation.isolated:
        return
    wanted = network_policy_spec(job.metadata.name, isolation.peers)
    if current is None:
        draft.create.append(Creation(NETWORK_POLICY, None, name))
    elif _without_empty(mapping(current.get("spec"))) != wanted:
        draft.patch.append(ChildPatch(NETWORK_POLICY, name, {"spec": wanted}))


def _without_empty(value: Any) -> Any:
    """`value` without empty maps and lists in it, as the wanted spec is written (the apiserver may keep an empty
    selector map where the wanted spec has none)."""
    if isinstance(value, dict):
        kept = {key: _without_empty(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in ({}, []) or key.endswith("Selector")}
    if isinstance(value, list):
        return [_without_empty(item) for item in value]
    return value
