"""Priority preemption of real TensorFlow through tfop's own Kueue integration (docs/scheduling/kueue.md), on the
real nodes: Kueue v0.19 as its release ships (no kubeflow.org/tfjob; tfop's kind among its external frameworks,
support/kueue_own.py), a ClusterQueue whose quota holds one job, and tfop with `kueue.integration` left out (own).

A Keras `fit` job under MultiWorkerMirroredStrategy with BackupAndRestore (bench.disruption_scenarios' Keras job: a
chief on real-0, a worker on real-1, a backup at every epoch's end) of a low WorkloadPriorityClass is admitted and
trains past its first epoch's backup; then a TFJob of a high WorkloadPriorityClass, which needs part of that quota,
is queued. Kueue preempts the low job's Workload; tfop stops its pods gracefully (SIGTERM: the script exits at
once, leaving its last backup), hands the quota back, and the high job runs to Succeeded. Its Workload deleted, the
low job is admitted again, resumes from its backup at an epoch past 0 with no restart counted, and Succeeds. The
test prints the measured table (docs/scheduling/kueue.md's "Measured" section), in seconds from the low job's
creation.

The pods carry no PriorityClass: only Kueue preempts here, never the scheduler. Kueue runs on loopback beside the
session's cluster and is stopped afterwards (its webhook configurations deleted; its CRDs stay, as `make kueue-down`
leaves them).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.disruption_scenarios import (
    KERAS_EPOCHS,
    Row,
    Target,
    Watched,
    bring_back,
    diagnosis,
    finish,
    keras_job,
    pods_by_task,
    row,
    start,
    wait_until_training,
)
from bench.real_jobs import condition_at, started_at, timestamp
from localcluster import LocalCluster
from support.kueue import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    PRIORITY_CLASSES,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    RESOURCE_FLAVORS,
    flavor,
    is_true,
    local_queue,
    quota_queue,
    workload_of,
    workload_priority_class,
)
from support.kueue_own import NAMESPACE_LABEL, event_of, markdown_table, released_kueue
from support.namespaces import exists
from support.real_node_jobs import apply, get, job_pods, scenario_namespace, shell_container, tfjob
from support.tfjobs import events_about
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError
from tfop.kube.resource import Resource

LOW, HIGH = "keras-low", "urgent-high"
QUEUE = "one-job"
PRIORITIES = {"low": 10, "high": 1000}
# What tf_pod asks for each replica, and so the low job's two replicas: the ClusterQueue holds that and no more, so
# the high job (one replica of the same requests) fits only once the low job has given its quota back.
REPLICA_REQUESTS = {"cpu": "50m", "memory": "256Mi"}
ONE_JOB_QUOTA = {"cpu": "100m", "memory": "512Mi"}
HOLD_SECONDS = 5  # how long the high job's one replica runs
WINDOW = 900.0  # seconds the low job is given to end once preempted: it is admitted again and imports TensorFlow
STOPPED = "told to stop"  # train_keras.py's line on SIGTERM, before it exits leaving its last backup


@dataclass
class Preemption:
    cluster: LocalCluster
    namespace: str
    watched: Watched
    row: Row
    high: dict[str, Any]  # the high job once it ended
    high_pod: dict[str, Any]  # its one replica's pod
    preempted: dict[str, Any] | None  # Kueue's Preempted event of the low job's Workload
    evicted: dict[str, Any] | None  # tfop's EvictedByKueue event of the low job
    readmitted: dict[str, Any] | None  # its AdmittedByKueue event once admitted again
    priorities: dict[str, int | None]  # each job's Workload's spec.priority, as Kueue read it
    why: str  # the low job's pods' last lines and the namespace's events, for a failure's message


@contextmanager
def one_job_queue(client: KubeClient, namespace: str) -> Iterator[None]:
    """A flavor, a ClusterQueue of ONE_JOB_QUOTA whose lower priorities give way, the LocalQueue QUEUE in the
    namespace, and the two WorkloadPriorityClasses (named `<namespace>-low` and `-high`). The cluster-wide ones are
    deleted afterwards, while Kueue runs: it lets go of their finalizers once no Workload uses them."""
    made: list[tuple[Resource, str]] = []

    def make(resource: Resource, body: dict[str, Any]) -> None:
        client.create(resource, body)
        made.append((resource, body["metadata"]["name"]))

    try:
        make(RESOURCE_FLAVORS, flavor(f"{namespace}-flavor"))
        make(CLUSTER_QUEUES, quota_queue(namespace, f"{namespace}-flavor", ONE_JOB_QUOTA, namespace, preemption=True))
        for level, value in PRIORITIES.items():
            make(PRIORITY_CLASSES, workload_priority_class(f"{namespace}-{level}", value))
        client.create(LOCAL_QUEUES, local_queue(QUEUE, namespace), namespace)
        wait_for(lambda: is_true(client.get(CLUSTER_QUEUES, namespace), "Active"), DEADLINE,
                 "the ClusterQueue to be Active", interval=KUBECTL_INTERVAL)
        yield
    finally:
        for resource, name in reversed(made):
            with suppress(ApiError):  # gone already; a leftover must not hide the run's own failure
                client.delete(resource, name)
        with suppress(AssertionError):  # one still in use (a failed run's Workload) is left to the cluster's end
            wait_for(lambda: not any(exists(client, resource, name) for resource, name in made), DEADLINE,
                     "Kueue to let go of the queue's objects", interval=KUBECTL_INTERVAL)


def queued(job: dict[str, Any], namespace: str, level: str) -> dict[str, Any]:
    job["metadata"]["labels"] = {QUEUE_LABEL: QUEUE, PRIORITY_LABEL: f"{namespace}-{level}"}
    return job


def high_job(busybox: str, namespace: str) -> dict[str, Any]:
    """One Chief that holds its share of the quota for HOLD_SECONDS and exits 0: no TensorFlow, nothing to wait
    for but Kueue."""
    container = shell_container(busybox, f"sleep {HOLD_SECONDS}", resources={"requests": REPLICA_REQUESTS})
    return queued(tfjob(HIGH, {"Chief": {"restartPolicy": "Never", "spec": {
        "terminationGracePeriodSeconds": 1, "containers": [container]}}}, backoff_limit=0), namespace, "high")


def workload(client: KubeClient, cluster: LocalCluster, namespace: str, job: str) -> dict[str, Any] | None:
    return workload_of(client, namespace, get(cluster, namespace, "tfjob", job))


def ended(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The TFJob once it Succeeded or Failed."""
    job = get(cluster, namespace, "tfjob", name)
    return job if condition_at(job, "Succeeded") or condition_at(job, "Failed") else None


