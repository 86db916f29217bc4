"""The one create-patch-delete policy of a job's own children (plan/policies/job_children.py), on a kind declared
here as one entry and nothing else (a Dashboard: a Deployment named `{job}-dash`): whatever the kind, what the
policy makes, patches, deletes and waits for, in each state the job can be in. Every expected row is written out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from support.plan_builders import NOW, RID, T0, make_job, parsed
from tfop.controller.plan.children.job_child import JobChildKind, JobState
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.plan.draft import PlanDraft
from tfop.controller.plan.policies.job_children import OwnChild, keep_job_child, settle_job_child
from tfop.controller.plan.types import PlanContext
from tfop.objects import Object

RUNNING, QUEUED, SUSPENDED, FINISHED, KEPT = (JobState.RUNNING, JobState.QUEUED, JobState.SUSPENDED,
                                              JobState.FINISHED, JobState.FINISHED_PODS_KEPT)
DASHBOARD = "Dashboard"
NAME = "mnist-dash"
SPEC = {"replicas": 1, "paused": False}
OTHER_SPEC = {"replicas": 2, "paused": False}
SHAPE = {"replicas": 1, "paused": True}  # what `replaced` says cannot be patched: a different `paused`


def in_line(stored: Mapping[str, Any], wanted: Object) -> Object | None:
    return None if dict(stored) == wanted else {"spec": wanted}


def dashboard(wants: Object | None = None, *, kept_in: frozenset[JobState] = frozenset({RUNNING}),
              ttl: int | None = None, replaceable: bool = False) -> JobChildKind:
    """The whole declaration of a kind: its entry."""
    return JobChildKind(
        DASHBOARD, "apps", "v1", "deployments", cached=("spec",), kept_in=kept_in,
        name=lambda job: f"{job.name}-dash", wanted=lambda job: wants, drift=in_line,
        replaced=(lambda stored, wanted: stored.get("paused") != wanted.get("paused")) if replaceable else None,
        object_kind="Deployment", finished_ttl=None if ttl is None else lambda job, config: ttl)


def stored(name: str = NAME, spec: Object | None = None, *, terminating: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if terminating:
        metadata["deletionTimestamp"] = T0
    return {"kind": "Deployment", "metadata": metadata, "spec": SPEC if spec is None else spec}


@dataclass(frozen=True)
class Row:
    kind: JobChildKind
    state: JobState
    children: list[dict[str, Any]]
    completed: timedelta | None = None  # how long ago the job finished
    create: list[str] = field(default_factory=list)
    patch: list[tuple[str, Object]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    requeue: float | None = None
    # What a running job's plan found: the name of the one it keeps (None: none), whether its name is held by one
    # being deleted. None in the other states, where the policy finds nothing.
    own: tuple[str | None, bool] | None = None


WANTS = dashboard(SPEC)
ROWS = {
    # running: made, kept in line, the others deleted
    "running, none there: made": Row(WANTS, RUNNING, [], create=[NAME], own=(None, False)),
    "running, in line: nothing to do": Row(WANTS, RUNNING, [stored()], own=(NAME, False)),
    "running, drifted: patched back": Row(
        WANTS, RUNNING, [stored(spec=OTHER_SPEC)], patch=[(NAME, {"spec": SPEC})], own=(NAME, False)),
    "running, a stray of another name beside it: the stray deleted": Row(
        WANTS, RUNNING, [stored("mnist-old"), stored()], delete=["mnist-old"], own=(NAME, False)),
    "running, one of another name only: it is deleted, the wanted one made": Row(
        WANTS, RUNNING, [stored("mnist-old")], create=[NAME], delete=["mnist-old"], own=(None, False)),
    "running, its name held by one being deleted: not made, waited for": Row(
        WANTS, RUNNING, [stored(terminating=True)], own=(None, True)),
    "running, its name held and a stray: the stray deleted, the name waited for": Row(
        WANTS, RUNNING, [stored(terminating=True), stored("other")], delete=["other"],
        own=(None, True)),
    "running, one being deleted under another name: the wanted one made": Row(
        WANTS, RUNNING, [stored("mnist-old", terminating=True)], create=[NAME], own=(None, False)),
    "running, not wanted: every one deleted": Row(
        dashboard(None), RUNNING, [stored(), stored("other")], delete=[NAME, "other"], own=(None, False)),
    "running, not wanted and none there: nothing": Row(dashboard(None), RUNNING, [], own=(None, False)),
    "running, drifted where it cannot be patched: deleted, its name then waited for": Row(
        dashboard(SPEC, replaceable=True), RUNNING, [stored(spec=SHAPE)], delete=[NAME],
        own=(None, True)),
    "running, drifted where it can be patched: patched": Row(
        dashboard(SPEC, replaceable=True), RUNNING, [stored(spec=OTHER_SPEC)], patch=[(NAME, {"spec": SPEC})],
        own=(NAME, False)),
    # not running: deleted unless kept in the state, never made nor patched
    "suspended, kept only while running: deleted": Row(WANTS, SUSPENDED, [stored(spec=OTHER_SPEC)], delete=[NAME]),
    "queued, kept only while running: deleted, strays too": Row(
        WANTS, QUEUED, [stored(), stored("other")], delete=[NAME, "other"]),
    "suspended, kept in every state: left as it is, drifted or not": Row(
        dashboard(SPEC, kept_in=frozenset(JobState)), SUSPENDED, [stored(spec=OTHER_SPEC)]),
    "suspended, none there: nothing made": Row(WANTS, SUSPENDED, []),
    "suspended, one being deleted already: not deleted again": Row(WANTS, SUSPENDED, [stored(terminating=True)]),
    "finished, kept only while running: deleted": Row(WANTS, FINISHED, [stored()], timedelta(0), delete=[NAME]),
    "finished, pods kept, kept in that state: left": Row(
        dashboard(SPEC, kept_in=frozenset({RUNNING, KEPT})), KEPT, [stored()], timedelta(hours=1)),
    "finished, pods kept, not kept in that state: deleted": Row(
        dashboard(SPEC, kept_in=frozenset({RUNNING, FINISHED})), KEPT, [stored()], timedelta(0), delete=[NAME]),
    "finished, kept for a TTL of 600 s, 100 s ago: left, looked at again when it passes": Row(
        dashboard(SPEC, kept_in=frozenset({RUNNING, FINISHED}), ttl=600), FINISHED, [stored()],
        timedelta(seconds=100), requeue=500.0),
    "finished, kept for a TTL of 600 s, 600 s ago: deleted": Row(
        dashboard(SPEC, kept_in=frozenset({RUNNING, FINISHED}), ttl=600), FINISHED, [stored()],
        timedelta(seconds=600), delete=[NAME]),
    "finished, kept for a TTL, none there: nothing to wait for": Row(
        dashboard(SPEC, kept_in=frozenset({RUNNING, FINISHED}), ttl=600), FINISHED, [], timedelta(seconds=100)),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_one_policy_for_any_kind_of_the_jobs_own(row: Row) -> None:
    raw = make_job()
    context = PlanContext(raw, {DASHBOARD: row.children}, NOW, ControllerConfig())
    draft = PlanDraft(raw, NOW, ControllerConfig())
    own: OwnChild | None = None
    if row.state is RUNNING:
        own = keep_job_child(draft, parsed(raw), context, row.kind)
    else:
        completed: datetime | None = None if row.completed is None else NOW - row.completed
        settle_job_child(draft, context, row.kind, row.state, completed)
    assert [(creation.kind, creation.slot, creation.name) for creation in draft.create] == [
        (DASHBOARD, None, name) for name in row.create]
    assert [(patch.kind, patch.name, patch.patch) for patch in draft.patch] == [
        (DASHBOARD, name, body) for name, body in row.patch]
    assert [(ref.kind, ref.name, ref.uid) for ref in draft.delete] == [
        (DASHBOARD, name, f"uid-{name}") for name in row.delete]
    assert draft.requeue_after == row.requeue
    found = None if own is None else (own.current.name if own.current is not None else None, own.name_taken)
    assert found == row.own

def test_its_body_is_the_entrys() -> None:
    """The shared body: apiVersion, the object kind, the name, the job's labels and owner, the wanted spec."""
    body = WANTS.body(parsed(make_job()))
    assert body == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": "ns",
                     "labels": {"training.kubeflow.org/job-name": "mnist", "training.kubeflow.org/runtime-id": RID,
                                "training.kubeflow.org/operator-name": "tfjob-controller",
                                "app.kubernetes.io/managed-by": "tfop"},
                     "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                                          "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}]},
        "spec": SPEC}
    with pytest.raises(ValueError, match="mnist wants no Dashboard"):
        dashboard(None).body(parsed(make_job()))
