"""Disruptions of real TensorFlow on the local cluster's real nodes, measured the way docs/tfjob/disruptions.md's
tables show them, for whichever operator runs the job: `kubectl drain` of the node holding a worker, a
higher-priority job that preempts a worker through the scheduler, and a spot reclaim (the termination handler's
notice taint, then the node powered off 30 s later). test/e2e/test_disruption_on_real_nodes.py proves tfop's
promises with it; bench.disruptions (hack/bench/disruptions.py) puts the Go operator's rows beside tfop's.

Every job has its Chief pinned to real-0 and its one Worker preferring real-1, so a disruption of real-1 takes
exactly the worker. The Keras job (examples/train_keras.py: `model.fit` under MultiWorkerMirroredStrategy with
`BackupAndRestore` in the shared directory) backs up every epoch; the ParameterServerStrategy job
(examples/train_ps.py) keeps its variables on the PS, so the coordinator trains on once its worker is back. Each
job's every pod log is followed from its start (a disrupted pod's log goes with the pod), with the runtime's
timestamps, which the row is read from: the last backup the old chief wrote, when the new one resumed and from which
epoch (or the coordinator's first step once the worker was back).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bench.real_jobs import (
    STEP_DEADLINE,
    JobLogs,
    LogLine,
    apply,
    condition_at,
    get,
    job_pods,
    started_at,
    story,
    tf_pod,
    timestamp,
    wait_until,
)
from localcluster import LocalCluster
from localcluster.node_layout import NODE_LABEL

KEPT, DISRUPTED = "real-0", "real-1"  # the chief's node, and the node the disruption takes (the worker's)
SLOT = "tfop.kubeflow.org/e2e-slot"  # an extended resource only real-1 offers, for the preemption
SPOT_NOTICE = "aws-node-termination-handler/spot-itn"  # the AWS handler's taint, in tfop's default config
POWER_OFF_AFTER = 30.0  # seconds from the reclaim notice to the power-off: the scenario's handler gives that lead
HOLD_SECONDS = 20  # how long the higher-priority job runs on the node it preempted
# TensorFlow's import on a loaded 2-core machine (at a `make test-all` start, minutes) and then the first epoch.
TRAINING_DEADLINE = 900.0 + 300.0
JOB_NAME_LABEL = "training.kubeflow.org/job-name"

EPOCH = re.compile(r"^epoch (\d+) loss")
RESUMED_AT_EPOCH = re.compile(r"^resumed from the backup at epoch (\d+)")
NO_BACKUP = re.compile(r"^no backup: starting at epoch 0")
STEP = re.compile(r"^step (\d+) loss")

KERAS_EPOCHS = 8


@dataclass(frozen=True)
class Target:
    """One job, in a namespace one operator watches; `operator` is the name its table row gives."""

    namespace: str
    job: str
    operator: str
    strategy: str  # "keras" (MWMS with BackupAndRestore) or "ps" (ParameterServerStrategy)


def keras_job(cluster: LocalCluster, target: Target, *, slot: bool = False,
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """Keras `fit` under MultiWorkerMirroredStrategy: KERAS_EPOCHS epochs of 10 steps, a BackupAndRestore backup at
    each epoch's end (in the shared directory), then a 3-s pause, so a disruption after the first lands with epochs
    left to train. Restart scope Job: the chief and the worker are one collective. `slot`: the worker needs
    real-1's extended resource, so its replacement can only run there."""
    backup = cluster.shared_dir / f"{target.namespace}-{target.job}"
    backup.mkdir()
    env = {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": str(KERAS_EPOCHS), "STEPS_PER_EPOCH": "10", "EPOCH_SECONDS": "3",
           "BACKUP_DIR": f"/shared/{backup.name}"}
    worker = tf_pod("train_keras.py", env, prefer=DISRUPTED, shared=cluster.shared_dir, grace=10)
    if slot:
        for key in ("requests", "limits"):
            worker["containers"][0]["resources"][key][SLOT] = "1"
    return _tfjob(target.job, {
        "Chief": tf_pod("train_keras.py", env, node=KEPT, shared=cluster.shared_dir, grace=10),
        "Worker": worker,
    }, {"tfop.kubeflow.org/restart-scope": "Job", **(annotations or {})})