def admitted_again(client: KubeClient, namespace: str) -> dict[str, Any] | None:
    return next((e for e in events_about(client, namespace, LOW) if e.get("reason") == "AdmittedByKueue"
                 and "admitted again" in e.get("message", "")), None)


def event_at(event: dict[str, Any]) -> float:
    """When the event first happened: Kueue's (events.k8s.io) carry an eventTime of microseconds, tfop's a
    firstTimestamp of seconds."""
    return timestamp(event.get("eventTime") or event["firstTimestamp"])


def finished_at(pod: dict[str, Any]) -> float | None:
    for status in pod.get("status", {}).get("containerStatuses", []):
        ended = status.get("state", {}).get("terminated", {}).get("finishedAt")
        if ended:
            return timestamp(ended)
    return None


@pytest.fixture(scope="module")
def preempted(real_node: LocalCluster, tfjob_crd: Path, busybox: str,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Preemption]:
    cluster = real_node
    bring_back(cluster)
    client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
    with ExitStack() as stack:
        kueue = released_kueue(cluster)
        stack.callback(kueue.stop)
        kueue.start()
        # tfop starts once Kueue serves its kinds: with its config's kueue section left out it then runs its own.
        namespace, _ = stack.enter_context(scenario_namespace(cluster, "kpre", tmp_path_factory.mktemp("kpre")))
        cluster.kubectl("label", "namespace", namespace, "=".join(NAMESPACE_LABEL))  # Kueue's pod webhooks see it
        stack.enter_context(one_job_queue(client, namespace))
        target = Target(namespace, LOW, "tfop", "keras")
        low = keras_job(cluster, target)
        templates = [r["template"]["spec"] for r in low["spec"]["tfReplicaSpecs"].values()]
        assert [t["containers"][0]["resources"]["requests"] for t in templates] == [REPLICA_REQUESTS] * 2
        watched = start(cluster, target, queued(low, namespace, "low"))
        stack.callback(watched.logs.close)
        wait_until_training(cluster, [watched])
        low_workload = workload(client, cluster, namespace, LOW)
        assert low_workload is not None, diagnosis(cluster, watched)

        preempting = time.time()
        apply(cluster, namespace, high_job(busybox, namespace))
        high_workload = wait_for(lambda: workload(client, cluster, namespace, HIGH), DEADLINE,
                                 "the high job's Workload", interval=KUBECTL_INTERVAL)
        priorities = {level: w["spec"].get("priority") for level, w in (("low", low_workload),
                                                                         ("high", high_workload))}
        high = wait_for(lambda: ended(cluster, namespace, HIGH), WINDOW, "the high job to end",
                        interval=KUBECTL_INTERVAL, explain=lambda: diagnosis(cluster, watched))
        low_end = finish(cluster, [watched], WINDOW)[target]
        yield Preemption(cluster, namespace, watched, row(cluster, "preempted through Kueue", watched, low_end,
                                                          preempting),
                         high, job_pods(cluster, namespace, HIGH)[0],
                         event_of(client, namespace, low_workload["metadata"]["name"], "Preempted"),
                         event_of(client, namespace, LOW, "EvictedByKueue"),
                         admitted_again(client, namespace), priorities, diagnosis(cluster, watched))


