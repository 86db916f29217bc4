"""tfop's own Kueue integration (`kueue.integration: own`) against the newest Kueue pinned (KUEUE_VERSION, v0.19),
configured as its release ships: its default integrations, which leave out kubeflow.org/tfjob, and tfop's kind named
in integrations.externalFrameworks, so Kueue's pod webhook leaves tfop's pods to their owner.

tfop, with its config's kueue integration left out (own, the default), makes each queued job's Workload, holds the
job (Suspended, reason QueuedByKueue, with Kueue's message and its place in the queue, read from Kueue's visibility
API) until Kueue admits it, puts the admitted flavor's node
labels and toleration on the pods, and stops a job whose Workload is evicted (here by deactivating it), handing the
quota back so the next job is admitted, without a restart counted. A job preempted by a higher WorkloadPriorityClass
is requeued and runs again. A worker that ends while its job runs is reported in the Workload's reclaimablePods,
and the quota it frees admits the next job. No spec is edited: Kueue never writes the TFJob.

A cluster of its own (kwok nodes only), as the session's Kueue (its adapter enabled) serves the shared one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from fake_kubelet import exit_pod
from support.kueue import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    PRIORITY_CLASSES,
    WORKLOADS,
    Timeline,
    cluster_queue,
    is_true,
    live_pods,
    local_queue,
    queued_tfjob,
    running_pods,
    workload_of,
    workload_priority_class,
)
from support.kueue_own import (
    POOL_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    Setup,
    evicted_event,
    markdown_table,
    own_integration_cluster,
    restarts,
    suspended,
)
from support.tfjobs import TFJOBS, condition
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import NotFound


@pytest.fixture(scope="module")
def own_integration_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with own_integration_cluster(tmp_path_factory.mktemp("kueueown")) as setup:
        yield setup


@pytest.fixture
def own_integration(own_integration_module: Setup) -> Iterator[Setup]:
    """The module's cluster, left with no TFJob and no Workload after each test, passed or failed: the tests share
    one ClusterQueue, and a job one of them left running would hold the quota the next one waits for."""
    yield own_integration_module
    client, ns = own_integration_module.client, own_integration_module.namespace
    for job in client.list(TFJOBS, ns)[0]:
        with contextlib.suppress(NotFound):  # the test's own delete may be under way
            client.delete(TFJOBS, job["metadata"]["name"], ns)
    wait_for(lambda: not client.list(WORKLOADS, ns)[0], DEADLINE, "the test's Workloads to go with its jobs")


def test_one_job_waits_for_the_quota_and_the_admitted_one_runs_on_its_flavor(own_integration: Setup) -> None:
    client, ns, pool = own_integration.client, own_integration.namespace, own_integration.pool
    timeline = Timeline(client, ns).start()
    first = client.create(TFJOBS, queued_tfjob("first", "queue", gpus_per_replica=2), ns)
    timeline.created(first)
    assert first["spec"]["runPolicy"].get("suspend") is not True  # no Kueue webhook touches a TFJob
    wait_for(lambda: condition(client, ns, "first", "Running"), DEADLINE, "the first job to be Running")
    pods = running_pods(client, ns, "first", 2)
    toleration = {"key": POOL_LABEL, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
    for pod in pods:
        assert pod["spec"]["nodeSelector"] == {POOL_LABEL: pool}, pod["spec"].get("nodeSelector")
        assert toleration in pod["spec"]["tolerations"]
        assert pod["spec"]["nodeName"].startswith(pool)
    workload = workload_of(client, ns, first)
    assert workload is not None and is_true(workload, "Admitted")
    owner = workload["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TFJob", "first", True)
    assert [(s["name"], s["count"]) for s in workload["spec"]["podSets"]] == [("chief", 1), ("worker", 1)]

    second = client.create(TFJOBS, queued_tfjob("second", "queue", gpus_per_replica=2), ns)
    timeline.created(second)
    held = wait_for(lambda: (c := suspended(client, ns, "second")) and "queued in Kueue LocalQueue queue" in
                    c.get("message", "") and c, DEADLINE, "the second job to say it is queued")
    print(f"second job held: {held['reason']}: {held['message']}")
    assert held["reason"] == "QueuedByKueue"
    assert live_pods(client, ns, "second") == []
    assert not is_true(workload_of(client, ns, second), "Admitted")

    chief = next(p for p in pods if p["metadata"]["labels"][REPLICA_TYPE_LABEL] == "chief")
    exit_pod(client, ns, chief["metadata"]["name"], 0)
    wait_for(lambda: condition(client, ns, "first", "Succeeded"), DEADLINE, "the first job to succeed")
    # The finished job's Workload is deleted: its quota goes to the second job.
    wait_for(lambda: workload_of(client, ns, first) is None, DEADLINE, "the first job's Workload to be deleted")
    wait_for(lambda: condition(client, ns, "second", "Running"), DEADLINE, "the second job to be admitted and run")
    running_pods(client, ns, "second", 2)
    assert suspended(client, ns, "second") is None
    assert restarts(client, ns, "first") == {"Chief": 0, "Worker": 0}
    wait_for(lambda: timeline.first("second", "running"), DEADLINE, "the timeline to see the second job run")
    timeline.stop()
    print(markdown_table("Quota: two jobs of 4 GPUs, a ClusterQueue of 4 (seconds since the first was created)",
                         ("s", "job", "what"), timeline.rows()))
    # The second is admitted on the quota the first's Workload gave back. tfop deletes that Workload in the pass
    # that writes the first's Succeeded, its child writes before its status write, so under load the Succeeded
    # condition can be seen after the second's admission (0.5 s in one cold run): the order that holds is the
    # release's before the admission.
    released, admitted = timeline.first("first", "admitted ended"), timeline.first("second", "admitted")
    assert released is not None and admitted is not None and admitted >= released - timeline.interval
    client.delete(TFJOBS, "second", ns)
    wait_for(lambda: not client.list(WORKLOADS, ns)[0], DEADLINE, "the deleted job's Workload to go with it")


def test_a_pending_job_tells_its_place_in_the_queue(own_integration: Setup) -> None:
    """Read by tfop from Kueue's visibility API: two jobs behind a running one say they are 1st and 2nd, in Kueue's
    order; the first admitted, the other moves up."""
    client, ns = own_integration.client, own_integration.namespace
    client.create(TFJOBS, queued_tfjob("head", "queue", gpus_per_replica=2), ns)
    wait_for(lambda: condition(client, ns, "head", "Running"), DEADLINE, "the first job to be Running")
    ahead = client.create(TFJOBS, queued_tfjob("ahead", "queue", gpus_per_replica=2), ns)
    # Kueue orders equal priorities by creation time, to the second: the second job's Workload is made a second
    # later, so the order is not a tie.
    made = wait_for(lambda: workload_of(client, ns, ahead), DEADLINE, "the first waiting job's Workload")["metadata"]
    wait_for(lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") > made["creationTimestamp"], DEADLINE,
             "the clock's next second")
    client.create(TFJOBS, queued_tfjob("behind", "queue", gpus_per_replica=2), ns)

    def message(name: str) -> str:
        held = suspended(client, ns, name)
        return "" if held is None else str(held["message"])

    for name, place in (("ahead", 1), ("behind", 2)):
        told = wait_for(lambda name=name, place=place: (
            f"queued in Kueue LocalQueue queue at position {place} ({place} in its ClusterQueue)" in message(name)
            and message(name)), DEADLINE, f"{name} to say it is number {place} in the queue")
        print(f"{name}: {told}")
    assert kueue_order(client, ns) == ["ahead", "behind"]

    pods = running_pods(client, ns, "head", 2)
    chief = next(p for p in pods if p["metadata"]["labels"][REPLICA_TYPE_LABEL] == "chief")
    exit_pod(client, ns, chief["metadata"]["name"], 0)
    wait_for(lambda: condition(client, ns, "ahead", "Running"), DEADLINE, "the job first in line to run")
    moved = wait_for(lambda: " at position 1 (1 in its ClusterQueue)" in message("behind") and message("behind"),
                     DEADLINE, "the job behind to say it is first in line now")
    print(f"behind, moved up: {moved}")
    assert suspended(client, ns, "ahead") is None


def kueue_order(client: KubeClient, namespace: str) -> list[str]:
    """The jobs pending in LocalQueue `queue`, in Kueue's order, as its visibility API says (the owner of each
    Workload listed)."""
    answer = client.request("GET", f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/queue/"
                                   "pendingworkloads")
    items = sorted(answer["items"], key=lambda item: item["positionInLocalQueue"])
    return [item["metadata"]["ownerReferences"][0]["name"] for item in items]


def test_a_deactivated_job_stops_gracefully_and_its_quota_goes_to_the_next(own_integration: Setup) -> None:
    client, ns = own_integration.client, own_integration.namespace
    evicted = client.create(TFJOBS, queued_tfjob("evicted", "queue", gpus_per_replica=2), ns)
    wait_for(lambda: condition(client, ns, "evicted", "Running"), DEADLINE, "the job to be Running")
    running_pods(client, ns, "evicted", 2)
    client.create(TFJOBS, queued_tfjob("waiting", "queue", gpus_per_replica=2), ns)
    wait_for(lambda: suspended(client, ns, "waiting"), DEADLINE, "the other job to be held")

    workload = workload_of(client, ns, evicted)
    assert workload is not None
    client.patch(WORKLOADS, workload["metadata"]["name"], {"spec": {"active": False}}, ns)
    stopped = wait_for(lambda: evicted_event(client, ns, "evicted"), DEADLINE, "the job to say Kueue evicted it")
    print(f"evicted: {stopped['message']}")
    assert "Deactivated" in stopped["message"]
    # Stopped by deleting its pods with their own grace period (SIGTERM first), none counted as a restart.
    wait_for(lambda: live_pods(client, ns, "evicted") == [], DEADLINE, "the evicted job's pods to go")
    wait_for(lambda: not (workload_of(client, ns, evicted) or {}).get("status", {}).get("admission"), DEADLINE,
             "the evicted Workload's quota to be handed back")
    wait_for(lambda: condition(client, ns, "waiting", "Running"), DEADLINE, "the other job to be admitted and run")
    running_pods(client, ns, "waiting", 2)
    assert restarts(client, ns, "evicted") == {"Chief": 0, "Worker": 0}
    assert condition(client, ns, "evicted", "Failed") is None
    held = suspended(client, ns, "evicted")
    assert held is not None and held["reason"] == "QueuedByKueue" and "deactivated" in held["message"]
    assert client.get(TFJOBS, "evicted", ns)["spec"]["runPolicy"].get("suspend") is not True

    # Reactivated, it queues again and runs once the other job is gone.
    client.patch(WORKLOADS, workload["metadata"]["name"], {"spec": {"active": True}}, ns)
    client.delete(TFJOBS, "waiting", ns)
    wait_for(lambda: condition(client, ns, "evicted", "Running"), DEADLINE, "the reactivated job to run again")
    running_pods(client, ns, "evicted", 2)
    assert restarts(client, ns, "evicted") == {"Chief": 0, "Worker": 0}
    client.delete(TFJOBS, "evicted", ns)


def test_a_preempted_job_is_requeued_and_runs_again_without_a_restart_counted(own_integration: Setup) -> None:
    client, ns, pool = own_integration.client, own_integration.namespace, own_integration.pool
    client.create(CLUSTER_QUEUES, cluster_queue("urgent", pool, 4, ns, preemption=True))
    client.create(LOCAL_QUEUES, local_queue("urgent", "urgent"), ns)
    for level, value in (("low", 10), ("high", 1000)):
        client.create(PRIORITY_CLASSES, workload_priority_class(f"{ns}-{level}", value))
    wait_for(lambda: is_true(client.get(CLUSTER_QUEUES, "urgent"), "Active"), message="the ClusterQueue to be Active")

    low = client.create(TFJOBS, queued_tfjob("low", "urgent", 2, priority_class=f"{ns}-low"), ns)
    wait_for(lambda: condition(client, ns, "low", "Running"), DEADLINE, "the low-priority job to be Running")
    running_pods(client, ns, "low", 2)
    assert (workload_of(client, ns, low) or {})["spec"]["priority"] == 10
    client.create(TFJOBS, queued_tfjob("high", "urgent", 2, priority_class=f"{ns}-high"), ns)
    stopped = wait_for(lambda: evicted_event(client, ns, "low"), DEADLINE,
                       "the low-priority job to say Kueue evicted it")
    print(f"preempted: {stopped['message']}")
    assert "Preempted" in stopped["message"]
    wait_for(lambda: condition(client, ns, "high", "Running"), DEADLINE, "the high-priority job to run")
    high_pods = running_pods(client, ns, "high", 2)
    assert live_pods(client, ns, "low") == []
    requeued = next(c for c in (workload_of(client, ns, low) or {})["status"]["conditions"] if c["type"] == "Requeued")
    assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")

    chief = next(p for p in high_pods if p["metadata"]["labels"][REPLICA_TYPE_LABEL] == "chief")
    exit_pod(client, ns, chief["metadata"]["name"], 0)
    wait_for(lambda: condition(client, ns, "high", "Succeeded"), DEADLINE, "the high-priority job to succeed")
    wait_for(lambda: condition(client, ns, "low", "Running"), DEADLINE, "the preempted job to be admitted again")
    running_pods(client, ns, "low", 2)
    assert restarts(client, ns, "low") == {"Chief": 0, "Worker": 0}
    assert condition(client, ns, "low", "Failed") is None
    client.delete(TFJOBS, "low", ns)


def test_a_worker_ended_for_good_gives_its_quota_back_while_the_job_runs(own_integration: Setup) -> None:
    client, ns = own_integration.client, own_integration.namespace
    # 3 of the queue's 4 GPUs: a job of two more waits until a worker's share is reclaimable.
    job = client.create(TFJOBS, queued_tfjob("partly", "queue", gpus_per_replica=1, workers=2), ns)
    wait_for(lambda: condition(client, ns, "partly", "Running"), DEADLINE, "the job to be Running")
    pods = running_pods(client, ns, "partly", 3)
    client.create(TFJOBS, queued_tfjob("next", "queue", gpus_per_replica=1), ns)
    wait_for(lambda: suspended(client, ns, "next"), DEADLINE, "the next job to be held")

    worker = next(p for p in pods if p["metadata"]["labels"][REPLICA_TYPE_LABEL] == "worker"
                  and p["metadata"]["labels"][REPLICA_INDEX_LABEL] == "1")
    exit_pod(client, ns, worker["metadata"]["name"], 0)
    reclaimable = wait_for(lambda: (workload_of(client, ns, job) or {}).get("status", {}).get("reclaimablePods"),
                           DEADLINE, "the Workload to report the ended worker as reclaimable")
    print(f"reclaimablePods: {reclaimable}")
    assert reclaimable == [{"name": "worker", "count": 1}]
    # Kueue counts 2 GPUs for it now, so the next job (2 GPUs) is admitted beside it.
    wait_for(lambda: condition(client, ns, "next", "Running"), DEADLINE, "the next job to be admitted and run")
    assert is_true(workload_of(client, ns, job), "Admitted") and condition(client, ns, "partly", "Running")
    ended = [p for p in live_pods(client, ns, "partly") if p["metadata"]["labels"][REPLICA_TYPE_LABEL] == "worker"
             and p["metadata"]["labels"][REPLICA_INDEX_LABEL] == "1"]
    assert [p["status"]["phase"] for p in ended] == ["Succeeded"]  # kept, and not made again
    assert restarts(client, ns, "partly") == {"Chief": 0, "Worker": 0}
    client.delete(TFJOBS, "next", ns)
    client.delete(TFJOBS, "partly", ns)
