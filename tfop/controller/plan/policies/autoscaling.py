"""The planner's part for a job's HorizontalPodAutoscaler (its body: plan/children/autoscaler.py): made while a job
whose elasticPolicy has metrics runs, kept in line with the policy, and deleted when the metrics are removed, while
the job is suspended (an HPA would scale a job that has no pods) and once it finished or was rejected (nothing
left to scale, whatever cleanPodPolicy keeps)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from tfop.api.fields import mapping, mapping_at
from tfop.controller.plan.children.autoscaler import autoscaler_spec
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.job.model import TFJobModel
from tfop.controller.plan.quantity import QuantityError, parse_quantity
from tfop.controller.plan.status import is_terminating
from tfop.controller.plan.types import AUTOSCALER, ChildPatch, Creation, PlanContext


def plan_autoscaler(draft: PlanDraft, job: TFJobModel, context: PlanContext) -> None:
    """Creates the HPA the job's elastic policy asks for, patches it back in line, and deletes any other (the
    metrics removed, a stray), for a job that runs."""
    policy = job.spec.elastic_policy
    wanted = policy is not None and bool(policy.metrics)
    name, current = job.metadata.name, None
    for hpa in context.of_kind(AUTOSCALER):
        if is_terminating(hpa):
            continue
        if wanted and current is None and mapping_at(hpa, "metadata").get("name") == name:
            current = hpa
        else:
            draft.delete_child(AUTOSCALER, hpa)
    if policy is None or not wanted:
        return
    spec = autoscaler_spec(name, policy)
    if current is None:
        draft.create.append(Creation(AUTOSCALER, None, name))
    elif not _in_line(mapping(current.get("spec")), spec):
        # A merge patch: the lists (metrics, policies) are replaced whole, and a behavior no longer asked for is
        # removed by its null.
        draft.patch.append(ChildPatch(AUTOSCALER, name, {"spec": {**spec, "behavior": spec.get("behavior")}}))


def remove_autoscaler(draft: PlanDraft, context: PlanContext) -> None:
    """A suspended, finished or rejected job keeps no HPA."""
    for hpa in context.of_kind(AUTOSCALER):
        if not is_terminating(hpa):
            draft.delete_child(AUTOSCALER, hpa)


def _in_line(stored: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether the stored spec says what tfop wrote: every field written holds the same value, and no behavior
    where none was asked for. The apiserver fills in the rest of a behavior (default policies and windows), so
    fields the stored spec has beyond what was written are its defaults, not changes; a field removed from the
    policy's behavior is not told from such a default, and stays until the behavior changes otherwise."""
    if "behavior" not in wanted and stored.get("behavior") is not None:
        return False
    return _covers(stored, wanted)


def _covers(stored: object, wanted: object) -> bool:
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(_covers(stored.get(key), value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return (isinstance(stored, list) and len(stored) == len(wanted)
                and all(_covers(have, want) for have, want in zip(stored, wanted, strict=True)))
    if stored == wanted:
        return True
    # Quantities (a target's value or averageValue) are stored in their canonical form: 1000m reads back as 1.
    return _quantity(stored) is not None and _quantity(stored) == _quantity(wanted)


def _quantity(value: object) -> Fraction | None:
    if not isinstance(value, str | int) or isinstance(value, bool):
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None
