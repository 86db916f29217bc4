"""Every tfop annotation of a TFJob, each read by one parser here: the value it sets, or a FieldError naming it.

Adding an annotation: its name in tfop/api/constants.py, a field of JobOptions (model.py), a parser here, and
its call in parse.py. A parser falls back to the operator's default when the annotation is absent and reports
an invalid value instead of guessing what was meant.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import timedelta

from tfop.api.constants import (
    ANNOTATION_DISRUPTION_BUDGET,
    ANNOTATION_EVALUATOR_GRACE,
    ANNOTATION_NETWORK_POLICY,
    ANNOTATION_NETWORK_POLICY_FROM,
    ANNOTATION_NODE_LOSS_GRACE,
    ANNOTATION_NODE_LOSS_POLICY,
    ANNOTATION_REPLICA_BACKEND,
    ANNOTATION_RESIZE_REASON,
    ANNOTATION_RESTART_SCOPE,
    ANNOTATION_UNKNOWN_SCHEDULING_GRACE,
    DISRUPTION_BUDGET_NONE,
    DISRUPTION_BUDGETS,
    NETWORK_POLICY_ISOLATED,
    NETWORK_POLICY_MODES,
    NODE_LOSS_POLICIES,
    REPLICA_BACKEND_PODS,
    REPLICA_BACKENDS,
    RESTART_SCOPE_JOB,
    RESTART_SCOPE_REPLICA,
    RESTART_SCOPES,
    DisruptionBudgetPolicy,
    ReplicaBackendName,
    RestartScope,
)
from tfop.api.errors import FieldError
from tfop.api.fields import one_of, text
from tfop.controller.plan.controller_config import NodeLossSettings
from tfop.controller.plan.job.model import CapacityResize, JobNodePolicy, NetworkIsolation
from tfop.controller.plan.job.network_peers import network_peers

Annotations = Mapping[str, object]
_RESIZE_REASON = re.compile(r"^Worker (\d+) -> (\d+): .+", re.DOTALL)
_MAX_SECONDS = 86400.0


def at(annotation: str) -> str:
    """The path a FieldError names for an annotation."""
    return f"metadata.annotations[{annotation}]"


def replica_backend(annotations: Annotations,
                    default: ReplicaBackendName) -> tuple[ReplicaBackendName | None, list[FieldError]]:
    """The backend the job asks for (None when the ask is invalid)."""
    asked = annotations.get(ANNOTATION_REPLICA_BACKEND)
    if asked is None:
        return default, []
    if (backend := one_of(asked, REPLICA_BACKENDS)) is not None:
        return backend, []
    return None, [FieldError(at(ANNOTATION_REPLICA_BACKEND), f"must be one of {', '.join(REPLICA_BACKENDS)}, "
                                                             f"not {asked!r}")]


def restart_scope(annotations: Annotations,
                  backend: ReplicaBackendName | None) -> tuple[RestartScope, list[FieldError]]:
    """Replica unless the job asks for Job, which only the pods backend can do."""
    asked = annotations.get(ANNOTATION_RESTART_SCOPE)
    if asked is None:
        return RESTART_SCOPE_REPLICA, []
    where = at(ANNOTATION_RESTART_SCOPE)
    scope = one_of(asked, RESTART_SCOPES)
    if scope is None:
        return RESTART_SCOPE_REPLICA, [FieldError(where, f"must be one of {', '.join(RESTART_SCOPES)}, not {asked!r}")]
    if scope == RESTART_SCOPE_JOB and backend not in (None, REPLICA_BACKEND_PODS):
        return RESTART_SCOPE_REPLICA, [FieldError(where, f"{RESTART_SCOPE_JOB} needs the pods replica backend, not "
                                                         f"{backend}")]
    return scope, []


def node_policy(annotations: Annotations, settings: NodeLossSettings) -> tuple[JobNodePolicy, list[FieldError]]:
    """The job's node-loss policy and grace, its annotations over the operator's defaults."""
    errors: list[FieldError] = []
    asked = text(annotations.get(ANNOTATION_NODE_LOSS_POLICY)) or settings.policy
    policy = one_of(asked, NODE_LOSS_POLICIES)
    if policy is None:
        errors.append(FieldError(at(ANNOTATION_NODE_LOSS_POLICY), f"must be one of {', '.join(NODE_LOSS_POLICIES)}, "
                                                                  f"not {asked!r}"))
        policy = settings.policy
    grace, grace_errors = seconds(annotations, ANNOTATION_NODE_LOSS_GRACE, settings.grace_seconds)
    return JobNodePolicy(policy, grace), errors + grace_errors


def evaluator_grace(annotations: Annotations, default_seconds: float) -> tuple[timedelta, list[FieldError]]:
    """How long a job whose training succeeded waits for its running evaluators."""
    return seconds(annotations, ANNOTATION_EVALUATOR_GRACE, default_seconds)


def unknown_scheduling_grace(annotations: Annotations, default_seconds: float) -> tuple[timedelta, list[FieldError]]:
    """How long a job waits while its pods name a PriorityClass or a scheduler the cluster lacks."""
    return seconds(annotations, ANNOTATION_UNKNOWN_SCHEDULING_GRACE, default_seconds)


def seconds(annotations: Annotations, annotation: str, default: float) -> tuple[timedelta, list[FieldError]]:
    """A duration from 0 to a day, written as a number of seconds."""
    asked = annotations.get(annotation)
    if asked is None:
        return timedelta(seconds=default), []
    try:
        value = float(str(asked))
    except ValueError:
        value = math.nan
    if not 0 <= value <= _MAX_SECONDS:  # also refuses nan and inf
        return timedelta(seconds=default), [FieldError(at(annotation), f"must be a number of seconds from 0 to "
                                                                       f"86400, not {asked!r}")]
    return timedelta(seconds=value), []


def disruption_budget(annotations: Annotations) -> tuple[DisruptionBudgetPolicy, list[FieldError]]:
    """None (no PodDisruptionBudget) unless the job asks for OneAtATime or NoEviction."""
    asked = annotations.get(ANNOTATION_DISRUPTION_BUDGET)
    if asked is None:
        return DISRUPTION_BUDGET_NONE, []
    policy = one_of(asked, DISRUPTION_BUDGETS)
    if policy is None:
        return DISRUPTION_BUDGET_NONE, [FieldError(at(ANNOTATION_DISRUPTION_BUDGET), (
            f"must be one of {', '.join(DISRUPTION_BUDGETS)}, not {asked!r}"))]
    return policy, []


def network_isolation(annotations: Annotations) -> tuple[NetworkIsolation, list[FieldError]]:
    """Whether the job's pods take connections only from each other, and which peers besides."""
    switch, listed = annotations.get(ANNOTATION_NETWORK_POLICY), annotations.get(ANNOTATION_NETWORK_POLICY_FROM)
    if switch is not None and switch not in NETWORK_POLICY_MODES:
        return NetworkIsolation(), [FieldError(at(ANNOTATION_NETWORK_POLICY), (
            f"must be one of {', '.join(NETWORK_POLICY_MODES)}, not {switch!r}"))]
    isolated = switch == NETWORK_POLICY_ISOLATED
    if listed is None:
        return NetworkIsolation(isolated), []
    where = at(ANNOTATION_NETWORK_POLICY_FROM)
    if not isolated:
        # Peers listed without the switch would leave the job open while its author believes it isolated.
        needs = f"{ANNOTATION_NETWORK_POLICY}: {NETWORK_POLICY_ISOLATED}"
        return NetworkIsolation(), [FieldError(where, f"lists peers to let in, which needs {needs}")]
    try:
        parsed = json.loads(str(listed))
    except ValueError as error:
        return NetworkIsolation(), [FieldError(where, f"must be a JSON list of NetworkPolicyPeers: {error}")]
    if not isinstance(parsed, list):
        kind = {dict: "an object", str: "a string", bool: "a boolean"}.get(type(parsed), "a number or null")
        return NetworkIsolation(), [FieldError(where, f"must be a JSON list of NetworkPolicyPeers, not {kind}")]
    peers, errors = network_peers(parsed, where)
    return (NetworkIsolation(), errors) if errors else (NetworkIsolation(True, peers), [])


def capacity_resize(annotations: Annotations) -> CapacityResize | None:
    """The capacity auto-scaler's note, if the job has one that reads as it writes them. Never an error: the note
    only says who asked, and a resize without a readable one is told as a user's."""
    reason = annotations.get(ANNOTATION_RESIZE_REASON)
    match = _RESIZE_REASON.match(reason) if isinstance(reason, str) else None
    return CapacityResize(int(match[2]), match[0]) if match else None
