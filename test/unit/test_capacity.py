"""Table tests of the capacity auto-scaler's decision (tfop/controller/capacity/decide.py): grow into idle capacity,
give up unschedulable extra workers (and grow again only once room is gained or a doubling backoff passed), shrink
for a waiting job, the least fulfilled first, never past the bounds, no growing back while the job shrunk for still
waits, HPA-owned jobs left alone, and nothing when switched off."""

from __future__ import annotations

import gc
import json
import sys
import types
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest

from tfop.controller.cache_transforms import SHARED
from tfop.controller.capacity.cluster import slim_pod, waiting_pods
from tfop.controller.capacity.decide import decide
from tfop.controller.capacity.model import (
    ElasticJob,
    GiveUp,
    Memory,
    NodeRoom,
    Placement,
    Taint,
    WaitingPod,
    frozen,
    pod_request,
)
from tfop.controller.plan.controller_config import CapacityScalingSettings
from tfop.kube.shared_values import SharedValues

NOW = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)
ON = CapacityScalingSettings(enabled=True, grow_after=60, shrink_after=30, give_up_after=120)
CPU = "cpu"


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def cpus(amount: float) -> dict[str, Fraction]:
    return {CPU: Fraction(str(amount))}


def node(name: str, free_cpus: float, **labels: str) -> NodeRoom:
    return NodeRoom(name, cpus(free_cpus), labels)


def job(key: str, workers: int, low: int = 1, high: int = 4, *, cpu: float = 1, age: float = 600,
        hpa: bool = False, steady: bool = True, placement: Placement | None = None) -> ElasticJob:
    return ElasticJob(key, ago(age), low, high, workers, cpus(cpu), placement or Placement(), hpa, steady)


def waits(job_key: str, index: int, seconds: float, *, cpu: float = 1, replica: str = "worker",
          short_of: tuple[str, ...] = (CPU,)) -> WaitingPod:
    return WaitingPod(job_key, replica, index, cpus(cpu), ago(seconds), short_of)


@dataclass(frozen=True)
class Row:
    nodes: list[NodeRoom]
    jobs: list[ElasticJob]
    waiting: list[WaitingPod]
    resizes: list[str]  # "job: reason"
    memory: Memory = field(default_factory=Memory)
    settings: CapacityScalingSettings = ON
    idle_since: datetime | None = None  # what the next look is told


