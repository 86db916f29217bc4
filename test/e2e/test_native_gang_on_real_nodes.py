"""Kubernetes' own gang scheduling (`--gang-scheduler-name kubernetes`, kube-scheduler's GangScheduling plugin on
1.37) on the local cluster's two real nodes, with real pods on real kubelets: the scenarios test/integration/
test_native_gang.py shows on a kwok node, with what only real nodes give, the time from room to the whole gang bound.

Room is counted in slots of an extended resource the nodes are patched to offer, two each (support/real_node_gang.py),
so what fits does not depend on what earlier tests left running. 1. A gang of four with one slot taken binds no pod
while it cannot fit, and says why; room appears (the taking pod deleted, or a node offering a slot more) and every pod
binds. 2. Two gangs of three, room for one: one runs whole, the other binds no pod, though a slot is free, until the
first is done, and then runs whole. Every wait's watch reads through the API every 0.2 s (support.gang's counts), and
each test prints its timeline as a table, the PodGroups' status conditions in it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import LocalCluster
from localcluster.node_layout import NODE_LABEL
from localcluster.operator_config import write as write_operator_config
from support.gang import bound, pods_of, running
from support.namespaces import exists
from support.operator_process import OperatorProcess
from support.real_node_gang import (
    GROUPS,
    WATCH_INTERVAL,
    Timeline,
    assert_none_bound,
    gang_job,
    nodes_of,
    offer_slots,
    slot_pod_spec,
    slots,
    whole_gang_bound,
)
from support.real_node_jobs import pods_now
from support.tfjobs import TFJOBS, condition, job_status
from support.waiting import DEADLINE, consistently, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import PODS

SLOTS_PER_NODE = 2  # on each of the two real nodes
# How long the watch that no pod is bound lasts before it may end: past the 30 s tfop gives the scheduler before it
# calls a gang unplaceable (docs/scheduling/gang.md), so the watch spans tfop's whole say while the gang waits.
HELD_SPAN = 40.0
BLOCKED_NODE = "real-0"  # where scenario 1's blocking pod holds a slot


@pytest.fixture
def operator(real_node: LocalCluster, tfjob_crd: Path, namespace: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    """tfop with the local cluster's config and Kubernetes' own gang scheduling."""
    process = OperatorProcess(real_node.kubeconfig, tmp_path / "tfop.log", "--namespace", namespace,
                              "--config", str(write_operator_config(real_node.directory)),
                              "--gang-scheduler-name", "kubernetes").start()
    yield process
    process.kill()


@pytest.fixture
def offered(real_node: LocalCluster, kube_client: KubeClient) -> Iterator[None]:
    with slots(kube_client, SLOTS_PER_NODE):
        yield


def running_message(client: KubeClient, namespace: str, job: str) -> str:
    """The message of the job's Running condition, True or not."""
    entry: dict[str, Any] = next(
        (c for c in job_status(client, namespace, job).get("conditions", []) if c["type"] == "Running"), {})
    return str(entry.get("message", ""))


def told_unplaceable(client: KubeClient, namespace: str, job: str) -> str | None:
    """The job's Running message once tfop tells the gang cannot be placed: its PodGroup Unschedulable in the status
    and the message, with the GangUnschedulable mark."""
    message = running_message(client, namespace, job)
    said = (job_status(client, namespace, job).get("podGroupPhase") == "Unschedulable"
            and f"PodGroup {namespace}/{job} is Unschedulable (kube-scheduler cannot place the whole gang yet, so it "
                "binds none of its pods" in message and "[GangUnschedulable]" in message)
    return message if said else None


def held_unbound(client: KubeClient, namespace: str, job: str, until: Callable[[], str | None],
                 explain: Callable[[], str]) -> str:
    """Watches that no pod of `job` is ever bound: for HELD_SPAN seconds, and then on until `until` answers (within
    DEADLINE); returns its answer."""
    consistently(lambda: assert_none_bound(client, namespace, job), HELD_SPAN, f"no pod of {job} bound",
                 interval=WATCH_INTERVAL)
    return wait_for(lambda: assert_none_bound(client, namespace, job) and until(), DEADLINE,
                    f"tfop to tell why {job} waits, no pod of it bound", interval=WATCH_INTERVAL, explain=explain)