def ps_job(target: Target, *, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """ParameterServerStrategy for 40 steps of a second: the chief (the coordinator) and the PS on real-0, the
    worker on real-1. Restart scope Replica (the default): only the worker moves. A budget of restarts for the
    coordinator, which exits retryably when a task is out of reach for a moment (see the node-loss test)."""
    env = {"STEPS": "40", "STEP_SECONDS": "1"}
    job = _tfjob(target.job, {
        "Chief": tf_pod("train_ps.py", env, node=KEPT),
        "PS": tf_pod("train_ps.py", env, node=KEPT),
        "Worker": tf_pod("train_ps.py", env, prefer=DISRUPTED),
    }, annotations or {})
    job["spec"]["runPolicy"]["backoffLimit"] = 10
    return job


def _tfjob(name: str, replicas: dict[str, dict[str, Any]], annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name, "annotations": annotations},
        "spec": {"runPolicy": {"backoffLimit": 3, "cleanPodPolicy": "None"},
                 "tfReplicaSpecs": {kind: {"replicas": 1, "restartPolicy": "ExitCode", "template": {"spec": spec}}
                                    for kind, spec in replicas.items()}},
    }


def pods_by_task(cluster: LocalCluster, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    """task ("worker:0") -> its pod, of the pods not being deleted."""
    return {f"{p['metadata']['labels']['training.kubeflow.org/replica-type']}:"
            f"{p['metadata']['labels']['training.kubeflow.org/replica-index']}": p
            for p in job_pods(cluster, namespace, job) if not p["metadata"].get("deletionTimestamp")}


@dataclass
class Watched:
    """A target's job from its creation: its pods' logs followed, and its pods as the disruption found them."""

    target: Target
    logs: JobLogs
    created: float
    before: dict[str, dict[str, Any]] = field(default_factory=dict)


def start(cluster: LocalCluster, target: Target, job: dict[str, Any]) -> Watched:
    apply(cluster, target.namespace, job)
    created = timestamp(get(cluster, target.namespace, "tfjob", target.job)["metadata"]["creationTimestamp"])
    return Watched(target, JobLogs(cluster, target.namespace, target.job), created)


def _lines_of_current(cluster: LocalCluster, watched: Watched, task: str) -> list[LogLine]:
    pod = pods_by_task(cluster, watched.target.namespace, watched.target.job).get(task)
    return [] if pod is None else watched.logs.of(pod["metadata"]["uid"])


def wait_until_training(cluster: LocalCluster, watched: list[Watched]) -> None:
    """Until each job's chief has trained past its first save (the Keras job's first epoch backed up; the PS job's
    fifth step), with the worker on real-1; then each job's pods are what the disruption finds."""
    def trained(w: Watched) -> bool:
        pattern = re.compile(r"^epoch 1 loss") if w.target.strategy == "keras" else re.compile(r"^step 5 loss")
        return any(pattern.match(line.text) for line in _lines_of_current(cluster, w, "chief:0"))

    for w in watched:
        try:
            wait_until(partial(trained, w), TRAINING_DEADLINE, f"{w.target.job}'s chief to train past its first "
                     "save")
        except AssertionError as timed_out:
            chief = _lines_of_current(cluster, w, "chief:0")
            raise AssertionError(f"{timed_out}\nthe chief's last lines: {[line.text for line in chief][-20:]}\n"
                                 f"{story(cluster, w.target.namespace)}") from None
    for w in watched:
        w.before = pods_by_task(cluster, w.target.namespace, w.target.job)
        placed = {task: pod["spec"].get("nodeName") for task, pod in w.before.items()}
        assert placed.get("worker:0") == DISRUPTED and placed.get("chief:0") == KEPT, (w.target.job, placed)


# --- the disruptions ------------------------------------------------------------------------------------------

DRAIN_FLAGS = ("--ignore-daemonsets", "--delete-emptydir-data", "--force")


def drain(cluster: LocalCluster, node: str = DISRUPTED) -> float:
    """`kubectl drain`: the node cordoned, then every pod on it evicted through the Eviction API (each job's own
    PodDisruptionBudget, if it has one, consulted); returns once the evicted pods are gone. The moment it began."""
    began = time.time()
    cluster.kubectl("drain", node, *DRAIN_FLAGS, f"--timeout={STEP_DEADLINE:.0f}s", timeout=STEP_DEADLINE + 60)
    return began


@contextmanager
def uncordoned_after(cluster: LocalCluster, node: str = DISRUPTED) -> Iterator[None]:
    try:
        yield
    finally:
        cluster.kubectl("uncordon", node, check=False)


def budget_allows(cluster: LocalCluster, namespace: str, job: str, allowed: int) -> bool:
    """Whether the job's own PodDisruptionBudget exists and its disruption controller lets `allowed` evictions by."""
    budgets = json.loads(cluster.kubectl("get", "pdb", "-n", namespace, "-l", f"{JOB_NAME_LABEL}={job}", "-o",
                                         "json", check=False).stdout or '{"items": []}')["items"]
    return len(budgets) == 1 and budgets[0].get("status", {}).get("disruptionsAllowed") == allowed


@contextmanager
def slots_on(cluster: LocalCluster, count: int, node: str = DISRUPTED) -> Iterator[None]:
    """real-1 offers `count` of the SLOT extended resource (its status patched, as a cluster admin advertises one;
    its kubelet keeps what it did not set), and no longer afterwards."""
    def offer(value: str | None) -> None:
        cluster.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p", json.dumps(
            {"status": {"capacity": {SLOT: value}, "allocatable": {SLOT: value}}}))
    offer(str(count))
    try:
        yield
    finally:
        offer(None)


