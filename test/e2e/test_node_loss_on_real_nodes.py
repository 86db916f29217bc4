"""A lost node does not lose the job, shown on two real nodes with real TensorFlow: a node is failed mid-training
the two ways real clusters lose nodes (power loss: `node stop`; cut off with its processes alive: `node
partition`), the node lifecycle controller marks it lost after its grace, tfop replaces the replicas on it on the
other node, and the job trains on (ParameterServerStrategy) or restarts together and resumes from its checkpoint
in the shared directory (MultiWorkerMirroredStrategy), then Succeeds. One power loss serves three jobs at once:
tfop's PS and MWMS jobs and the Go operator's copy of the PS job, so the comparison is of one failure. The cut-off
runs beside a graceful preemption (a replica told to stop, in a job of its own on real-0), so the waits of the one
overlap the TensorFlow work of the other. Each test prints its timeline (seconds after the node failed), the
figures docs/tfjob/node-loss.md quotes, and each scenario the moments of its stages."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.operators import GoOperatorProcess
from localcluster import LocalCluster
from localcluster.host import processes_in_cgroup
from localcluster.operator_config import write as write_operator_config
from support.node_loss import (
    RESUMED,
    STEP,
    LogLine,
    Stages,
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
from support.real_node_jobs import apply, get, job_pods, story, wait_for_condition
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for
from tfop.kube.client import KubeClient

LOST = "real-1"  # the node each test fails; real-0 stays up
GRACE = 10  # tfop's node-loss grace for these jobs (the job's annotation), seconds


def bring_back(cluster: LocalCluster) -> None:
    """real-1 up, Ready and without the taints of its loss: the node lifecycle controller takes those off a monitor
    pass (5 s) after Ready, and a job started meanwhile would see its node unreachable."""
    if cluster.node(LOST).failed():
        cluster.node_start(LOST)

    def healthy() -> bool:
        node = cluster.api("GET", f"/api/v1/nodes/{LOST}")
        taints = {t["key"] for t in node["spec"].get("taints", [])}
        return (cluster.admin.node_ready_text(LOST) == "Ready"
                and not taints & {"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"})
    wait_for(healthy, DEADLINE, f"{LOST} to be Ready again, without the unreachable and not-ready taints",
             interval=KUBECTL_INTERVAL)


def tfjob(name: str, replicas: dict[str, tuple[int, dict[str, Any]]], **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "annotations": {"tfop.kubeflow.org/node-loss-grace-seconds": str(GRACE),
                                                   **annotations}},
        "spec": {"runPolicy": {"backoffLimit": 3, "cleanPodPolicy": "None"},
                 "tfReplicaSpecs": {kind: {"replicas": count, "restartPolicy": "ExitCode",
                                           "template": {"spec": spec}} for kind, (count, spec) in replicas.items()}},
    }


IMPORT_DEADLINE = 900  # seconds for a replica to import TensorFlow on a loaded 2-core machine

def ps_job(name: str) -> dict[str, Any]:
    """ParameterServerStrategy for 40 steps of a second: the chief and the PS on real-0, the worker on real-1. One
    worker, as with two both were on real-1 and lost together (the coordinator is left with none either way), and
    each TensorFlow process more costs the loaded machine its import.
    The coordinator exits retryably when a task is out of reach (on a loaded machine a DNS lookup can fail for
    seconds; a restarted coordinator finds the lost workers' names gone until they are replaced): a budget of
    restarts for that, as TensorFlow's own advice for the coordinator is to restart it. The test asserts the
    worker's replacement counted none."""
    env = {"STEPS": "40", "STEP_SECONDS": "1"}
    job = tfjob(name, {
        "Chief": (1, tf_pod("train_ps.py", env, node="real-0")),
        "PS": (1, tf_pod("train_ps.py", env, node="real-0")),
        "Worker": (1, tf_pod("train_ps.py", env, prefer=LOST)),
    })
    job["spec"]["runPolicy"]["backoffLimit"] = 10
    return job


def pods_by_task(cluster: LocalCluster, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    return {f"{p['metadata']['labels']['training.kubeflow.org/replica-type']}:"
            f"{p['metadata']['labels']['training.kubeflow.org/replica-index']}": p
            for p in job_pods(cluster, namespace, job)}


def logged(cluster: LocalCluster, namespace: str, job: str, task: str, pattern: str) -> bool:
    """Whether the current pod of `task` (e.g. chief:0; pods are named with the job's RuntimeId) logged it."""
    pod = pods_by_task(cluster, namespace, job).get(task)
    return pod is not None and pattern in cluster.kubectl("logs", "-n", namespace, pod["metadata"]["name"],
                                                          check=False).stdout


def wait_until_training(cluster: LocalCluster, namespace: str, job: str, task: str, step: int,
                        stages: Stages) -> None:
    try:
        # Its first line comes once TensorFlow is imported: at the start of a `make test`, ten processes importing it
        # at once beside the other lanes' new clusters took 335 s; the training then gets its own deadline.
        wait_for(lambda: logged(cluster, namespace, job, task, "tfop-example: task="), IMPORT_DEADLINE,
                 f"{task} to import TensorFlow and start", interval=KUBECTL_INTERVAL)
        stages.mark(f"{job} {task} imported TensorFlow")
        wait_for(lambda: logged(cluster, namespace, job, task, f"step {step} loss"), 300,
                 f"{task} to reach step {step}", interval=KUBECTL_INTERVAL)
        stages.mark(f"{job} {task} at step {step}")
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\n{training_diagnosis(cluster, namespace, [job], task)}") from None


def training_diagnosis(cluster: LocalCluster, namespace: str, jobs: list[str], task: str = "worker:0") -> str:
    """Where each job's pods are, the last lines of its `task`, and the namespace's events: its log says where
    TensorFlow waits (a worker out of reach, a DNS lookup, the import itself)."""
    told = []
    for job in jobs:
        pods = {t: (p["spec"].get("nodeName"), p["status"].get("phase"),
                    [s.get("state") for s in p["status"].get("containerStatuses", [])])
                for t, p in pods_by_task(cluster, namespace, job).items()}
        pod = pods_by_task(cluster, namespace, job).get(task)
        tail = "" if pod is None else cluster.kubectl("logs", "-n", namespace, "--tail", "40",
                                                      pod["metadata"]["name"], check=False).stdout
        told.append(f"{job} pods: {pods}\n{job} {task}'s last log lines:\n{tail}")
    return "\n".join([*told, story(cluster, namespace)])


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
    # The replacements' start: a restart together starts the others with them; a later restart of another replica
    # (the PS coordinator exits retryably on a moment's outage) is not the node loss's recovery.
    restarted = [at for p in replacements if (at := started_at(p)) and at > failed_at]
    if restarted:
        timeline.mark("Running again", max(restarted))
    succeeded = condition_at(done, "Succeeded")
    if succeeded:
        timeline.mark("Succeeded", succeeded)
    return timeline


def assert_recovered(job: dict[str, Any], timeline: Timeline, scenario: str, *, after_grace: bool) -> None:
    """The recovery in the order the rules give, whatever each step took on the machine: the replacement comes
    once the node is marked lost, never before (the hard rule), and with `after_grace` no sooner than tfop's grace
    after that (a pod already being deleted, as in a restart together, goes as soon as its node is marked lost);
    then it runs, and the job Succeeds. (All at the apiserver's and runtime's whole seconds.)"""
    print(f"\n{scenario}: {timeline.row(scenario)}")
    assert condition_at(job, "Succeeded"), job["status"]
    at = timeline.moments
    stages = ("marked lost", "replacement created", "Running again", "Succeeded")
    assert all(stage in at for stage in stages), timeline.stages
    assert [at[stage] for stage in stages] == sorted(at[stage] for stage in stages), timeline.stages
    if after_grace:
        assert at["replacement created"] >= at["marked lost"] + GRACE, timeline.stages


def namespace_for(cluster: LocalCluster, base: str) -> str:
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    wait_for(lambda: cluster.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0,
             DEADLINE, f"the default ServiceAccount in namespace {name}", interval=KUBECTL_INTERVAL)
    return name


def mwms_job(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    """MultiWorkerMirroredStrategy for 30 steps of a second, one worker per node, a checkpoint every 5 steps in
    the shared directory, restarted together."""
    checkpoints = cluster.shared_dir / f"{namespace}-{name}"
    checkpoints.mkdir()
    env = {"STEPS": "30", "STEP_SECONDS": "1", "SAVE_EVERY": "5", "CHECKPOINT_DIR": f"/shared/{checkpoints.name}"}
    return tfjob(name, {"Worker": (2, tf_pod("train_mwms.py", env, spread=name, shared=cluster.shared_dir))},
                 **{"tfop.kubeflow.org/restart-scope": "Job"})


def on_lost_node(cluster: LocalCluster, namespace: str, job: str) -> dict[str, str]:
    """task -> uid of the job's pods on the node about to fail."""
    return {task: p["metadata"]["uid"] for task, p in pods_by_task(cluster, namespace, job).items()
            if p["spec"]["nodeName"] == LOST}


@dataclass
class PowerLoss:
    """real-1 lost power once, under three jobs at once, so the three outcomes are of one failure: tfop's
    ParameterServerStrategy job and MultiWorkerMirroredStrategy job, and the Go operator's copy of the PS job."""
    cluster: LocalCluster
    tfop: str  # the namespace tfop watches
    go: str  # the namespace the Go operator v1.9.3 watches
    failed_at: float
    lost: dict[str, dict[str, str]]  # job -> task -> uid of its pods that were on real-1
    timelines: dict[str, Timeline]
    go_window: float  # how long the Go operator's job was watched after the failure: until tfop's Succeeded
    go_pods: dict[str, str]  # task -> uid of the Go operator's job's pods at the end of that window
    go_job: dict[str, Any]  # and its TFJob then


@pytest.fixture(scope="module")
def power_loss(real_node: LocalCluster, tfjob_crd: Path, training_operator: tuple[Path, Path],
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[PowerLoss]:
    """Both operators run side by side, each watching its own namespace, on the session's CRD (tfop's, a superset
    of the Go operator's schema). Every job trains with workers on real-1, then real-1 loses power."""
    cluster, logs, stages = real_node, tmp_path_factory.mktemp("power-loss"), Stages("power loss")
    tfop_ns, go_ns = namespace_for(cluster, "power-loss-tfop"), namespace_for(cluster, "power-loss-go")
    tfop = OperatorProcess(cluster.kubeconfig, logs / "tfop.log", "--namespace", tfop_ns,
                           "--config", str(write_operator_config(cluster.directory))).start()
    go = GoOperatorProcess(training_operator[0], KubeClient.from_kubeconfig(str(cluster.kubeconfig)),
                           cluster.kubeconfig, logs / "go-operator.log", [f"--namespace={go_ns}"])
    try:
        go.start(timeout=300)
        stages.mark("both operators started")
        apply(cluster, tfop_ns, ps_job("ps-power"))
        apply(cluster, tfop_ns, mwms_job(cluster, tfop_ns, "mwms-power"))
        apply(cluster, go_ns, ps_job("ps-power-go"))
        wait_until_training(cluster, tfop_ns, "ps-power", "chief:0", 5, stages)
        wait_until_training(cluster, tfop_ns, "mwms-power", "worker:0", 7, stages)  # past the checkpoint of step 5
        wait_until_training(cluster, go_ns, "ps-power-go", "chief:0", 5, stages)
        lost = {job: on_lost_node(cluster, namespace, job) for namespace, job in (
            (tfop_ns, "ps-power"), (tfop_ns, "mwms-power"), (go_ns, "ps-power-go"))}

        failed_at = time.time()
        cluster.node_stop(LOST)
        stages.mark(f"{LOST} stopped")
        timelines = {}
        for job in ("ps-power", "mwms-power"):
            timelines[job] = recovery(cluster, tfop_ns, job, failed_at, lost[job])
            stages.mark(f"{job} recovered: {timelines[job].stages}")
        # The Go operator's job is watched for as long as tfop took to see both its jobs through to Succeeded.
        go_window = round(time.time() - failed_at)
        go_pods = {task: p["metadata"]["uid"] for task, p in pods_by_task(cluster, go_ns, "ps-power-go").items()}
        outcome = PowerLoss(cluster, tfop_ns, go_ns, failed_at, lost, timelines, go_window, go_pods,
                            get(cluster, go_ns, "tfjob", "ps-power-go"))
    finally:
        go.stop()
        # All its test reads is taken above. Gone before real-1 comes back, so that the node's kubelet does not
        # start its lost worker again beside the module's next scenario.
        cluster.kubectl("delete", "namespace", go_ns, "--wait=false", check=False)
        tfop.kill()
        # Back before the tests look, which read only the API and real-0's disk: the module's other tests need it.
        bring_back(cluster)
        stages.mark(f"{LOST} back")
    yield outcome
    cluster.kubectl("delete", "namespace", tfop_ns, "--wait=false", check=False)


def test_ps_training_goes_on_when_a_workers_node_loses_power(power_loss: PowerLoss) -> None:
    cluster, namespace, job, lost = power_loss.cluster, power_loss.tfop, "ps-power", power_loss.lost["ps-power"]
    assert set(lost) == {"worker:0"}, lost
    job_object = get(cluster, namespace, "tfjob", job)
    assert condition_at(job_object, "Succeeded"), f"{job_object['status']}\n{story(cluster, namespace)}"
    after = pods_by_task(cluster, namespace, job)
    assert {after[t]["spec"]["nodeName"] for t in lost} == {"real-0"}
    # Read from real-0's disk, not through its kubelet: the chief trained through the loss, to its last step.
    chief = [line.text for line in container_logs(cluster, namespace, job)[after["chief:0"]["metadata"]["uid"]]]
    assert any(STEP.match(text) and text.startswith("step 40 ") for text in chief), chief[-20:]
    # A replacement for a lost node is not a restart.
    assert job_object["status"]["replicaStatuses"]["Worker"].get("restarts", 0) == 0, story(cluster, namespace)
    events = cluster.kubectl("get", "events", "-n", namespace, "--field-selector", "reason=NodeLost").stdout
    assert f"node {LOST} is unreachable since" in events, events
    assert_recovered(job_object, power_loss.timelines[job], "PS, worker's node stopped", after_grace=True)


def test_mwms_training_restarts_together_and_resumes_from_its_checkpoint_when_a_node_loses_power(
        power_loss: PowerLoss) -> None:
    cluster, namespace, job = power_loss.cluster, power_loss.tfop, "mwms-power"
    assert len(power_loss.lost[job]) == 1, power_loss.lost[job]
    timeline = power_loss.timelines[job]
    assert_resumed(cluster, namespace, job, timeline, container_logs(cluster, namespace, job))
    assert_recovered(get(cluster, namespace, "tfjob", job), timeline, "MWMS, a worker's node stopped",
                     after_grace=False)


CUT_OFF, STOPPED = "mwms-cut-off", "mwms-preempted"


def stopped_job(cluster: LocalCluster, namespace: str) -> dict[str, Any]:
    """MultiWorkerMirroredStrategy for 30 steps of a second, both workers on real-0 (beside the cut-off job, whose
    node's loss leaves it alone), restarted together. No periodic checkpoint (SAVE_EVERY beyond the run), so only
    the SIGTERM path can have saved one; a grace long enough for TensorFlow to save."""
    checkpoints = cluster.shared_dir / f"{namespace}-{STOPPED}"
    checkpoints.mkdir()
    env = {"STEPS": "30", "STEP_SECONDS": "1", "SAVE_EVERY": "1000", "CHECKPOINT_DIR": f"/shared/{checkpoints.name}"}
    return tfjob(STOPPED, {"Worker": (2, tf_pod("train_mwms.py", env, node="real-0", grace=30,
                                               shared=cluster.shared_dir))},
                 **{"tfop.kubeflow.org/restart-scope": "Job"})


@dataclass
class CutOffAndStopped:
    """Two failures side by side, each of its own MWMS job under one tfop: real-1 cut off under the one (a worker
    per node), and a replica of the other (both on real-0) told to stop. Each is made as soon as its job is past
    step 7, so the one's wait for the node lifecycle controller overlaps the other's restart."""
    cluster: LocalCluster
    namespace: str
    lost: dict[str, str]  # the cut-off job's task -> uid of its pod on real-1
    timeline: Timeline
    logs: dict[str, list[LogLine]]  # the cut-off job's, read before the heal (the healed kubelet clears the old pod's)
    lived_on: bool  # the cut-off process still ran just before the heal
    not_killed: str  # why the healed node did not kill the old containers; empty when it did
    before_heal: dict[str, str]  # the cut-off job's task -> pod uid, before and after the heal
    after_heal: dict[str, str]
    stopped_old: dict[str, str]  # the told-to-stop job's task -> what its old pod logged, to its end
    stopped_done: dict[str, Any]  # that job once Succeeded or Failed


def uids_by_task(cluster: LocalCluster, namespace: str, job: str) -> dict[str, str]:
    return {t: p["metadata"]["uid"] for t, p in pods_by_task(cluster, namespace, job).items()}


@pytest.fixture(scope="module")
def cut_off_and_stopped(real_node: LocalCluster, tfjob_crd: Path,
                        tmp_path_factory: pytest.TempPathFactory) -> Iterator[CutOffAndStopped]:
    cluster, stages = real_node, Stages("cut off and told to stop")
    bring_back(cluster)  # whatever an earlier test of the module left
    namespace = namespace_for(cluster, "cut-off")
    tfop = OperatorProcess(cluster.kubeconfig, tmp_path_factory.mktemp("cut-off") / "tfop.log", "--namespace",
                           namespace, "--config", str(write_operator_config(cluster.directory))).start()
    cut: dict[str, Any] = {}
    followers: dict[str, subprocess.Popen[str]] = {}

    def cut_off() -> None:
        cut["lost"] = on_lost_node(cluster, namespace, CUT_OFF)
        cut["failed_at"] = time.time()
        cluster.node_partition(LOST)
        stages.mark(f"{LOST} cut off")

    def tell_to_stop() -> None:
        before = pods_by_task(cluster, namespace, STOPPED)
        # A deleted pod's logs go with it: follow both old pods' to their end.
        followers.update({task: follow_logs(cluster, namespace, pod["metadata"]["name"])
                          for task, pod in before.items()})
        cluster.kubectl("delete", "pod", "-n", namespace, before["worker:1"]["metadata"]["name"], "--wait=false")
        stages.mark(f"{STOPPED} worker:1 told to stop")

    try:
        apply(cluster, namespace, mwms_job(cluster, namespace, CUT_OFF))
        apply(cluster, namespace, stopped_job(cluster, namespace))
        pending = {CUT_OFF: cut_off, STOPPED: tell_to_stop}

        def each_failed_past_step_7() -> bool:  # past the cut-off job's checkpoint of step 5
            for job in list(pending):
                if logged(cluster, namespace, job, "worker:0", "step 7 loss"):
                    pending.pop(job)()
            return not pending
        try:
            wait_for(each_failed_past_step_7, IMPORT_DEADLINE + 300, "both jobs' worker:0 to reach step 7",
                     interval=KUBECTL_INTERVAL)
        except AssertionError as timed_out:
            raise AssertionError(f"{timed_out}\n{training_diagnosis(cluster, namespace, sorted(pending))}") from None

        stopped_old = {task: follower.communicate(timeout=300)[0] for task, follower in followers.items()}
        stopped_done = wait_for_condition(cluster, namespace, STOPPED, {"Failed", "Succeeded"}, timeout=600)
        stages.mark(f"{STOPPED} done")
        lost = cut["lost"]
        timeline = recovery(cluster, namespace, CUT_OFF, cut["failed_at"], lost)
        stages.mark(f"{CUT_OFF} recovered: {timeline.stages}")
        logs = container_logs(cluster, namespace, CUT_OFF)

        # The node comes back after the job moved on: its kubelet finds the old pods gone from the API and kills
        # their containers; the job keeps its replacements, and the old process writes no further step.
        before_heal = uids_by_task(cluster, namespace, CUT_OFF)
        lived_on = any(_running_in(cluster, LOST, uid) for uid in lost.values())
        cluster.node_start(LOST)
        not_killed = ""
        try:
            wait_for(lambda: not any(_running_in(cluster, LOST, uid) for uid in lost.values()), DEADLINE,
                     "the healed node to kill the old attempt's containers", interval=KUBECTL_INTERVAL)
        except AssertionError as still_running:
            not_killed = str(still_running)
        stages.mark(f"{LOST} healed, the old containers killed: {not not_killed}")
        outcome = CutOffAndStopped(cluster, namespace, lost, timeline, logs, lived_on, not_killed, before_heal,
                                   uids_by_task(cluster, namespace, CUT_OFF), stopped_old, stopped_done)
    finally:
        for follower in followers.values():
            if follower.poll() is None:
                follower.kill()
        tfop.kill()
        bring_back(cluster)
    yield outcome
    cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_mwms_training_restarts_together_and_resumes_from_its_checkpoint_when_a_node_is_cut_off(
        cut_off_and_stopped: CutOffAndStopped) -> None:
    outcome, job = cut_off_and_stopped, CUT_OFF
    cluster, namespace, lost, timeline = outcome.cluster, outcome.namespace, outcome.lost, outcome.timeline
    assert len(lost) == 1, lost
    assert_resumed(cluster, namespace, job, timeline, outcome.logs)
    assert_one_process_per_task(cluster, namespace, job, outcome.logs, lost)
    # Healed after the job moved on: the old process had lived on until then, the healed kubelet killed it (the
    # pod is gone from the API), and the job kept its replacements.
    assert outcome.lived_on, "the cut-off process did not live on"
    assert not outcome.not_killed, outcome.not_killed
    assert outcome.after_heal == outcome.before_heal, (outcome.before_heal, outcome.after_heal)
    assert_recovered(get(cluster, namespace, "tfjob", job), timeline, "MWMS, a worker's node cut off",
                     after_grace=False)


def assert_resumed(cluster: LocalCluster, namespace: str, job: str, timeline: Timeline,
                   logs: dict[str, list[LogLine]]) -> None:
    """The job Succeeded after one restart together, its new chief resuming from a checkpoint at step 5 or later
    and training on from the step after it."""
    job_object = get(cluster, namespace, "tfjob", job)
    assert condition_at(job_object, "Succeeded"), f"{job_object['status']}\n{story(cluster, namespace)}"
    chief = logs[pods_by_task(cluster, namespace, job)["worker:0"]["metadata"]["uid"]]
    resumed = [(line, int(m[1])) for line in chief if (m := RESUMED.search(line.text))]
    assert resumed, [line.text for line in chief][-20:]
    resume_line, step = resumed[-1]
    first_step = next(int(m[1]) for line in chief if line.at >= resume_line.at and (m := STEP.match(line.text)))
    assert step >= 5 and first_step == step + 1, (step, first_step)
    timeline.resumed_step = step
    timeline.mark("resumed", resume_line.at)
    # One job restart, counted once (or none, when the node loss itself led: that is no restart).
    restarts = sum(s.get("restarts", 0) for s in job_object["status"]["replicaStatuses"].values())
    assert restarts <= 1, (f"{restarts} restarts\n{story(cluster, namespace)}\n"
                           f"{ {uid: [line.text for line in lines][-8:] for uid, lines in logs.items()} }")


def test_a_replica_told_to_stop_saves_with_the_others_and_the_job_resumes_from_there(
        cut_off_and_stopped: CutOffAndStopped) -> None:
    """Graceful preemption: a replica's pod deleted (as an eviction or a preemption would) gets SIGTERM and its
    grace period; TensorFlow's PreemptionCheckpointHandler has every replica save at the same step and exit
    retryably; the job restarts together and resumes from that step. No periodic checkpoint is taken
    (SAVE_EVERY beyond the run), so only the SIGTERM path can have saved it."""
    cluster, namespace, job = cut_off_and_stopped.cluster, cut_off_and_stopped.namespace, STOPPED
    old, done = cut_off_and_stopped.stopped_old, cut_off_and_stopped.stopped_done
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


def _running_in(cluster: LocalCluster, node: str, uid: str) -> bool:
    """Whether any process of the pod `uid` still runs on the node (its cgroup, under the node's cgroup root)."""
    root = cluster.node(node).layout.network.cgroup_root
    return bool(processes_in_cgroup(f"{root}/kubepods/besteffort/pod{uid}")
                + processes_in_cgroup(f"{root}/kubepods/burstable/pod{uid}")
                + processes_in_cgroup(f"{root}/kubepods/pod{uid}"))


def test_the_go_operator_leaves_the_same_job_waiting_for_its_lost_node(power_loss: PowerLoss) -> None:
    """The PS job under the Kubeflow training operator v1.9.3, through the same power loss, watched over the time
    tfop took to see both its jobs through to Succeeded: its worker stays bound to the lost node, nothing replaces
    it."""
    lost = power_loss.lost["ps-power-go"]
    assert set(lost) == {"worker:0"}, lost
    # Pod uids never come back and Succeeded is final: seen at the end of the window, they held all through it.
    assert {t: uid for t, uid in power_loss.go_pods.items() if t in lost} == lost, power_loss.go_pods
    assert not condition_at(power_loss.go_job, "Succeeded"), power_loss.go_job["status"]
    timeline = Timeline(power_loss.failed_at)
    # The node lost mark, as tfop's jobs saw it: the same node, the same failure.
    if "marked lost" in power_loss.timelines["ps-power"].stages:
        timeline.stages["marked lost"] = power_loss.timelines["ps-power"].stages["marked lost"]
    print(f"\nGo operator v1.9.3 (observed {power_loss.go_window} s): "
          f"{timeline.row('PS, worker node stopped, Go operator')}")
    assert "marked lost" in timeline.stages
