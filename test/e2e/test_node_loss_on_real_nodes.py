"""A lost node does not lose the job, shown on two real nodes with real TensorFlow: a node is failed mid-training
the two ways real clusters lose nodes (power loss: `node stop`; cut off with its processes alive: `node
partition`), the node lifecycle controller marks it lost after its grace, tfop replaces the replicas on it on the
other node, and the job trains on (ParameterServerStrategy) or restarts together and resumes from its checkpoint
in the shared directory (MultiWorkerMirroredStrategy), then Succeeds. Each test prints its timeline (seconds after
the node failed), the figures docs/tfjob/node-loss.md quotes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.operators import GoOperatorProcess
from localcluster import LocalCluster
from localcluster.host import processes_in_cgroup
from support.node_loss import (
    NODE_MONITOR_GRACE,
    RESUMED,
    STEP,
    Timeline,
    condition_at,
    container_logs,
    follow_logs,
    node_lost_at,
    started_at,
    step_spans,
    tf_pod,
    timestamp,
)
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods, wait_for_condition
from support.waiting import consistently, wait_for
from tfop.kube.client import KubeClient

LOST = "real-1"  # the node each test fails; real-0 stays up
GRACE = 10  # tfop's node-loss grace for these jobs (the job's annotation), seconds
# From a node failing to the job Running again: the node monitor's grace, tfop's, and at most 30 s more.
BOUND = NODE_MONITOR_GRACE + GRACE + 30


@pytest.fixture
def lost_node_back(real_node: LocalCluster) -> Iterator[LocalCluster]:
    """Whatever a test did to real-1, it is up and Ready for the next test."""
    yield real_node
    node = real_node.node(LOST)
    if node.failed():
        real_node.node_start(LOST)
    wait_for(lambda: real_node.admin.node_ready_text(LOST) == "Ready", 120, f"{LOST} to be Ready again")


def tfjob(name: str, replicas: dict[str, tuple[int, dict[str, Any]]], **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "annotations": {"tfop.kubeflow.org/node-loss-grace-seconds": str(GRACE),
                                                   **annotations}},
        "spec": {"runPolicy": {"backoffLimit": 3, "cleanPodPolicy": "None"},
                 "tfReplicaSpecs": {kind: {"replicas": count, "restartPolicy": "ExitCode",
                                           "template": {"spec": spec}} for kind, (count, spec) in replicas.items()}},
    }


def ps_job(name: str) -> dict[str, Any]:
    """ParameterServerStrategy for 40 steps of a second: the chief and the PS on real-0, both workers on real-1."""
    env = {"STEPS": "40", "STEP_SECONDS": "1"}
    return tfjob(name, {
        "Chief": (1, tf_pod("train_ps.py", env, node="real-0")),
        "PS": (1, tf_pod("train_ps.py", env, node="real-0")),
        "Worker": (2, tf_pod("train_ps.py", env, prefer=LOST)),
    })


def pods_by_task(cluster: LocalCluster, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    return {f"{p['metadata']['labels']['training.kubeflow.org/replica-type']}:"
            f"{p['metadata']['labels']['training.kubeflow.org/replica-index']}": p
            for p in job_pods(cluster, namespace, job)}


def logged(cluster: LocalCluster, namespace: str, job: str, task: str, pattern: str) -> bool:
    """Whether the current pod of `task` (e.g. chief:0; pods are named with the job's RuntimeId) logged it."""
    pod = pods_by_task(cluster, namespace, job).get(task)
    return bool(pod) and pattern in cluster.kubectl("logs", "-n", namespace, pod["metadata"]["name"],
                                                    check=False).stdout


def wait_until_training(cluster: LocalCluster, namespace: str, job: str, task: str, step: int) -> None:
    wait_for(lambda: logged(cluster, namespace, job, task, f"step {step} loss"), 300, f"{task} to reach step {step}")


def recovery(cluster: LocalCluster, namespace: str, job: str, failed_at: float, lost: dict[str, str]) -> Timeline:
    """The timeline once the job Succeeded; `lost`: task -> uid of the pods that were on the failed node."""
    done = wait_for_condition(cluster, namespace, job, {"Failed", "Succeeded"}, timeout=600)
    timeline = Timeline(failed_at)
    marked = node_lost_at(cluster, LOST)
    if marked:
        timeline.mark("marked lost", marked)
    pods = pods_by_task(cluster, namespace, job)
    replacements = [pods[task] for task in lost if task in pods and pods[task]["metadata"]["uid"] != lost[task]]
    if replacements:
        timeline.mark("replacement created", min(timestamp(p["metadata"]["creationTimestamp"]) for p in replacements))
    restarted = [at for p in pods.values() if (at := started_at(p)) and at > failed_at]
    if restarted:
        timeline.mark("Running again", max(restarted))
    succeeded = condition_at(done, "Succeeded")
    if succeeded:
        timeline.mark("Succeeded", succeeded)
    return timeline


def assert_recovered(job: dict[str, Any], timeline: Timeline, scenario: str) -> None:
    print(f"\n{scenario}: {timeline.row(scenario)}")
    assert condition_at(job, "Succeeded"), job["status"]
    assert timeline.stages.get("Running again", BOUND + 1) <= BOUND, timeline.stages


def test_ps_training_goes_on_when_a_workers_node_loses_power(
        lost_node_back: LocalCluster, operator: OperatorProcess, namespace: str) -> None:
    cluster, job = lost_node_back, "ps-power"
    apply(cluster, namespace, ps_job(job))
    wait_until_training(cluster, namespace, job, "chief:0", 5)
    before = pods_by_task(cluster, namespace, job)
    lost = {task: p["metadata"]["uid"] for task, p in before.items() if p["spec"]["nodeName"] == LOST}
    assert set(lost) == {"worker:0", "worker:1"}, {t: p["spec"]["nodeName"] for t, p in before.items()}

    failed_at = time.time()
    cluster.node_stop(LOST)
    timeline = recovery(cluster, namespace, job, failed_at, lost)
    job_object = get(cluster, namespace, "tfjob", job)
    after = pods_by_task(cluster, namespace, job)
    assert {after[t]["spec"]["nodeName"] for t in lost} == {"real-0"}
    assert logged(cluster, namespace, job, "chief:0", "step 40 loss")
    # A replacement for a lost node is not a restart.
    assert job_object["status"]["replicaStatuses"]["Worker"].get("restarts", 0) == 0
    events = cluster.kubectl("get", "events", "-n", namespace, "--field-selector", "reason=NodeLost").stdout
    assert f"node {LOST} is unreachable since" in events, events
    assert_recovered(job_object, timeline, "PS, worker's node stopped")


@pytest.mark.parametrize("failure", ["stop", "partition"])
def test_mwms_training_restarts_together_and_resumes_from_its_checkpoint(
        lost_node_back: LocalCluster, operator: OperatorProcess, namespace: str, failure: str) -> None:
    cluster, job = lost_node_back, f"mwms-{failure}"
    checkpoints = cluster.shared_dir / f"{namespace}-{job}"
    checkpoints.mkdir()
    env = {"STEPS": "30", "STEP_SECONDS": "1", "SAVE_EVERY": "5", "CHECKPOINT_DIR": f"/shared/{checkpoints.name}"}
    apply(cluster, namespace, tfjob(job, {"Worker": (2, tf_pod("train_mwms.py", env, spread=job,
                                                               shared=cluster.shared_dir))},
                                    **{"tfop.kubeflow.org/restart-scope": "Job"}))
    wait_until_training(cluster, namespace, job, "worker:0", 7)  # past the checkpoint of step 5
    before = pods_by_task(cluster, namespace, job)
    lost = {task: p["metadata"]["uid"] for task, p in before.items() if p["spec"]["nodeName"] == LOST}
    assert len(lost) == 1, {t: p["spec"]["nodeName"] for t, p in before.items()}

    failed_at = time.time()
    (cluster.node_stop if failure == "stop" else cluster.node_partition)(LOST)
    timeline = recovery(cluster, namespace, job, failed_at, lost)
    job_object = get(cluster, namespace, "tfjob", job)
    logs = container_logs(cluster, namespace, job)
    after = pods_by_task(cluster, namespace, job)
    chief = logs[after["worker:0"]["metadata"]["uid"]]
    resumed = [(line, int(m[1])) for line in chief if (m := RESUMED.search(line.text))]
    assert resumed, [line.text for line in chief][-20:]
    resume_line, step = resumed[-1]
    first_step = next(int(m[1]) for line in chief if line.at >= resume_line.at and (m := STEP.match(line.text)))
    assert step >= 5 and first_step == step + 1, (step, first_step)
    timeline.resumed_step = step
    timeline.mark("resumed", resume_line.at)
    # One job restart, counted once (or none, when the node loss itself led: that is no restart).
    assert sum(s.get("restarts", 0) for s in job_object["status"]["replicaStatuses"].values()) <= 1
    if failure == "partition":
        assert_one_process_per_task(cluster, namespace, job, logs, lost)
        heal_and_check_nothing_interferes(cluster, namespace, job, lost)
    assert_recovered(job_object, timeline, f"MWMS, a worker's node {'stopped' if failure == 'stop' else 'cut off'}")


def test_a_replica_told_to_stop_saves_with_the_others_and_the_job_resumes_from_there(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str) -> None:
    """Graceful preemption: a replica's pod deleted (as an eviction or a preemption would) gets SIGTERM and its
    grace period; TensorFlow's PreemptionCheckpointHandler has every replica save at the same step and exit
    retryably; the job restarts together and resumes from that step. No periodic checkpoint is taken here
    (SAVE_EVERY beyond the run), so only the SIGTERM path can have saved it."""
    cluster, job = real_node, "mwms-preempted"
    checkpoints = cluster.shared_dir / f"{namespace}-{job}"
    checkpoints.mkdir()
    env = {"STEPS": "30", "STEP_SECONDS": "1", "SAVE_EVERY": "1000", "CHECKPOINT_DIR": f"/shared/{checkpoints.name}"}
    apply(cluster, namespace, tfjob(job, {"Worker": (2, tf_pod("train_mwms.py", env, spread=job, grace=30,
                                                               shared=cluster.shared_dir))},
                                    **{"tfop.kubeflow.org/restart-scope": "Job"}))
    wait_until_training(cluster, namespace, job, "worker:0", 7)
    before = pods_by_task(cluster, namespace, job)
    # A deleted pod's logs go with it: follow both old pods' to their end.
    followers = {task: follow_logs(cluster, namespace, pod["metadata"]["name"]) for task, pod in before.items()}
    cluster.kubectl("delete", "pod", "-n", namespace, before["worker:1"]["metadata"]["name"], "--wait=false")

    old = {task: follower.communicate(timeout=300)[0] for task, follower in followers.items()}
    done = wait_for_condition(cluster, namespace, job, {"Failed", "Succeeded"}, timeout=600)
    assert condition_at(done, "Succeeded"), done["status"]
    for task, text in old.items():
        assert "told to stop: saved the checkpoint" in text, (task, text[-2000:])
    saved = max(int(m[1]) for line in old["worker:0"].splitlines() if (m := STEP.match(line)))
    new_chief = pods_by_task(cluster, namespace, job)["worker:0"]["metadata"]["uid"]
    chief = container_logs(cluster, namespace, job)[new_chief]
    resumed = [int(m[1]) for line in chief if (m := RESUMED.search(line.text))]
    first = next(int(m[1]) for line in chief if (m := STEP.match(line.text)))
    print(f"\npreempted: saved at step {saved}, resumed at step {resumed}, first step after it {first}")
    assert resumed == [saved] and saved >= 7 and first == saved + 1
    assert sum(s.get("restarts", 0) for s in done["status"]["replicaStatuses"].values()) <= 1


def assert_one_process_per_task(cluster: LocalCluster, namespace: str, job: str, logs: dict[str, list[Any]],
                                lost: dict[str, str]) -> None:
    """How the test knows no two processes of one task ran at once: the runtime timestamps every line each
    container writes into its log file on its node's disk, which the cut-off node keeps. The partitioned task's old
    process logged its last step before its replacement logged its first."""
    pods = pods_by_task(cluster, namespace, job)
    for task, old_uid in lost.items():
        old, new = step_spans(logs.get(old_uid, [])), step_spans(logs[pods[task]["metadata"]["uid"]])
        assert old and new, (task, old, new)
        assert old[1] < new[0], f"{task}: the cut-off process stepped until {old[1]}, its replacement from {new[0]}"


def heal_and_check_nothing_interferes(cluster: LocalCluster, namespace: str, job: str, lost: dict[str, str]) -> None:
    """The node comes back after the job moved on: its kubelet finds the old pods gone from the API and kills
    their containers; the job keeps its replacements, and the old process writes no further step."""
    before = {t: p["metadata"]["uid"] for t, p in pods_by_task(cluster, namespace, job).items()}
    assert any(_running_in(cluster, LOST, uid) for uid in lost.values()), "the cut-off process did not live on"
    cluster.node_start(LOST)
    wait_for(lambda: not any(_running_in(cluster, LOST, uid) for uid in lost.values()), 120,
             "the healed node to kill the old attempt's containers")
    assert {t: p["metadata"]["uid"] for t, p in pods_by_task(cluster, namespace, job).items()} == before


def _running_in(cluster: LocalCluster, node: str, uid: str) -> bool:
    """Whether any process of the pod `uid` still runs on the node (its cgroup, under the node's cgroup root)."""
    root = cluster.node(node).layout.network.cgroup_root
    return bool(processes_in_cgroup(f"{root}/kubepods/besteffort/pod{uid}")
                + processes_in_cgroup(f"{root}/kubepods/burstable/pod{uid}")
                + processes_in_cgroup(f"{root}/kubepods/pod{uid}"))


def test_the_go_operator_leaves_the_same_job_waiting_for_its_lost_node(
        lost_node_back: LocalCluster, kube_client: KubeClient, namespace: str, go_crd: Path,
        training_operator: tuple[Path, Path], tmp_path: Path) -> None:
    """The first scenario under the Kubeflow training operator v1.9.3, measured the same way and over the time tfop
    needed at most, plus 30 s: its workers stay bound to the lost node, nothing replaces them."""
    cluster, job = lost_node_back, "ps-power-go"
    go = GoOperatorProcess(training_operator[0], kube_client, cluster.kubeconfig, tmp_path / "go-operator.log",
                           [f"--namespace={namespace}"])
    go.start(timeout=300)
    try:
        apply(cluster, namespace, ps_job(job))
        wait_until_training(cluster, namespace, job, "chief:0", 5)
        before = pods_by_task(cluster, namespace, job)
        lost = {task: p["metadata"]["uid"] for task, p in before.items() if p["spec"]["nodeName"] == LOST}
        assert set(lost) == {"worker:0", "worker:1"}

        failed_at = time.time()
        cluster.node_stop(LOST)
        window = BOUND + 30

        def waiting_on_the_lost_node() -> bool:
            """The same pods, still bound to the lost node; the job neither moved on nor finished."""
            now = pods_by_task(cluster, namespace, job)
            return ({t: now[t]["metadata"]["uid"] for t in lost if t in now} == lost
                    and not condition_at(get(cluster, namespace, "tfjob", job), "Succeeded"))
        consistently(waiting_on_the_lost_node, failed_at + window - time.time(),
                     "the Go operator's job waiting on its lost node", interval=5)
        timeline = Timeline(failed_at)
        marked = node_lost_at(cluster, LOST)
        if marked:
            timeline.mark("marked lost", marked)
        print(f"\nGo operator v1.9.3 (observed {window} s): {timeline.row('PS, worker node stopped, Go operator')}")
        assert "marked lost" in timeline.stages
    finally:
        go.stop()