@contextmanager
def higher_priority_class(cluster: LocalCluster) -> Iterator[str]:
    name = f"tfop-disruption-high-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
        "value": 1000000, "preemptionPolicy": "PreemptLowerPriority",
        "description": "a job that outranks the training jobs of the disruption scenarios"}))
    try:
        yield name
    finally:
        cluster.kubectl("delete", "priorityclass", name, "--wait=false", check=False)


def preempt(cluster: LocalCluster, namespace: str, priority_class: str, slots: int, image: str,
            node: str = DISRUPTED) -> float:
    """A higher-priority job (batch/v1, `priority_class`) whose pod needs every slot of real-1: the scheduler
    preempts the workers holding them (DisruptionTarget PreemptionByScheduler, each pod deleted with its grace
    period), runs it there for HOLD_SECONDS, and then the workers' replacements fit again. The moment it was made."""
    began = time.time()
    apply(cluster, namespace, {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "higher-priority"},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "priorityClassName": priority_class, "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
            "nodeSelector": {NODE_LABEL: "true", "kubernetes.io/hostname": node},
            "tolerations": [{"key": NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": image, "imagePullPolicy": "Never",
                            "command": ["sh", "-c", f"sleep {HOLD_SECONDS}"],
                            "resources": {"requests": {"cpu": "10m", SLOT: str(slots)},
                                          "limits": {SLOT: str(slots)}}}]}}}})
    return began


def reclaim_notice(cluster: LocalCluster, node: str = DISRUPTED) -> float:
    """The AWS node termination handler's spot interruption notice: its NoSchedule taint on the node, which stays
    Ready. The moment it was set."""
    began = time.time()
    cluster.kubectl("taint", "nodes", node, f"{SPOT_NOTICE}=true:NoSchedule")
    return began


