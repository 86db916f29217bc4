"""tfop under real Kueue (v0.19 with kubeflow.org/tfjob enabled, hack/localcluster/addons/kueue.py): quota admission,
the flavor's placement, preemption, and a resize (admitted again at the new size).

Kueue drives a TFJob only through the kubeflow.org/v1 API: its webhook suspends a queued job at creation, its
admission unsuspends it with the flavor's nodeSelector and tolerations in the pod templates, an eviction suspends
it again and waits until every replicaStatuses[*].active is 0, and the job's Running and Succeeded conditions
tell it the pods are ready and the Workload finished. kwok's fake nodes carry the GPUs; the tests end pods by
writing their status, as a kubelet would.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fake_kubelet import exit_pod
from localcluster import LocalCluster
from support.kueue import (
    CLUSTER_QUEUES,
    GPU,
    KUEUE_NAMESPACE_LABEL,
    LOCAL_QUEUES,
    NODES,
    PRIORITY_CLASSES,
    QUEUE_LABEL,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Timeline,
    cluster_queue,
    cover_namespace,
    flavor,
    integration_config,
    is_true,
    live_pods,
    local_queue,
    queued_tfjob,
    running_pods,
    workload_of,
    workload_priority_class,
)
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, condition, events_about, job_status
from support.waiting import DEADLINE, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError
from tfop.kube.resource import PODS

# What Kueue's TFJob integration selects a job's pods by (kueuectl lists them with it).
KUEUE_POD_SELECTOR = "training.kubeflow.org/job-name={},training.kubeflow.org/operator-name=tfjob-controller"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
POOL_LABEL = "tfop.test/gpu-pool"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kueue"


@pytest.fixture
def cluster_objects(kube_client: KubeClient) -> Iterator[list[tuple[Any, str]]]:
    """Cluster-scoped objects a test makes (flavors, queues, nodes, priority classes), deleted afterwards."""
    made: list[tuple[Any, str]] = []
    yield made
    for resource, name in reversed(made):
        with contextlib.suppress(ApiError):
            kube_client.delete(resource, name)


def make(client: KubeClient, made: list[tuple[Any, str]], resource: Any, body: dict[str, Any]) -> None:
    client.create(resource, body)
    made.append((resource, body["metadata"]["name"]))


def make_queue(client: KubeClient, made: list[tuple[Any, str]], namespace: str, gpus: int,
               flavor_body: dict[str, Any], preemption: bool = False) -> None:
    """A flavor, a ClusterQueue of `gpus` GPUs of it for `namespace`, and the LocalQueue `queue` there."""
    make(client, made, RESOURCE_FLAVORS, flavor_body)
    make(client, made, CLUSTER_QUEUES,
         cluster_queue(f"{namespace}-cq", flavor_body["metadata"]["name"], gpus, namespace, preemption))
    client.create(LOCAL_QUEUES, local_queue("queue", f"{namespace}-cq"), namespace)
    wait_for(lambda: is_true(client.get(CLUSTER_QUEUES, f"{namespace}-cq"), "Active"), DEADLINE,
             "the ClusterQueue to be Active")


def submit(client: KubeClient, namespace: str, timeline: Timeline, body: dict[str, Any]) -> dict[str, Any]:
    created = client.create(TFJOBS, body, namespace)
    timeline.created(created)
    # Kueue's mutating webhook suspends a queued job before it is stored: tfop never sees it runnable.
    assert created["spec"]["runPolicy"].get("suspend") is True, created["spec"]["runPolicy"]
    return created


def admitted(client: KubeClient, namespace: str, job: dict[str, Any]) -> bool:
    return is_true(workload_of(client, namespace, job), "Admitted")


def finish_chief(client: KubeClient, namespace: str, job: str) -> None:
    chief = next(pod for pod in live_pods(client, namespace, job)
                 if pod["metadata"]["labels"][REPLICA_TYPE_LABEL] == "chief")
    exit_pod(client, namespace, chief["metadata"]["name"], 0)



def test_quota_admits_two_of_three_jobs_and_the_third_runs_when_one_succeeds(
        kube_client: KubeClient, kueue_namespace: str, adapter_operator: OperatorProcess,
        cluster_objects: list[tuple[Any, str]]) -> None:
    ns, client = kueue_namespace, kube_client
    make_queue(client, cluster_objects, ns, 8, flavor(f"{ns}-gpu"))
    timeline = Timeline(KubeClient.from_kubeconfig(str(adapter_operator.kubeconfig)), ns).start()
    try:
        jobs = {}
        for name in ("job-a", "job-b", "job-c"):
            jobs[name] = submit(client, ns, timeline, queued_tfjob(name, "queue", gpus_per_replica=2))
            # Kueue queues by creation time at a second's resolution: a second apart, the order is certain.
            wait_for(lambda: timeline.elapsed() >= 1.1 * len(jobs), DEADLINE, "a second to pass")

        for name in ("job-a", "job-b"):
            wait_for(lambda n=name: condition(client, ns, n, "Running"), DEADLINE, f"{name} to be Running")
            pods = running_pods(client, ns, name, 2)
            found, _ = client.list(PODS, ns, label_selector=KUEUE_POD_SELECTOR.format(name))
            assert sorted(p["metadata"]["name"] for p in found) == sorted(p["metadata"]["name"] for p in pods)
        # 8 GPUs hold two jobs of 4: the third waits, suspended, with no pod at all.
        assert not admitted(client, ns, jobs["job-c"])
        assert client.get(TFJOBS, "job-c", ns)["spec"]["runPolicy"]["suspend"] is True
        assert live_pods(client, ns, "job-c") == []

        finish_chief(client, ns, "job-a")
        wait_for(lambda: condition(client, ns, "job-a", "Succeeded"), DEADLINE, "job-a to succeed")
        wait_for(lambda: condition(client, ns, "job-c", "Running"), DEADLINE, "job-c to be admitted and Running")
        running_pods(client, ns, "job-c", 2)
        for name in ("job-b", "job-c"):
            finish_chief(client, ns, name)
        for name, job in jobs.items():
            wait_for(lambda n=name: condition(client, ns, n, "Succeeded"), DEADLINE, f"{name} to succeed")
            # Queued by Kueue (suspended at creation): tfop never calls it unqueued.
            assert not [e for e in events_about(client, ns, name) if e.get("reason") == "NotQueuedByKueue"]
            wait_for(lambda j=job: is_true(workload_of(client, ns, j), "Finished"), DEADLINE,
                     f"{name}'s Workload to be Finished")
        wait_for(lambda: timeline.first("job-c", "workload finished"), DEADLINE, "the timeline to see job-c finish")
    finally:
        timeline.stop()
        print(f"--- admission timeline (s since the first create) ---\n{timeline.table()}")

    # The apiserver's own times (to the second) order it too: job-a succeeded, then job-c was admitted, then its
    # pods were made. Nothing counted a restart.
    a_succeeded = condition(client, ns, "job-a", "Succeeded")
    c_admitted = next(c for c in workload_of(client, ns, jobs["job-c"])["status"]["conditions"]  # type: ignore[index]
                      if c["type"] == "Admitted")
    c_pods = timeline.first("job-c", "pods")
    assert a_succeeded is not None and c_pods is not None
    assert a_succeeded["lastTransitionTime"] <= c_admitted["lastTransitionTime"]
    for name in ("job-a", "job-b", "job-c"):
        replica_statuses = job_status(client, ns, name)["replicaStatuses"]
        assert {t: s.get("restarts", 0) for t, s in replica_statuses.items()} == {"Chief": 0, "Worker": 0}


def event_reasons(client: KubeClient, namespace: str, job: str) -> set[str]:
    """The reasons of the events on the job (tfop's and Kueue's)."""
    return {event.get("reason", "") for event in events_about(client, namespace, job)}


def active_counts(client: KubeClient, namespace: str, job: str) -> dict[str, int]:
    return {t: s.get("active", 0) for t, s in job_status(client, namespace, job)["replicaStatuses"].items()}


def gpu_nodes(client: KubeClient, made: list[tuple[Any, str]], pool: str, count: int) -> list[str]:
    """kwok nodes of 8 GPUs labelled and tainted for `pool` only: the flavor's placement is all that gets a pod
    there."""
    names = []
    for index in range(count):
        name = f"{pool}-gpu-{index}"
        make(client, made, NODES, {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": name, POOL_LABEL: pool}},
            "spec": {"taints": [{"key": POOL_LABEL, "value": pool, "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", GPU: "8"},
                       "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", GPU: "8"}}})
        names.append(name)
    wait_for(lambda: all(is_true(client.get(NODES, n), "Ready") for n in names), message="kwok to make the nodes Ready")
    return names


def test_flavor_places_the_pods_and_a_preempted_job_resumes_without_counting_a_restart(
        kube_client: KubeClient, kueue_namespace: str, adapter_operator: OperatorProcess,
        cluster_objects: list[tuple[Any, str]]) -> None:
    ns, client = kueue_namespace, kube_client
    nodes = gpu_nodes(client, cluster_objects, ns, 2)
    toleration = {"key": POOL_LABEL, "operator": "Equal", "value": ns, "effect": "NoSchedule"}
    make_queue(client, cluster_objects, ns, 8, flavor(f"{ns}-pool", {POOL_LABEL: ns}, [toleration]),
               preemption=True)
    for level, value in (("low", 10), ("high", 1000)):
        make(client, cluster_objects, PRIORITY_CLASSES, workload_priority_class(f"{ns}-{level}", value))
    timeline = Timeline(KubeClient.from_kubeconfig(str(adapter_operator.kubeconfig)), ns).start()
    try:
        low = submit(client, ns, timeline, queued_tfjob("low", "queue", 2, priority_class=f"{ns}-low"))
        wait_for(lambda: condition(client, ns, "low", "Running"), DEADLINE, "low to be admitted and Running")
        first_pods = running_pods(client, ns, "low", 2)
        for pod in first_pods:
            # Admission wrote the flavor's nodeLabels and tolerations into the templates tfop made these from.
            assert pod["spec"]["nodeSelector"] == {POOL_LABEL: ns}
            assert toleration in pod["spec"]["tolerations"]
            assert pod["spec"]["nodeName"] in nodes

        # 4 + 8 GPUs do not fit in 8: Kueue evicts the lower priority, suspending it; tfop stops its pods.
        submit(client, ns, timeline, queued_tfjob("high", "queue", 4, priority_class=f"{ns}-high"))
        wait_for(lambda: is_true(workload_of(client, ns, low), "Evicted"), DEADLINE, "Kueue to evict low")
        wait_for(lambda: live_pods(client, ns, "low") == [], DEADLINE, "low's pods to go")
        # Kueue admits nothing into the freed quota until every active count is 0: tfop's status must say so.
        wait_for(lambda: active_counts(client, ns, "low") == {"Chief": 0, "Worker": 0}, DEADLINE,
                 "low's replicaStatuses to count no active pod")
        assert condition(client, ns, "low", "Suspended") is not None
        assert condition(client, ns, "low", "Failed") is None
        wait_for(lambda: condition(client, ns, "high", "Running"), DEADLINE, "high to be admitted and Running")
        assert live_pods(client, ns, "low") == []

        finish_chief(client, ns, "high")
        wait_for(lambda: condition(client, ns, "high", "Succeeded"), DEADLINE, "high to succeed")
        # Re-admitted: new pods, placed by the flavor again, and the eviction cost no restart.
        wait_for(lambda: condition(client, ns, "low", "Running"), DEADLINE, "low to be re-admitted and Running")
        second_pods = running_pods(client, ns, "low", 2)
        assert not {p["metadata"]["uid"] for p in second_pods} & {p["metadata"]["uid"] for p in first_pods}
        assert all(p["spec"]["nodeSelector"] == {POOL_LABEL: ns} for p in second_pods)
        resumed = job_status(client, ns, "low")
        assert {t: s.get("restarts", 0) for t, s in resumed["replicaStatuses"].items()} == {"Chief": 0, "Worker": 0}
        assert condition(client, ns, "low", "Suspended") is None

        finish_chief(client, ns, "low")
        wait_for(lambda: condition(client, ns, "low", "Succeeded"), DEADLINE, "low to succeed after its preemption")
        # Kueue says so in an event on the job: once the Workload's quota is released, Kueue (v0.15 at least)
        # compares the job's templates (which still hold the flavor's nodeSelector) with the Workload's and deletes
        # it as not matching, so the Workload itself may be gone by the time anyone looks.
        for name in ("high", "low"):
            wait_for(lambda n=name: event_reasons(client, ns, n) & {"FinishedWorkload"}, DEADLINE,
                     f"Kueue to declare {name}'s Workload finished")
    finally:
        timeline.stop()
        print(f"--- preemption timeline (s since the first create) ---\n{timeline.table()}")
        for name in ("low", "high"):
            print(f"events on {name}: {sorted(event_reasons(client, ns, name))}")


def test_the_readmes_kueue_examples_pass_kueues_webhooks(cluster: LocalCluster, kueue_namespace: str) -> None:
    """examples/kueue/ as docs/scheduling/kueue.md applies them: the queues pass Kueue's validation, and the TFJob
    comes back suspended by its webhook, queue label intact (server-side dry runs: nothing is left behind)."""
    for example in ("queues.yaml", "tfjob.yaml"):
        result = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-n", kueue_namespace,
                                 "-f", str(EXAMPLES / example), check=False)
        assert result.returncode == 0, f"{example}: {result.stderr}"
    job = json.loads(result.stdout)
    assert job["kind"] == "TFJob" and job["spec"]["runPolicy"]["suspend"] is True
    assert job["metadata"]["labels"][QUEUE_LABEL] == "gpu-queue"


def test_a_resize_of_an_admitted_job_is_admitted_again_at_the_new_size(
        cluster: LocalCluster, kube_client: KubeClient, kueue_namespace: str, adapter_operator: OperatorProcess,
        cluster_objects: list[tuple[Any, str]]) -> None:
    """Kueue compares the job's pod sets with its Workload's: a Worker count changed under an admitted job
    matches no Workload, so Kueue suspends the job, deletes the Workload, makes one of the new size and admits it
    as it would a new job. The suspension is not a failure and counts no restart."""
    ns, client = kueue_namespace, kube_client
    make_queue(client, cluster_objects, ns, 8, flavor(f"{ns}-gpu"))
    timeline = Timeline(KubeClient.from_kubeconfig(str(adapter_operator.kubeconfig)), ns).start()
    try:
        job = submit(client, ns, timeline, queued_tfjob("grow", "queue", 2))
        wait_for(lambda: condition(client, ns, "grow", "Running"), DEADLINE, "grow to be admitted and Running")
        first_pods = running_pods(client, ns, "grow", 2)
        first = workload_of(client, ns, job)
        assert first is not None and pod_set_counts(first) == {"chief": 1, "worker": 1}

        scaled_at = timeline.elapsed()
        cluster.kubectl("scale", "tfjob/grow", "--replicas=3", "-n", ns)
        wait_for(lambda: (w := workload_of(client, ns, job)) is not None and w["metadata"]["uid"] != first[
            "metadata"]["uid"] and is_true(w, "Admitted"), DEADLINE, "a Workload of the new size to be admitted")
        second_pods = running_pods(client, ns, "grow", 4)
        wait_for(lambda: condition(client, ns, "grow", "Running"), DEADLINE, "grow to be Running again")
        running_again = timeline.elapsed()
        print(f"kubectl scale 1 -> 3 under Kueue: Running again with 4 pods after {running_again - scaled_at:.2f} s")

        second = workload_of(client, ns, job)
        assert second is not None and pod_set_counts(second) == {"chief": 1, "worker": 3}
        assert not {p["metadata"]["uid"] for p in second_pods} & {p["metadata"]["uid"] for p in first_pods}
        # Kueue's own account of it, as events on the job.
        reasons = event_reasons(client, ns, "grow")
        assert {"Stopped", "DeletedWorkload", "CreatedWorkload", "Started"} <= reasons, sorted(reasons)
        stopped = [e["message"] for e in events_about(client, ns, "grow") if e.get("reason") == "Stopped"]
        assert any("No matching Workload" in message for message in stopped), stopped
        assert timeline.first("grow", "suspended ended") is not None  # suspended by Kueue's webhook, then admitted
        status = job_status(client, ns, "grow")
        assert {t: s.get("restarts", 0) for t, s in status["replicaStatuses"].items()} == {"Chief": 0, "Worker": 0}
        assert condition(client, ns, "grow", "Failed") is None
        assert status["workerReplicas"] == 3
    finally:
        timeline.stop()
        print(f"--- resize timeline (s since the first create) ---\n{timeline.table()}")
        print(f"events on grow: {[(e.get('reason'), e.get('message')) for e in events_about(client, ns, 'grow')]}")


def pod_set_counts(workload: dict[str, Any]) -> dict[str, int]:
    return {pod_set["name"]: pod_set["count"] for pod_set in workload["spec"]["podSets"]}


def test_the_start_sees_kueues_adapter_and_never_runs_both(
        kueue_namespace: str, operators: Callable[..., OperatorProcess], tmp_path: Path) -> None:
    """Kueue's TFJob adapter covers the namespace (its webhook suspends a queued TFJob there, on a dry run): a tfop
    whose config chose its own integration refuses to start, saying why and what to change; one whose config
    leaves the integration out gives way to the adapter, and says so."""
    refused = operators("--config", str(integration_config(tmp_path, "own")))
    process = refused.start(wait_ready=False).process
    assert process is not None and process.wait(DEADLINE) == 1, refused.log_tail(20)
    said = refused.log_tail(20)
    assert (f"kueue.integration is own, but Kueue's kubeflow.org/tfjob adapter is enabled (its webhook suspended a "
            f"TFJob naming a queue in namespace {kueue_namespace}, on a dry run)") in said, said

    settled = operators().start()
    lines = [json.loads(line) for line in settled.log_path.read_text().splitlines() if line.startswith("{")]
    note = next(line for line in lines if line.get("event") == "kueue integration")
    assert (note["level"], note["integration"]) == ("warning", "kueue"), note
    assert "tfop leaves queueing to it (kueue.integration: kueue)" in note["note"], note


def test_a_job_the_adapter_takes_after_the_start_gets_no_second_workload(
        cluster: LocalCluster, kueue: Any, kube_client: KubeClient, namespace: str,
        operators: Callable[..., OperatorProcess], tmp_path: Path) -> None:
    """tfop's own integration chosen and started while Kueue's webhooks leave the namespace out (its dry run is not
    suspended there); the namespace labelled for them afterwards, Kueue's adapter takes the next job and makes its
    Workload. tfop makes none and no pods, and says why (Suspended KueueAdapterConflict, a Warning); with the
    adapter's Workload deleted, and the adapter's suspension cleared, tfop queues the job itself."""
    client, ns = kube_client, namespace
    own = operators("--config", str(integration_config(tmp_path, "own"))).start()
    cover_namespace(cluster, ns, KUEUE_NAMESPACE_LABEL)
    job = client.create(TFJOBS, queued_tfjob("both", "nowhere", gpus_per_replica=1), ns)
    assert job["spec"]["runPolicy"]["suspend"] is True  # Kueue's webhook took it
    theirs = wait_for(lambda: workload_of(client, ns, job), DEADLINE, "Kueue's adapter to make the job's Workload")
    assert "kueue.x-k8s.io/job-uid" in theirs["metadata"]["labels"]
    held = wait_for(lambda: (c := condition(client, ns, "both", "Suspended")) and
                    c.get("reason") == "KueueAdapterConflict" and c, DEADLINE, "tfop to say both integrations act")
    print(f"held: {held['message']}")
    assert f"its Workload {theirs['metadata']['name']}" in held["message"]
    # Events follow the status that announces them (the applier records them once it is stored).
    warned = wait_for(lambda: [e for e in events_about(client, ns, "both") if e["reason"] == "KueueAdapterConflict"],
                      DEADLINE, "the KueueAdapterConflict event")
    assert [e["type"] for e in warned] == ["Warning"], warned
    workloads = client.list(WORKLOADS, ns)[0]
    assert [w["metadata"]["name"] for w in workloads] == [theirs["metadata"]["name"]], "tfop made a Workload too"
    assert live_pods(client, ns, "both") == []
    assert own.process is not None and own.process.poll() is None