ROWS = {
    "idle capacity, not yet for the window: nothing, the window starts": Row(
        [node("n1", 4)], [job("ns/a", 2)], [], [], idle_since=NOW),
    "idle capacity for the window: the job grows by the workers that fit": Row(
        [node("n1", 2.5)], [job("ns/a", 1)], [], ["ns/a: Worker 1 -> 3: 2 workers fit in capacity idle for 60 s"],
        memory=Memory(idle_since=ago(60))),
    "never above its maximum": Row(
        [node("n1", 16)], [job("ns/a", 2, high=4)], [],
        ["ns/a: Worker 2 -> 4: 2 workers fit in capacity idle for 90 s"],
        memory=Memory(idle_since=ago(90))),
    "a worker fits only whole on one node": Row(
        [node("n1", 1.5), node("n2", 1.5)], [job("ns/a", 1)], [],
        ["ns/a: Worker 1 -> 3: 2 workers fit in capacity idle for 60 s"], memory=Memory(idle_since=ago(60))),
    "nothing fits: no window": Row(
        [node("n1", 0.5)], [job("ns/a", 1)], [], [], memory=Memory(idle_since=ago(60))),
    "the least fulfilled grows first, then the oldest": Row(
        [node("n1", 3)], [job("ns/a", 3, high=4), job("ns/b", 1, high=4, age=100), job("ns/c", 1, high=4, age=200)],
        [], ["ns/b: Worker 1 -> 2: 1 worker fit in capacity idle for 60 s",
             "ns/c: Worker 1 -> 3: 2 workers fit in capacity idle for 60 s"],
        memory=Memory(idle_since=ago(60))),
    "a node the worker's nodeSelector or tolerations rule out has no room for it": Row(
        [node("gpu", 8, pool="gpu"), NodeRoom("tainted", cpus(8), {"pool": "cpu"}, (Taint("t", "x", "NoSchedule"),)),
         node("cpu", 1, pool="cpu")],
        [job("ns/a", 1, placement=Placement(frozen([("pool", "cpu")])))], [],
        ["ns/a: Worker 1 -> 2: 1 worker fit in capacity idle for 60 s"], memory=Memory(idle_since=ago(60))),
    "a tolerated taint does not rule the node out": Row(
        [NodeRoom("tainted", cpus(8), {}, (Taint("t", "x", "NoSchedule"),))],
        [job("ns/a", 3, placement=Placement(tolerations=({"key": "t", "operator": "Exists"},)))], [],
        ["ns/a: Worker 3 -> 4: 1 worker fit in capacity idle for 60 s"], memory=Memory(idle_since=ago(60))),
    "a pod waiting for any reason: capacity is not idle": Row(
        [node("n1", 4)], [job("ns/a", 1)], [waits("ns/b", 0, 5, short_of=())], [], memory=Memory(idle_since=ago(60))),
    "a job resizing: capacity is not idle": Row(
        [node("n1", 4)], [job("ns/a", 1), job("ns/b", 2, steady=False)], [], [], memory=Memory(idle_since=ago(60))),
    "a job with an HPA of its own is left alone": Row(
        [node("n1", 4)], [job("ns/a", 1, hpa=True)], [], [], memory=Memory(idle_since=ago(60))),
    "a job whose minimum is its maximum is left alone": Row(
        [node("n1", 4)], [job("ns/a", 2, low=2, high=2)], [], [], memory=Memory(idle_since=ago(60))),
    "extra workers unschedulable past the window are given up": Row(
        [node("n1", 0)], [job("ns/a", 4)], [waits("ns/a", 2, 130), waits("ns/a", 3, 125)],
        ["ns/a: Worker 4 -> 2: workers 2-3 found no node for 130 s"]),
    "not below the minimum": Row(
        [node("n1", 0)], [job("ns/a", 3, low=2)], [waits("ns/a", 1, 200), waits("ns/a", 2, 200)],
        ["ns/a: Worker 3 -> 2: worker 2 found no node for 200 s"]),
    "an extra worker below a scheduled one is not given up": Row(
        [node("n1", 0)], [job("ns/a", 4)], [waits("ns/a", 2, 200)], []),
    "an extra worker not yet past the window is kept": Row(
        [node("n1", 0)], [job("ns/a", 4)], [waits("ns/a", 3, 100)], []),
    "another job waited for the window: the most fulfilled shrinks by what frees its request": Row(
        [node("n1", 0)], [job("ns/a", 4), job("ns/c", 2)], [waits("ns/b", 0, 31, cpu=2), waits("ns/b", 1, 30)],
        ["ns/a: Worker 4 -> 2: ns/b's pods waited 31 s for cpu",
         "ns/c: Worker 2 -> 1: ns/b's pods waited 31 s for cpu"],
        idle_since=None),
    "equally fulfilled: the newest shrinks first": Row(
        [node("n1", 0)], [job("ns/a", 2, age=500), job("ns/c", 2, age=100)], [waits("ns/b", 0, 40)],
        ["ns/c: Worker 2 -> 1: ns/b's pods waited 40 s for cpu"]),
    "not before the window": Row(
        [node("n1", 0)], [job("ns/a", 4)], [waits("ns/b", 0, 29)], []),
    "not below the minimum, and none when all together cannot make room": Row(
        [node("n1", 0)], [job("ns/a", 3, low=2)], [waits("ns/b", 0, 60, cpu=2)], []),
    "a pod unschedulable for other reasons (a taint) is not shrunk for": Row(
        [node("n1", 0)], [job("ns/a", 4)], [waits("ns/b", 0, 60, short_of=())], []),
    "shrunk for it lately: the room is on its way, no second shrink": Row(
        [node("n1", 0)], [job("ns/a", 3)], [waits("ns/b", 0, 60)], [],
        memory=Memory(shrunk_at=frozen([("ns/b", ago(10))]), shrunk_for=frozen([("ns/a", "ns/b")]))),
    "still waiting a window after the last shrink: shrinks again": Row(
        [node("n1", 0)], [job("ns/a", 3)], [waits("ns/b", 0, 90)],
        ["ns/a: Worker 3 -> 2: ns/b's pods waited 90 s for cpu"],
        memory=Memory(shrunk_at=frozen([("ns/b", ago(40))]), shrunk_for=frozen([("ns/a", "ns/b")]))),
    "the job's own minimum workers waiting make others shrink, its extras do not": Row(
        [node("n1", 0)], [job("ns/a", 4), job("ns/b", 2, low=2, high=4, steady=True)],
        [waits("ns/b", 1, 40)], ["ns/a: Worker 4 -> 3: ns/b's pods waited 40 s for cpu"]),
    "no growing back while the job shrunk for has pods not yet scheduled": Row(
        [node("n1", 4)], [job("ns/a", 2)], [waits("ns/b", 0, 5)], [],
        memory=Memory(idle_since=ago(60), shrunk_for=frozen([("ns/a", "ns/b")]))),
    "the job shrunk for is scheduled: growing back waits a window of idle capacity": Row(
        [node("n1", 4)], [job("ns/a", 2)], [], [],
        memory=Memory(shrunk_for=frozen([("ns/a", "ns/b")])), idle_since=NOW),
    "gave workers up lately, no more room than then: not grown, the scheduler would refuse them again": Row(
        [node("n1", 2)], [job("ns/a", 2)], [], [],
        memory=Memory(idle_since=ago(60), given_up=frozen([("ns/a", GiveUp(ago(100), 1, 2))]))),
    "gave workers up lately, but the nodes have room for more workers than then (a pod ended): grows": Row(
        [node("n1", 3)], [job("ns/a", 2)], [], ["ns/a: Worker 2 -> 4: 2 workers fit in capacity idle for 60 s"],
        memory=Memory(idle_since=ago(60), given_up=frozen([("ns/a", GiveUp(ago(100), 1, 2))]))),
    "gave workers up once, a give-up window ago: grows again": Row(
        [node("n1", 2)], [job("ns/a", 2)], [], ["ns/a: Worker 2 -> 4: 2 workers fit in capacity idle for 60 s"],
        memory=Memory(idle_since=ago(60), given_up=frozen([("ns/a", GiveUp(ago(120), 1, 2))]))),
    "gave workers up twice: the backoff is two windows": Row(
        [node("n1", 2)], [job("ns/a", 2)], [], [],
        memory=Memory(idle_since=ago(60), given_up=frozen([("ns/a", GiveUp(ago(239), 2, 2))]))),
    "gave workers up ten times: the backoff stops doubling at 64 windows": Row(
        [node("n1", 2)], [job("ns/a", 2)], [], ["ns/a: Worker 2 -> 4: 2 workers fit in capacity idle for 60 s"],
        memory=Memory(idle_since=ago(60), given_up=frozen([("ns/a", GiveUp(ago(64 * 120), 10, 2))]))),
    "one job held back does not hold back another": Row(
        [node("n1", 1)], [job("ns/a", 2), job("ns/b", 3)], [],
        ["ns/b: Worker 3 -> 4: 1 worker fit in capacity idle for 60 s"],
        memory=Memory(idle_since=ago(60), given_up=frozen([("ns/a", GiveUp(ago(10), 1, 1))]))),
    "switched off: nothing": Row(
        [node("n1", 4)], [job("ns/a", 1)], [waits("ns/b", 0, 300)], [], memory=Memory(idle_since=ago(600)),
        settings=CapacityScalingSettings(enabled=False)),
}


