"""PlanApplier's writes: a status that may wait is neither written nor announced until it must be, one that may not
goes out at once and ends any wait; quiet events are only logged; a plan's creates and deletes are told in one event
each, with the counts. A recording client stands in for the apiserver, the real EventRecorder (with no
sender thread: it writes on flush) for the events."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any, cast

from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from support.plan_builders import make_job, plan_of
from tfop.controller.apply.applier import PlanApplier
from tfop.controller.children import child_kinds
from tfop.controller.plan.gang_schedulers import gang_scheduler
from tfop.controller.plan.job_status import TFJobStatus
from tfop.controller.plan.slots import ReplicaSlot
from tfop.controller.plan.types import ChildPatch, ChildRef, Creation, JobEvent, Plan, StatusWait
from tfop.kube.client import KubeClient
from tfop.kube.clock import FakeClock
from tfop.kube.errors import NotFound
from tfop.kube.events import EventRecorder
from tfop.kube.expectations import Expectations
from tfop.kube.resource import Resource
from tfop.kube.store import Store
from tfop.metrics import OperatorMetrics

KEY = "ns/mnist"
JOB = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "spec": {},
       "metadata": {"name": "mnist", "namespace": "ns", "uid": "uid-1", "resourceVersion": "7"}}
NOW = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
RUNNING = JobEvent("Normal", "TFJobRunning", "TFJob ns/mnist is running.")


class RecordingClient:
    """Stands in for KubeClient: keeps each write as (verb, resource plural, what)."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, Any]] = []

    def replace(self, resource: Resource, name: str, body: dict[str, Any], namespace: str | None = None, *,
                subresource: str | None = None) -> dict[str, Any]:
        self.writes.append(("replace", f"{resource.plural}/{subresource}", body["status"]))
        return body

    def create(self, resource: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        self.writes.append(("create", resource.plural, (body.get("reason"), body.get("message"))))
        return body

    def delete(self, resource: Resource, name: str, namespace: str | None = None, *, uid: str | None = None,
               propagation_policy: str | None = None, grace_period_seconds: int | None = None) -> dict[str, Any]:
        self.writes.append(("delete", resource.plural, name))
        # As the apiserver answers: the object, marked with the grace period it waits out (0: removed at once).
        grace = 30 if grace_period_seconds is None else grace_period_seconds
        return {"metadata": {"name": name, "uid": uid, "deletionGracePeriodSeconds": grace}}

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *,
              patch_type: str = "merge", subresource: str | None = None) -> dict[str, Any]:
        self.writes.append(("patch", resource.plural, patch))
        return {}


def applier(client: RecordingClient, clock: FakeClock, expectations: Expectations) -> tuple[PlanApplier,
                                                                                              EventRecorder]:
    recorder = EventRecorder(client, "tfop-test", clock=clock, host="test")
    created = Store()

    def cache_of(kind: str, namespace: str) -> Store:
        return created

    metrics = OperatorMetrics.create(CollectorRegistry())
    return PlanApplier(cast(KubeClient, client), recorder, expectations, metrics, cache_of, status_hold=5.0,
                       clock=clock), recorder


def writes_after(recorder: EventRecorder, client: RecordingClient) -> list[tuple[str, str, Any]]:
    assert recorder.flush()
    written, client.writes = client.writes, []
    return written

SUMMARY_2_3 = TFJobStatus.from_json({"replicaSummary": "2/3"})


def test_a_status_waiting_for_creates_is_left_to_the_plan_that_sees_them() -> None:
    client, clock, expectations = RecordingClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    plan = Plan(create=[Creation("Pod", ReplicaSlot("Worker", 0), "mnist-worker-0")],
                status=TFJobStatus.from_json({"state": "Pending"}),
                status_waits=StatusWait.FOR_CREATES, events=[JobEvent("Normal", "TFJobCreated", "created")])
    expectations.expect_creates(KEY, ["Pod/mnist-worker-0"])
    assert apply.record(KEY, JOB, plan, NOW) is None  # no timer: seeing the pod wakes the next plan
    assert writes_after(recorder, client) == []
    # Seen already during the pass: its event queued the job again, and the next plan writes what it sees. (A
    # create refused or failed requeues the job too.)
    expectations.created(KEY, "Pod/mnist-worker-0")
    assert apply.record(KEY, JOB, plan, NOW) is None
    assert writes_after(recorder, client) == []


def test_a_status_that_only_moves_counts_waits_for_the_window_then_goes_out_once() -> None:
    client, clock, expectations = RecordingClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    progress = Plan(status=TFJobStatus.from_json({"replicaSummary": "1/3"}), status_waits=StatusWait.BRIEFLY)
    assert apply.record(KEY, JOB, progress, NOW) == 5.0
    clock.step(3.0)
    assert apply.record(KEY, JOB, Plan(status=SUMMARY_2_3, status_waits=StatusWait.BRIEFLY), NOW) == 2.0
    assert writes_after(recorder, client) == []
    clock.step(2.0)
    assert apply.record(KEY, JOB, Plan(status=SUMMARY_2_3, status_waits=StatusWait.BRIEFLY), NOW) is None
    assert writes_after(recorder, client) == [("replace", "tfjobs/status", {"replicaSummary": "2/3"})]
    assert apply.record(KEY, JOB, progress, NOW) == 5.0  # written: the next one opens a new window


