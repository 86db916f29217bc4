"""Which lane of the work queue a job's next pass waits in, as TFJobController.reconcile says it: rows of what the
cache shows and what the apiserver answers, and the Result written out. A recording client stands in for the
apiserver and the caches are filled by hand, as the informers would fill them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from support.plan_builders import JOB_NAME, UID, make_job, make_pod, make_service
from tfop.controller.children import TFJOBS, child_id
from tfop.controller.plan.controller_config import ControllerConfig
from tfop.controller.reconciler import TFJobController
from tfop.kube.client import KubeClient
from tfop.kube.clock import FakeClock
from tfop.kube.errors import Invalid
from tfop.kube.events import EventRecorder
from tfop.kube.lanes import Lane
from tfop.kube.resource import NODES, PODS, SERVICES, Resource
from tfop.kube.runtime import Result
from tfop.metrics import OperatorMetrics

KEY = f"ns/{JOB_NAME}"
REPLICAS = {"Worker": 2, "PS": 1}


class Apiserver:
    """Answers writes as the apiserver would, or refuses every create with `refuse`; keeps what was created. With
    `finalizer`, what is deleted stays, marked, as a finalizer would keep it."""

    def __init__(self) -> None:
        self.refuse: Exception | None = None
        self.finalizer: str | None = None
        self.created: list[tuple[str, dict[str, Any]]] = []

    def create(self, resource: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        if self.refuse is not None and resource in (PODS, SERVICES):
            raise self.refuse
        self.created.append((body.get("kind", ""), body))
        return body

    def replace(self, resource: Resource, name: str, body: dict[str, Any], namespace: str | None = None, *,
                subresource: str | None = None) -> dict[str, Any]:
        version = int(body["metadata"]["resourceVersion"]) + 1
        return {**body, "metadata": {**body["metadata"], "resourceVersion": str(version)}}

    def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
               grace_period_seconds: int | None = None, **options: Any) -> dict[str, Any]:
        """The object as it was removed (a grace period of 0, no finalizer), or as it stays, marked."""
        grace = 30 if grace_period_seconds is None else grace_period_seconds
        return {"metadata": {"name": name, "deletionGracePeriodSeconds": grace,
                             "finalizers": [self.finalizer] if self.finalizer else None}}


def controller() -> tuple[TFJobController, Apiserver]:
    server = Apiserver()
    client = cast(KubeClient, server)
    recorder = EventRecorder(client, "tfop-test", clock=FakeClock(), host="test")
    return TFJobController(client, recorder, config=ControllerConfig(), clock=FakeClock(),
                           metrics=OperatorMetrics.create(CollectorRegistry())), server


def cache(tfjobs: TFJobController, *objects: dict[str, Any]) -> None:
    """What the informers would hold: the job, and children owned by it."""
    for obj in objects:
        if obj.get("kind") == "TFJob":
            tfjobs.runtime.store(TFJOBS, "ns").upsert({**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}})
            continue
        owner = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": JOB_NAME, "uid": UID, "controller": True}
        owned = {**obj, "metadata": {**obj["metadata"], "ownerReferences": [owner]}}
        tfjobs.runtime.store(PODS if obj["kind"] == "Pod" else SERVICES, "ns").upsert(owned)


def running_job(policy: str | None = None, failed_worker: bool = False) -> list[dict[str, Any]]:
    pods = [make_pod("Worker", 0), make_pod("Worker", 1, "Failed", exit_code=137) if failed_worker
            else make_pod("Worker", 1), make_pod("PS", 0)]
    services = [make_service(replica_type, index) for replica_type, count in REPLICAS.items()
                for index in range(count)]
    return [make_job(REPLICAS, policy=policy), *pods, *services]


def a_new_job(tfjobs: TFJobController, server: Apiserver) -> None:
    cache(tfjobs, make_job(REPLICAS))


def created_not_seen(tfjobs: TFJobController, server: Apiserver) -> None:
    a_new_job(tfjobs, server)
    tfjobs.reconcile(KEY)


def created_and_seen(tfjobs: TFJobController, server: Apiserver) -> None:
    created_not_seen(tfjobs, server)
    for kind, body in server.created:
        cache(tfjobs, {**body, "metadata": {**body["metadata"], "uid": f"uid-{kind}-{body['metadata']['name']}"}})
        tfjobs.expectations.created(KEY, child_id(kind, body["metadata"]["name"]))


def all_running(tfjobs: TFJobController, server: Apiserver) -> None:
    cache(tfjobs, *running_job())


def a_worker_failed(tfjobs: TFJobController, server: Apiserver) -> None:
    cache(tfjobs, *running_job("ExitCode", failed_worker=True))  # 137: retryable, the pod is recreated


def its_delete_not_seen(tfjobs: TFJobController, server: Apiserver) -> None:
    a_worker_failed(tfjobs, server)
    tfjobs.reconcile(KEY)


def a_workers_node_out_of_service(tfjobs: TFJobController, server: Apiserver) -> None:
    """Worker 1's node is declared down: its pod is force-deleted, and replaced in the same pass if removed."""
    objects = running_job()
    for pod in objects[1:4]:
        pod["spec"] = {"nodeName": "rack-1" if pod["metadata"]["name"].endswith("worker-jje2-1") else "rack-0"}
    cache(tfjobs, *objects)
    nodes = tfjobs.runtime.store(NODES, "")
    nodes.upsert({"metadata": {"name": "rack-0", "resourceVersion": "1"},
                  "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    nodes.upsert({"metadata": {"name": "rack-1", "resourceVersion": "1"},
                  "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}]},
                  "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})


def its_pod_held_by_a_finalizer(tfjobs: TFJobController, server: Apiserver) -> None:
    server.finalizer = "example.com/hold"
    a_workers_node_out_of_service(tfjobs, server)


def creates_refused(tfjobs: TFJobController, server: Apiserver) -> None:
    server.refuse = Invalid(422, "Invalid", "Pod is invalid: spec.containers[0].env[0].name")
    a_new_job(tfjobs, server)


def the_job_is_gone(tfjobs: TFJobController, server: Apiserver) -> None:
    created_not_seen(tfjobs, server)
    tfjobs.runtime.store(TFJOBS, "ns").delete(KEY)


PRIORITY, NORMAL = Lane.PRIORITY, Lane.NORMAL
ROWS: list[tuple[str, Callable[[TFJobController, Apiserver], None], Result]] = [
    ("a new job: its pass creates every child, the next only observes", a_new_job, Result(None, PRIORITY)),
    ("its creates not seen yet: a pass that only waits", created_not_seen, Result(None, PRIORITY)),
    ("its creates seen, pods pending: the status may wait 5 s", created_and_seen, Result(5.0, PRIORITY)),
    ("every replica running: nothing to create", all_running, Result(None, PRIORITY)),
    ("a failed worker deleted: the next pass creates its replacement", a_worker_failed, Result(None, NORMAL)),
    ("that delete not seen yet: still the normal lane", its_delete_not_seen, Result(None, NORMAL)),
    ("a worker's node lost: its pod removed and replaced in one pass, that delete yet to be seen",
     a_workers_node_out_of_service, Result(None, NORMAL)),
    ("the apiserver refused a create: plan again at once", creates_refused, Result(0.0, NORMAL)),
    ("the job is gone: nothing to remember", the_job_is_gone, Result(None, NORMAL)),
]


@pytest.mark.parametrize(("given", "expected"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_the_lane_of_the_next_pass(given: Callable[[TFJobController, Apiserver], None], expected: Result) -> None:
    tfjobs, server = controller()
    given(tfjobs, server)
    assert tfjobs.reconcile(KEY) == expected


@pytest.mark.parametrize(("given", "expected"), [
    (a_workers_node_out_of_service, [("Pod", "mnist-worker-jje2-1")]),
    (its_pod_held_by_a_finalizer, []),  # its name is still taken, and its process not proven gone
], ids=["removed by its forced delete: replaced in the same pass", "held by a finalizer: not yet"])
def test_a_lost_replica_is_replaced_in_the_pass_that_removed_its_pod(
        given: Callable[[TFJobController, Apiserver], None], expected: list[tuple[str, str]]) -> None:
    tfjobs, server = controller()
    given(tfjobs, server)
    tfjobs.reconcile(KEY)
    assert [(kind, body["metadata"]["name"]) for kind, body in server.created if kind != "Event"] == expected