@pytest.mark.parametrize("row", list(ROWS.values()), ids=list(ROWS))
def test_a_capacity_decision(row: Row) -> None:
    decision = decide(NOW, row.settings, row.nodes, row.jobs, row.waiting, row.memory)
    assert [f"{resize.job}: {resize.reason}" for resize in decision.resizes] == row.resizes
    for resize in decision.resizes:
        elastic = next(job for job in row.jobs if job.key == resize.job)
        assert elastic.min_workers <= resize.after <= elastic.max_workers and resize.before == elastic.workers
    assert decision.memory.idle_since == row.idle_since


def test_a_shrink_is_remembered_and_forgotten_once_the_job_no_longer_waits() -> None:
    shrunk = decide(NOW, ON, [node("n1", 0)], [job("ns/a", 4)], [waits("ns/b", 0, 30)], Memory())
    assert dict(shrunk.memory.shrunk_for) == {"ns/a": "ns/b"} and dict(shrunk.memory.shrunk_at) == {"ns/b": NOW}
    scheduled = decide(NOW, ON, [node("n1", 0)], [job("ns/a", 3)], [], shrunk.memory)
    assert not scheduled.resizes and not scheduled.memory.shrunk_for and not scheduled.memory.shrunk_at


def test_a_give_up_is_remembered_counted_and_forgotten_with_the_job() -> None:
    """The first give-up of ns/a, its second (the backoff doubles), then ns/a gone: its give-ups forgotten."""
    stuck = [waits("ns/a", 3, 130)]
    first = decide(NOW, ON, [node("n1", 1.5), node("n2", 1)], [job("ns/a", 4)], stuck, Memory())
    assert [resize.after for resize in first.resizes] == [3]
    assert dict(first.memory.given_up) == {"ns/a": GiveUp(NOW, 1, 2)}  # a worker fits on each node, as the model sees
    second = decide(NOW, ON, [node("n1", 0)], [job("ns/a", 4)], stuck, first.memory)
    assert dict(second.memory.given_up) == {"ns/a": GiveUp(NOW, 2, 0)}
    gone = decide(NOW, ON, [node("n1", 4)], [job("ns/b", 1)], [], second.memory)
    assert not gone.memory.given_up