def test_a_state_change_goes_out_at_once_and_ends_the_wait() -> None:
    client, clock, expectations = RecordingClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    assert apply.record(KEY, JOB, Plan(status=SUMMARY_2_3, status_waits=StatusWait.BRIEFLY), NOW) == 5.0
    clock.step(1.0)
    running = Plan(status=TFJobStatus.from_json({"replicaSummary": "3/3", "state": "Running"}), events=[RUNNING])
    assert apply.record(KEY, JOB, running, NOW) is None
    assert writes_after(recorder, client) == [
        ("replace", "tfjobs/status", {"replicaSummary": "3/3", "state": "Running"}),
        ("create", "events", ("TFJobRunning", "TFJob ns/mnist is running."))]
    assert len(apply.held_statuses) == 0


def test_quiet_events_are_logged_and_not_written() -> None:
    client, clock, expectations = RecordingClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    succeeded = JobEvent("Normal", "TFJobSucceeded", "TFJob ns/mnist successfully completed.")
    with capture_logs() as lines:
        apply.record(KEY, JOB, Plan(status=TFJobStatus.from_json({"state": "Succeeded"}), events=[
            JobEvent("Normal", "TFJobRunning", "TFJob ns/mnist is running.", quiet=True), succeeded]), NOW)
    assert writes_after(recorder, client) == [("replace", "tfjobs/status", {"state": "Succeeded"}),
                                              ("create", "events", ("TFJobSucceeded", succeeded.message))]
    assert [line["reason"] for line in lines] == ["TFJobRunning", "TFJobSucceeded"]


def test_a_plans_creates_are_told_in_one_event_with_the_counts_and_replicas() -> None:
    client, clock, expectations = RecordingClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    job = make_job()  # Worker 2, PS 1
    changes = apply.change_children(KEY, job, plan_of(job, [], []))
    assert changes.errors == [] and changes.refusals == []
    written = writes_after(recorder, client)
    assert sorted(what for verb, what, _ in written if verb == "create") == ["events"] + ["pods"] * 3 + ["services"] * 3
    assert [detail for _, what, detail in written if what == "events"] == [
        ("SuccessfulCreate", "Created 3 pods and 3 services for PS 0, Worker 0-1")]


def test_a_plans_deletes_are_told_in_one_event() -> None:
    client, clock, expectations = RecordingClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    refs = [ChildRef("Pod", "mnist-worker-x-1", "p1"), ChildRef("Pod", "mnist-worker-x-2", "p2"),
            ChildRef("Service", "mnist-worker-x-1", "s1"), ChildRef("Service", "mnist-worker-x-2", "s2")]
    apply.change_children(KEY, JOB, Plan(delete=refs))
    assert writes_after(recorder, client)[-1] == (
        "create", "events", ("SuccessfulDelete", "Deleted 2 pods and 2 services: mnist-worker-x-1, mnist-worker-x-2"))


def test_a_plans_patches_go_before_its_deletes_and_creates() -> None:
    """A resize's PodGroup patch (scheduler-plugins') precedes the deletes of the workers it drops and the creates
    of the ones it adds: the group never asks for more pods than exist."""
    client, clock, expectations = RecordingClient(), FakeClock(), Expectations()
    recorder = EventRecorder(client, "tfop-test", clock=clock, host="test")
    apply = PlanApplier(cast(KubeClient, client), recorder, expectations, OperatorMetrics.create(CollectorRegistry()),
                        lambda kind, namespace: Store(), kinds=child_kinds(gang_scheduler("scheduler-plugins")),
                        clock=clock)
    job = make_job()  # Worker 2, PS 1
    shrink = Plan(patch=[ChildPatch("PodGroup", "mnist", {"spec": {"minMember": 2}})],
                  delete=[ChildRef("Pod", "mnist-worker-x-1", "p1"), ChildRef("Service", "mnist-worker-x-1", "s1")])
    apply.change_children(KEY, job, shrink)
    shrunk = [(verb, what) for verb, what, _ in writes_after(recorder, client) if what != "events"]
    # the deletes go together, in no order between them
    assert shrunk[0] == ("patch", "podgroups") and sorted(shrunk[1:]) == [("delete", "pods"), ("delete", "services")]
    grow = plan_of(job, [], [])
    grow.patch.append(ChildPatch("PodGroup", "mnist", {"spec": {"minMember": 3}}))
    apply.change_children(KEY, job, grow)
    assert [verb for verb, what, _ in writes_after(recorder, client) if what != "events"][:2] == ["patch", "create"]


