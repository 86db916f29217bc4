"""The table of a job's own children: the kinds of which it has at most one, each one entry
(children/job_child.py). The planner's shared policy (policies/job_children.py), the bodies (children/desired.py),
the wiring's informers and writer (controller/children.py) and the operator's RBAC rules (hack/gen_rbac.py) all
read it; adding such a kind is its module and one line here.
"""

from __future__ import annotations

from tfop.controller.plan.children.autoscaler import AUTOSCALER_KIND
from tfop.controller.plan.children.disruption_budget import DISRUPTION_BUDGET_KIND
from tfop.controller.plan.children.job_child import JobChildKind
from tfop.controller.plan.children.network_policy import NETWORK_POLICY_KIND
from tfop.controller.plan.children.pod_group import pod_group_kind
from tfop.controller.plan.children.tensorboard import TENSORBOARD_KIND, TENSORBOARD_SERVICE_KIND
from tfop.controller.plan.children.workload import WORKLOAD_KIND
from tfop.controller.plan.gang_schedulers import GangScheduler


def job_child_kinds(gang: GangScheduler | None, *, own_kueue: bool = False) -> tuple[JobChildKind, ...]:
    """In the order they are made, before any replica's children: the PodGroup, only with a gang scheduler (the
    pods name it); the NetworkPolicy, the HPA, the PodDisruptionBudget and the TensorBoard's Deployment and
    Service, whatever the config, since any job may ask for one; the Kueue Workload with tfop's own Kueue
    integration (the operator may have no RBAC for it otherwise)."""
    return (*([pod_group_kind(gang)] if gang is not None else []), NETWORK_POLICY_KIND, AUTOSCALER_KIND,
            DISRUPTION_BUDGET_KIND, TENSORBOARD_KIND, TENSORBOARD_SERVICE_KIND,
            *([WORKLOAD_KIND] if own_kueue else []))