def stopped_at(result: Preemption) -> float | None:
    """When the low job's first chief took the SIGTERM (its STOPPED line)."""
    lines = result.watched.logs.of(result.watched.before["chief:0"]["metadata"]["uid"])
    return next((line.at for line in lines if line.text.startswith(STOPPED)), None)


def table(result: Preemption) -> str:
    r, created = result.row, result.row.created

    def at(moment: float | None) -> str:
        return "never" if moment is None else f"{moment - created:.0f}"

    rows = [
        ("low job created (Keras MWMS, chief and worker; WorkloadPriorityClass value 10)", "0"),
        (f"last checkpoint saved before the stop (epoch {r.saved[1] if r.saved else '-'})",
         at(r.saved[0] if r.saved else None)),
        ("high job created (one replica; value 1000)", at(r.disrupted)),
        ("low job preempted (its Workload's `Preempted` event, Kueue's)",
         at(event_at(result.preempted) if result.preempted else None)),
        ("low job's chief stopped (SIGTERM: `told to stop`)", at(stopped_at(result))),
        ("high job ran (its replica started)", at(started_at(result.high_pod))),
        ("high job Succeeded", at(condition_at(result.high, "Succeeded"))),
        ("low job admitted again: `AdmittedByKueue`",
         at(event_at(result.readmitted) if result.readmitted else None)),
        ("low job's replicas running again", at(r.running_again)),
        (f"low job resumed from its backup at epoch {r.resumed[1] if r.resumed else '-'}",
         at(r.resumed[0] if r.resumed else None)),
        (f"low job Succeeded, restarts counted {r.restarts}", at(r.succeeded)),
    ]
    return markdown_table("Preemption through Kueue (seconds from the low job's creation):", ("what", "s"), rows)


def test_the_high_priority_job_preempts_the_running_one_through_kueue_and_succeeds(preempted: Preemption) -> None:
    result, why = preempted, preempted.why
    print(f"\n{table(result)}")
    assert result.priorities == PRIORITIES, result.priorities
    assert result.preempted is not None and result.preempted["type"] == "Normal", (result.preempted, why)
    assert result.evicted is not None and "Preempted" in result.evicted["message"], (result.evicted, why)
    stopped = stopped_at(result)
    # The chief stopped because Kueue preempted its Workload, after the high job came.
    assert stopped is not None and result.row.disrupted < event_at(result.preempted) < stopped, (stopped, why)
    assert condition_at(result.high, "Succeeded"), (result.high.get("status"), why)
    # One job at a time: the high job's replica started only once the low job's chief had stopped.
    began = started_at(result.high_pod)
    assert began is not None and began > stopped, (began, stopped)


def test_the_preempted_job_resumes_from_its_backup_past_epoch_0_uncounted_and_succeeds(
        preempted: Preemption) -> None:
    r, why = preempted.row, preempted.why
    assert r.succeeded is not None, why
    assert r.restarts == 0, why
    assert preempted.readmitted is not None and "after 1 eviction (Preempted)" in preempted.readmitted["message"], \
        (preempted.readmitted, why)
    before = {task: pod["metadata"]["uid"] for task, pod in preempted.watched.before.items()}
    after = pods_by_task(preempted.cluster, preempted.namespace, LOW)
    assert set(after) == set(before) and not {p["metadata"]["uid"] for p in after.values()} & set(before.values())
    # Admitted again only once the high job's Workload was gone, i.e. after its replica had ended.
    high_ended = finished_at(preempted.high_pod)
    assert r.running_again is not None and high_ended is not None and r.running_again > high_ended, r.cells()
    assert r.saved and r.resumed, (r.saved, r.resumed, why)
    # Trained past epoch 1 and saved before the stop; resumed from that backup, or one later saved in the grace.
    assert 1 <= r.saved[1] <= r.resumed[1] <= r.saved[1] + 1 and r.resumed[1] < KERAS_EPOCHS, (r.saved, r.resumed)
    assert r.running_again <= r.resumed[0] <= r.succeeded, r.cells()