class UnchangedClient(RecordingClient):
    """An apiserver for which the status sent is the one it holds: the answer keeps the resourceVersion."""


class ChangedClient(RecordingClient):
    def replace(self, resource: Resource, name: str, body: dict[str, Any], namespace: str | None = None, *,
                subresource: str | None = None) -> dict[str, Any]:
        super().replace(resource, name, body, namespace, subresource=subresource)
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "8"}}


def test_a_status_write_that_changed_nothing_leaves_nothing_to_wait_for() -> None:
    """The apiserver skips a write that changes nothing: same resourceVersion, no watch event. Waiting for the
    cache to move past version 7 would stall the job until the expectation expires."""
    client, clock, expectations = UnchangedClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    apply.record(KEY, JOB, Plan(status=TFJobStatus.from_json({"state": "Running"})), NOW)
    assert writes_after(recorder, client) == [("replace", "tfjobs/status", {"state": "Running"})]
    assert expectations.satisfied(KEY, "7")


def test_a_status_write_waits_for_the_cache_to_see_its_new_version() -> None:
    client, clock, expectations = ChangedClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    apply.record(KEY, JOB, Plan(status=TFJobStatus.from_json({"state": "Running"})), NOW)
    assert writes_after(recorder, client) == [("replace", "tfjobs/status", {"state": "Running"})]
    assert not expectations.satisfied(KEY, "7")
    assert expectations.satisfied(KEY, "8")


class WaitingDeletes(RecordingClient):
    """An apiserver that answers no delete until `together` of them are in flight, and one delete NotFound."""

    def __init__(self, together: int) -> None:
        super().__init__()
        self.in_flight = threading.Barrier(together, timeout=60.0)  # broken, never hanging, if sent one by one

    def delete(self, resource: Resource, name: str, namespace: str | None = None, *, uid: str | None = None,
               propagation_policy: str | None = None, grace_period_seconds: int | None = None) -> dict[str, Any]:
        self.in_flight.wait()
        if name == "mnist-worker-x-2":
            raise NotFound(404, "NotFound", f'pods "{name}" not found')
        return super().delete(resource, name, namespace, uid=uid, propagation_policy=propagation_policy,
                              grace_period_seconds=grace_period_seconds)


def test_a_plans_deletes_are_sent_together_and_each_answer_counts() -> None:
    """A resize by restart deletes every pod of a job: one round trip for all, not one each."""
    client, clock, expectations = WaitingDeletes(together=3), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    refs = [ChildRef("Pod", "mnist-worker-x-0", "p0", grace_period_seconds=0),
            ChildRef("Pod", "mnist-worker-x-1", "p1"), ChildRef("Pod", "mnist-worker-x-2", "p2")]
    changes = apply.change_children(KEY, JOB, Plan(delete=refs))
    # p0 forced (removed at once), p1 waits out its grace period, p2 was gone already
    assert changes.errors == [] and changes.removed == {"p0", "p2"}
    assert writes_after(recorder, client)[-1] == (
        "create", "events", ("SuccessfulDelete", "Deleted 2 pods: mnist-worker-x-0, mnist-worker-x-1"))
    assert not expectations.satisfied(KEY, "7")  # p0 and p1 are owed their watch events; p2's is not
    expectations.deleted(KEY, "p0")
    expectations.deleted(KEY, "p1")
    assert expectations.satisfied(KEY, "7")


def test_a_retired_pod_is_released_with_its_delete_and_the_others_after_the_status() -> None:
    """A restart together: the peers' finalizers go with their deletes, so their pods can go (and the job start
    again) without waiting for the status; the failed pod's waits for the status that counts its exit."""
    client, clock, expectations = RecordingClient(), FakeClock(), Expectations()
    apply, recorder = applier(client, clock, expectations)
    failed, peer = ChildRef("Pod", "mnist-worker-x-1", "p1"), ChildRef("Pod", "mnist-worker-x-0", "p0")
    plan = Plan(delete=[failed, peer], release=[failed, peer], release_with_delete=frozenset({"p0"}),
                status=TFJobStatus.from_json({"state": "Restarting"}))
    apply.change_children(KEY, JOB, plan)
    apply.record(KEY, JOB, plan, NOW)
    release = {"$deleteFromPrimitiveList/finalizers": ["tfop.kubeflow.org/replica-tracking"]}
    writes = [(verb, what["metadata"]["uid"] if verb == "patch" and {
        key: value for key, value in what["metadata"].items() if key != "uid"} == release else what)
        for verb, plural, what in writes_after(recorder, client) if plural != "events"]
    # The deletes go together, in either order; p0's release follows its own delete, all before the status.
    assert writes[3:] == [("replace", {"state": "Restarting"}), ("patch", "p1")]
    assert sorted(writes[:3]) == [("delete", "mnist-worker-x-0"), ("delete", "mnist-worker-x-1"), ("patch", "p0")]
    assert writes.index(("delete", "mnist-worker-x-0")) < writes.index(("patch", "p0"))