@pytest.mark.parametrize(("spec", "request_"), [
    ({"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                     {"resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]},
     {"cpu": Fraction(3, 2), "memory": Fraction(2**30), "nvidia.com/gpu": Fraction(1)}),
    ({"containers": [{"resources": {"requests": {"cpu": "100m"}}}],
      "initContainers": [{"resources": {"requests": {"cpu": "2"}}}], "overhead": {"cpu": "250m"}},
     {"cpu": Fraction(9, 4)}),
    ({"containers": [{"name": "no-resources"}]}, {}),
], ids=["containers-summed-limit-as-request", "init-container-max-plus-overhead", "nothing-requested"])
def test_what_a_pod_requests(spec: dict[str, object], request_: dict[str, Fraction]) -> None:
    assert pod_request(spec) == request_


def a_pod(index: int, *, owner: dict[str, str], node: str | None, waiting_for: str | None = None) -> dict[str, Any]:
    """A pod as the apiserver sends it, with what any workload's pod carries that the auto-scaler never reads."""
    conditions: list[dict[str, object]] = [{"type": "PodScheduled", "status": "True",
                                             "lastTransitionTime": "2026-11-27T10:00:02Z"}]
    if waiting_for is not None:
        conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                       "lastTransitionTime": "2026-11-27T11:59:00Z",
                       "message": f"0/3 nodes are available: 3 Insufficient {waiting_for}. preemption: 0/3 nodes are "
                                  "available: 3 No preemption victims found for incoming pod."}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"web-7d9f8c6b5-{index:05d}", "namespace": f"team-{index % 20}", "uid": f"0c1d2e3f-{index:012d}",
        "resourceVersion": str(100000 + index), "creationTimestamp": "2026-11-27T10:00:00Z",
        "labels": {"app": "web", "training.kubeflow.org/replica-index": str(index),
                   "training.kubeflow.org/replica-type": "worker"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-27T09:00:00Z"},
        "ownerReferences": [{**owner, "uid": "owner-uid", "controller": True, "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:spec": {}}}]},
        "spec": {**({"nodeName": node} if node else {}), "containers": [{
            "name": "web", "image": "nginx:1.27", "env": [{"name": f"E{k}", "value": "x" * 40} for k in range(10)],
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}}]},
        "status": {"phase": "Running" if node else "Pending", "podIP": "198.18.0.7", "conditions": conditions,
                   "containerStatuses": [{"name": "web", "restartCount": 0, "imageID": "sha256:" + "a" * 64,
                                          "state": {"running": {"startedAt": "2026-11-27T10:00:03Z"}}}]}}