def power_off_when_due(cluster: LocalCluster, noticed: float, moved: Callable[[], bool],
                       node: str = DISRUPTED) -> tuple[float | None, float]:
    """The reclaim's second half: the node powered off POWER_OFF_AFTER seconds after the notice, whatever the jobs
    did meanwhile (the cloud does not wait). The due time is the scenario's schedule, the one moment waited for here;
    meanwhile, when `moved` first held (the disrupted jobs off the node), if it did. Returns (moved at, powered
    off at)."""
    due = noticed + POWER_OFF_AFTER
    moved_at: float | None = None

    def due_yet() -> bool:
        nonlocal moved_at
        if moved_at is None and moved():
            moved_at = time.time()
        return time.time() >= due

    wait_until(due_yet, POWER_OFF_AFTER + STEP_DEADLINE, "the power-off time")
    cluster.node_stop(node)
    return moved_at, time.time()


def off_node(cluster: LocalCluster, watched: list[Watched], node: str = DISRUPTED) -> bool:
    """Whether no pod of the jobs is on the node any more, not even one being deleted."""
    return not any(pod["spec"].get("nodeName") == node for w in watched
                   for pod in job_pods(cluster, w.target.namespace, w.target.job))


def bring_back(cluster: LocalCluster, node: str = DISRUPTED) -> None:
    """The node up, Ready, without the reclaim notice nor the taints of its loss (the node lifecycle controller
    takes those off a monitor pass after Ready), for whatever runs next on the cluster."""
    if cluster.node(node).failed():
        cluster.node_start(node)
    cluster.kubectl("taint", "nodes", node, f"{SPOT_NOTICE}-", check=False)

    def healthy() -> bool:
        spec = cluster.api("GET", f"/api/v1/nodes/{node}")["spec"]
        taints = {t["key"] for t in spec.get("taints", [])}
        return (cluster.admin.node_ready_text(node) == "Ready" and not spec.get("unschedulable")
                and not taints & {"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready", SPOT_NOTICE})
    wait_until(healthy, STEP_DEADLINE, f"{node} to be Ready again, schedulable and untainted")


# --- what happened ----------------------------------------------------------------------------------------------

@dataclass
class Row:
    """One job's disruption, as Unix times (None: never, within the watch)."""

    scenario: str
    operator: str
    created: float
    disrupted: float
    saved: tuple[float, int] | None  # the old chief's last backup (Keras): when, after which epoch
    running_again: float | None  # the last replaced replica's container started
    resumed: tuple[float, int] | None  # the new chief resumed from epoch N (Keras), or the coordinator's first step
    restarts: int  # the restarts the operator counted
    succeeded: float | None
    failed: float | None
    watched_for: float  # seconds after the disruption the job was watched
    strategy: str
    reasons: list[str] = field(default_factory=list)  # tfop's status.disruptions' reasons

    def cells(self) -> list[str]:
        def after(at: float | None) -> str:
            return "never" if at is None else f"{at - self.disrupted:+.0f} s"
        saved = "none (variables on the PS)" if self.strategy == "ps" else "none" if self.saved is None else \
            f"{after(self.saved[0])} (epoch {self.saved[1]})"
        unit = "epoch" if self.strategy == "keras" else "step"
        resumed = "never" if self.resumed is None else f"{after(self.resumed[0])}, {unit} {self.resumed[1]}"
        end = after(self.succeeded) if self.succeeded else f"Failed {after(self.failed)}" if self.failed else \
            f"not within {self.watched_for:.0f} s"
        return [self.scenario, self.operator, f"{self.disrupted - self.created:.0f} s", saved,
                after(self.running_again), resumed, str(self.restarts), end]

    def line(self) -> str:
        return f"| {' | '.join(self.cells())} |"


HEADER = ("| scenario | operator | disruption at (after the job's creation) | last checkpoint saved | replicas "
          "running again | resumed | restarts counted | Succeeded |\n| --- | --- | --- | --- | --- | --- | --- | --- |")


