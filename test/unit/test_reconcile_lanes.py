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
from tfop.kube.resource import PODS, SERVICES, Resource
from tfop.kube.runtime import Result
from tfop.metrics import OperatorMetrics

KEY = f"ns/{JOB_NAME}"
REPLICAS = {"Worker": 2, "PS": 1}


class Apiserver:
    """Answers writes as the apiserver would, or refuses every create with `refuse`; keeps what was created."""

    def __init__(self) -> None:
        self.refuse: Exception | None = None
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

    def delete(self, resource: Resource, name: str, namespace: str | None = None, **options: Any) -> None:
        return None


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
    ("the apiserver refused a create: plan again at once", creates_refused, Result(0.0, NORMAL)),
    ("the job is gone: nothing to remember", the_job_is_gone, Result(None, NORMAL)),
]


@pytest.mark.parametrize(("given", "expected"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_the_lane_of_the_next_pass(given: Callable[[TFJobController, Apiserver], None], expected: Result) -> None:
    tfjobs, server = controller()
    given(tfjobs, server)
    assert tfjobs.reconcile(KEY) == expected