def all_running(client: KubeClient, namespace: str, job: str, workers: int) -> bool:
    return running(pods_of(client, namespace, job)) == workers


@pytest.mark.parametrize("room", ["blocker deleted", "capacity raised"])
def test_a_gang_that_does_not_fit_binds_no_pod_until_room_appears_then_every_pod(
        real_node: LocalCluster, offered: None, operator: OperatorProcess, namespace: str, kube_client: KubeClient,
        room: str) -> None:
    client, gang, workers = kube_client, "gang", 4
    assert real_node.pause_image, "the cluster names no pause image"
    # One slot of real-0's two taken: three free, the gang needs four.
    client.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "blocker"},
                         "spec": slot_pod_spec({"name": "blocker", "image": real_node.pause_image},
                                               nodeSelector={NODE_LABEL: "true",
                                                             "kubernetes.io/hostname": BLOCKED_NODE})}, namespace)
    wait_for(lambda: client.get(PODS, "blocker", namespace).get("status", {}).get("phase") == "Running", DEADLINE,
             "the blocking pod to run", interval=WATCH_INTERVAL)

    def explain() -> str:
        return f"{pods_now(real_node, namespace)}; status: {job_status(client, namespace, gang)}"

    timeline = Timeline(client, namespace)
    client.create(TFJOBS, gang_job(gang, workers, {"name": "tensorflow", "image": real_node.pause_image}), namespace)
    timeline.mark(f"job created: {workers} workers of a slot each; 3 of 4 slots free", {gang: workers})
    wait_for(lambda: assert_none_bound(client, namespace, gang) and len(pods_of(client, namespace, gang)) == workers,
             DEADLINE, f"the {workers} pods to exist, none bound", interval=WATCH_INTERVAL, explain=explain)
    timeline.mark(f"its {workers} pods exist", {gang: workers})
    group = client.get(GROUPS, gang, namespace)
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": workers}}, group["spec"]
    message = held_unbound(client, namespace, gang, lambda: told_unplaceable(client, namespace, gang), explain)
    timeline.mark(f"tfop's Running message: {message}", {gang: workers})

    if room == "blocker deleted":
        client.delete(PODS, "blocker", namespace)
        asked = time.monotonic()
        wait_for(lambda: not exists(client, PODS, "blocker", namespace), DEADLINE, "the blocking pod to go",
                 interval=WATCH_INTERVAL / 2)
        made = timeline.mark(f"room: the blocking pod gone ({time.monotonic() - asked:.1f} s after its delete)",
                             {gang: workers})
    else:
        offer_slots(client, BLOCKED_NODE, SLOTS_PER_NODE + 1)
        made = timeline.mark(f"room: {BLOCKED_NODE} offers {SLOTS_PER_NODE + 1} slots", {gang: workers})
    seen = whole_gang_bound(client, namespace, gang, workers)
    bound_at = timeline.mark(f"whole gang bound, on {nodes_of(client, namespace, gang)}; bound counts seen: "
                             f"{' -> '.join(map(str, seen))}", {gang: workers})
    wait_for(lambda: all_running(client, namespace, gang, workers), DEADLINE, "every pod to run",
             interval=WATCH_INTERVAL, explain=explain)
    wait_for(lambda: job_status(client, namespace, gang).get("podGroupPhase") == "Scheduled", DEADLINE,
             "the job's status to show its PodGroup Scheduled", interval=WATCH_INTERVAL, explain=explain)
    timeline.mark(f"every pod running; tfop's Running message: {running_message(client, namespace, gang)}",
                  {gang: workers})
    print(f"\nroom made by: {room}; room to whole gang bound: {bound_at - made:.1f} s\n{timeline.table()}")
    assert seen[-1] == workers and "[GangUnschedulable]" not in running_message(client, namespace, gang)