REPLICA_SET = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8c6b5"}
A_TFJOB = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "a"}


def test_the_capacity_cache_keeps_of_a_pod_only_what_decisions_read() -> None:
    foreign = slim_pod(a_pod(1, owner=REPLICA_SET, node="n1"))
    assert foreign == {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web-7d9f8c6b5-00001", "namespace": "team-1", "resourceVersion": "100001"}, "capacity": {
        "node": "n1", "phase": "Running", "request": {"cpu": Fraction(1, 4), "memory": Fraction(256 * 2**20)},
        "unscheduled": None}}
    # A TFJob's pod keeps its labels and owner (whose worker it is), and of the scheduler's message only what it
    # said was short.
    ours = slim_pod(a_pod(2, owner=A_TFJOB, node=None, waiting_for="cpu"))
    assert set(ours["metadata"]) == {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels",
                                     "ownerReferences"}
    assert ours["capacity"]["unscheduled"] == {"since": "2026-11-27T11:59:00Z", "short_of": ["cpu"]}
    [waiting] = waiting_pods([ours], {"team-2/a": {}})
    assert (waiting.job, waiting.index, waiting.short_of) == ("team-2/a", 2, ("cpu",))
    # Pods of one template on one node share what the auto-scaler keeps of them.
    assert slim_pod(a_pod(3, owner=REPLICA_SET, node="n1"))["capacity"] is foreign["capacity"]


def retained_bytes(*roots: object) -> int:
    """The bytes of every object reachable from `roots`, each counted once however many refer to it: what they keep
    alive (types, functions and modules, which exist anyway, are not followed)."""
    seen: set[int] = set()
    pending, total = list(roots), 0
    while pending:
        item = pending.pop()
        if id(item) in seen or isinstance(item, type | types.ModuleType | types.FunctionType):
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        pending.extend(gc.get_referents(item))
    return total


def test_the_capacity_cache_of_a_thousand_foreign_pods_stays_small() -> None:
    """The auto-scaler watches every pod of the cluster: what it keeps of one must be a small part of the pod. Counted
    as what the kept pods and the table sharing their parts hold, not as the process's memory grew meanwhile: that
    also counts the interpreter's own tables (its interned strings), which double when they fill, whatever filled
    them: 2.7 or 4.6 KB a pod rather than 0.8, by how many strings the tests before had interned."""
    pods = [a_pod(index, owner=REPLICA_SET, node=f"node-{index % 100}") for index in range(1000)]
    table = SharedValues()
    empty = retained_bytes(table)
    kept = [slim_pod(pod, table) for pod in pods]
    per_pod = (retained_bytes(kept, table) - empty) / len(kept)
    print(f"capacity cache: {per_pod:.0f} B per pod (the pod's JSON: {len(json.dumps(pods[0]))} B)")
    assert len(table) == 100 + 1  # one capacity part per node (all of one template), one request
    assert per_pod < 1024, per_pod  # the decoded pod takes some 10 KB


def test_a_foreign_pod_adds_nothing_of_its_own_to_the_process_wide_tables() -> None:
    """Nothing of another workload's pod is shared beyond its capacity part: its labels and owner, dropped, would
    stay in the controller's shared table until a sweep; its name and resourceVersion, unique, are not interned."""
    before = len(SHARED)
    kept = slim_pod(a_pod(7, owner=REPLICA_SET, node="n1"), SharedValues())
    assert len(SHARED) == before
    name, version = kept["metadata"]["name"], kept["metadata"]["resourceVersion"]
    assert sys.intern("".join(["web-7d9f8c6b5-", "00007"])) is not name
    assert sys.intern(str(100007)) is not version