def finish(cluster: LocalCluster, watched: list[Watched], window: float) -> dict[Target, dict[str, Any]]:
    """Each job once it Succeeded or Failed, or as it is `window` seconds on (a job an operator left stuck);
    by target: the bench gives both operators' jobs one name, each in its operator's namespace."""
    ends: dict[Target, dict[str, Any]] = {}

    def all_ended() -> bool:
        for w in watched:
            job = get(cluster, w.target.namespace, "tfjob", w.target.job)
            ends[w.target] = job
        return all(condition_at(job, "Succeeded") or condition_at(job, "Failed") for job in ends.values())

    with suppress(AssertionError):  # past the window: the rows say what had not happened
        wait_until(all_ended, window, "every job to end")
    return ends


def restarts_counted(cluster: LocalCluster, namespace: str, job: dict[str, Any]) -> int:
    """The restarts the job's operator counted: tfop's replicaStatuses' restarts; the Go operator keeps no count in
    its status, so its TFJobRestarting events (each operator's event for a restart it counts) are taken too."""
    in_status = sum(int(s.get("restarts", 0)) for s in job.get("status", {}).get("replicaStatuses", {}).values())
    return max(in_status, restarting_events(cluster, namespace, job["metadata"]["name"]))


def restarting_events(cluster: LocalCluster, namespace: str, job: str) -> int:
    events = json.loads(cluster.kubectl(
        "get", "events", "-n", namespace, "-o", "json", "--field-selector",
        f"reason=TFJobRestarting,involvedObject.name={job},involvedObject.kind=TFJob").stdout)["items"]
    return sum(int(e.get("count") or e.get("series", {}).get("count") or 1) for e in events)


def row(cluster: LocalCluster, scenario: str, w: Watched, job: dict[str, Any], disrupted: float) -> Row:
    ns, name = w.target.namespace, w.target.job
    after = pods_by_task(cluster, ns, name)
    old = {task: pod["metadata"]["uid"] for task, pod in w.before.items()}
    new = [pod for task, pod in after.items() if pod["metadata"]["uid"] != old.get(task)]
    starts = [started_at(pod) for pod in new]
    running_again = max(at for at in starts if at) if new and all(starts) else None
    saved = resumed = None
    chief_now = after.get("chief:0")
    if w.target.strategy == "keras":
        epochs = [(line.at, int(m[1])) for line in w.logs.of(old["chief:0"]) if (m := EPOCH.match(line.text))]
        saved = epochs[-1] if epochs else None
        if chief_now is not None and chief_now["metadata"]["uid"] != old["chief:0"]:
            for line in w.logs.of(chief_now["metadata"]["uid"]):
                if m := RESUMED_AT_EPOCH.match(line.text):
                    resumed = (line.at, int(m[1]))
                    break
                if NO_BACKUP.match(line.text):
                    resumed = (line.at, 0)
                    break
    elif chief_now is not None and running_again is not None:
        # The coordinator trained on: its first step once the replaced worker ran again.
        resumed = next(((line.at, int(m[1])) for line in w.logs.of(chief_now["metadata"]["uid"])
                        if line.at >= running_again and (m := STEP.match(line.text))), None)
    return Row(scenario, w.target.operator, w.created, disrupted, saved, running_again, resumed,
               restarts_counted(cluster, ns, job), condition_at(job, "Succeeded"), condition_at(job, "Failed"),
               round(time.time() - disrupted), w.target.strategy,
               [d["reason"] for d in job.get("status", {}).get("disruptions", [])])


def diagnosis(cluster: LocalCluster, w: Watched) -> str:
    """For an assertion's message: each pod's last log lines and the namespace's events."""
    tails = {uid: [line.text for line in w.logs.of(uid)][-12:] for uid in w.logs.uids()}
    return f"{json.dumps(tails, indent=1)}\n{story(cluster, w.target.namespace)}"