def test_two_gangs_with_room_for_one_run_one_after_the_other_each_whole(
        real_node: LocalCluster, offered: None, operator: OperatorProcess, namespace: str, kube_client: KubeClient,
        busybox: str) -> None:
    client, workers = kube_client, 3  # two gangs of three, four slots: one fits, with a slot left over
    jobs = {"job-a": workers, "job-b": workers}
    # A job's workers run until the test makes its file in the directory every real node's pods mount.
    stop_dir = real_node.shared_dir / namespace
    stop_dir.mkdir()
    for job in jobs:
        container = {"name": "tensorflow", "image": busybox, "command": [
            "sh", "-c", f"until [ -e /shared/{namespace}/{job} ]; do sleep 0.2; done"],
            "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}
        client.create(TFJOBS, gang_job(job, workers, container, volumes=[
            {"name": "shared", "hostPath": {"path": str(real_node.shared_dir), "type": "Directory"}}]), namespace)
    timeline = Timeline(client, namespace)
    timeline.mark(f"both jobs created: {workers} workers of a slot each, 4 slots", jobs)

    def explain() -> str:
        return f"{pods_now(real_node, namespace)}; " + "; ".join(
            f"{job}: {job_status(client, namespace, job)}" for job in jobs)

    def whole() -> str | None:
        """The job that runs whole, once one does; fails as soon as pods of both jobs are seen bound."""
        started = [job for job in jobs if bound(pods_of(client, namespace, job))]
        assert len(started) < 2, f"pods of both jobs bound: {pods_now(real_node, namespace)}"
        return next((job for job in jobs if all_running(client, namespace, job, workers)), None)

    first = wait_for(whole, DEADLINE, "one job to run whole", interval=WATCH_INTERVAL, explain=explain)
    second = next(job for job in jobs if job != first)
    timeline.mark(f"{first} runs whole, on {nodes_of(client, namespace, first)}", jobs)
    message = held_unbound(client, namespace, second, lambda: told_unplaceable(client, namespace, second), explain)
    assert job_status(client, namespace, first).get("podGroupPhase") == "Scheduled", job_status(
        client, namespace, first)
    timeline.mark(f"{second}: tfop's Running message: {message}", jobs)

    (stop_dir / first).touch()
    told = timeline.mark(f"{first} told to finish", jobs)
    wait_for(lambda: all(pod["status"].get("phase") == "Succeeded" for pod in pods_of(client, namespace, first)),
             DEADLINE, f"{first}'s pods to succeed", interval=WATCH_INTERVAL / 2, explain=explain)
    done = timeline.mark(f"room: {first}'s pods Succeeded", jobs)
    seen = whole_gang_bound(client, namespace, second, workers)
    bound_at = timeline.mark(f"{second} bound whole, on {nodes_of(client, namespace, second)}; its bound counts "
                             f"seen: {' -> '.join(map(str, seen))}", jobs)
    wait_for(lambda: (condition(client, namespace, first, "Succeeded") or {}).get("status") == "True", DEADLINE,
             f"{first} to succeed", interval=WATCH_INTERVAL, explain=explain)
    wait_for(lambda: not exists(client, GROUPS, first, namespace), DEADLINE, f"{first}'s PodGroup to go",
             interval=WATCH_INTERVAL, explain=explain)
    wait_for(lambda: all_running(client, namespace, second, workers), DEADLINE, f"{second} to run whole",
             interval=WATCH_INTERVAL, explain=explain)
    timeline.mark(f"{first} succeeded, its PodGroup gone; {second} runs whole", jobs)

    (stop_dir / second).touch()
    wait_for(lambda: (condition(client, namespace, second, "Succeeded") or {}).get("status") == "True", DEADLINE,
             f"{second} to succeed", interval=WATCH_INTERVAL, explain=explain)
    timeline.mark(f"{second} succeeded", jobs)
    print(f"\n{first} told to finish to {second} bound whole: {bound_at - told:.1f} s; from {first}'s pods seen "
          f"Succeeded: {bound_at - done:.1f} s\n{timeline.table()}")
    assert seen[-1] == workers
