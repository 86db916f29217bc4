"""The evaluator's final evaluation, shown with real TensorFlow on the local cluster's real nodes: a chief and a
worker train with MultiWorkerMirroredStrategy and save checkpoints in the shared directory; an Evaluator
(examples/train_mwms.py as TensorFlow's side-car evaluator) evaluates each one as it appears and, after the
chief's last, spends some seconds on a final evaluation. The chief succeeds while the evaluator is still at it.
With the grace, tfop keeps the evaluator until it has printed its final line and ended by itself, says so in the
status, and only then succeeds the job and cleans up (cleanPodPolicy All). With a grace of 0 (the behaviour of
the Kubeflow training operator, its issue 1658), the same evaluator, beside a chief alone, is deleted in the middle
of that evaluation.
The logs are read from the nodes' disks, so the deleted pods' lines are there too, with the runtime's times."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from localcluster import LocalCluster
from support.node_loss import STEP, LogLine, Stages, container_logs, tf_pod, timestamp
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for
from tfop.kube.client import KubeClient
from tfop.kube.resource import PODS

GRACE = "tfop.kubeflow.org/evaluator-grace-seconds"
STEPS = 20
# The waited-for evaluator's final evaluation: longer than a loaded machine takes to see the chief end (seen: over
# 15 s), so the job is seen waiting for it. The job's grace is far longer still (it only bounds the wait: the job
# Succeeds when the evaluator ends), and the evaluator the job does not wait for would take an hour, so only its
# deletion can end it.
FINAL_EVAL_SECONDS = 45
WAIT_GRACE = 600
IMPORT_DEADLINE = 900  # seconds for the replicas to import TensorFlow on a loaded 2-core machine
ENDLESS = 3600
FINAL = f"final evaluation at step {STEPS}: loss "
STARTED = f"final evaluation of step {STEPS} started"


def evaluated_job(cluster: LocalCluster, namespace: str, name: str, grace: int, final_eval_seconds: int,
                  training: tuple[str, ...] = ("Chief", "Worker")) -> dict[str, Any]:
    """The `training` replicas (a chief and a worker) training STEPS steps of a second, a checkpoint every 5 steps
    and at the last in the shared directory, and an evaluator watching it; everything deleted when the job
    finishes."""
    checkpoints = cluster.shared_dir / f"{namespace}-{name}"
    checkpoints.mkdir()
    env = {"STEPS": str(STEPS), "STEP_SECONDS": "1", "SAVE_EVERY": "5", "CHECKPOINT_DIR": f"/shared/{checkpoints.name}",
           "FINAL_EVAL_SECONDS": str(final_eval_seconds)}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name, "annotations": {GRACE: str(grace)}},
        "spec": {"runPolicy": {"backoffLimit": 0, "cleanPodPolicy": "All"},
                 "tfReplicaSpecs": {kind: {"replicas": 1, "restartPolicy": "Never", "template": {
                     "spec": tf_pod("train_mwms.py", env, shared=cluster.shared_dir)}}
                     for kind in (*training, "Evaluator")}},
    }


@dataclass
class Watched:
    """What polling the job and its pods saw until the job Succeeded and its evaluator's pod was deleted."""
    job: dict[str, Any] = field(default_factory=dict)
    waiting: dict[str, Any] | None = None  # the Succeeded condition while the job waited for its evaluator
    waiting_view: str = ""  # `kubectl get tfjob` then
    evaluator_uid: str = ""
    evaluator_gone_at: float | None = None  # when it was first seen deleting or gone (an upper bound)
    # pod uid -> its container's lines, from the nodes' disks: read as the job runs, as the kubelet's garbage
    # collection removes a deleted pod's log directory in time.
    logs: dict[str, list[LogLine]] = field(default_factory=dict)


def watch(cluster: LocalCluster, namespace: str, names: list[str], timeout: float = 600) -> dict[str, Watched]:
    """Polls the jobs side by side (a job without a grace is done first) until each is Succeeded and its evaluator's
    pod deleted."""
    seen = {name: Watched() for name in names}
    stages, marked = Stages("evaluator"), set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, watched in seen.items():
            if not done(watched):
                look(cluster, namespace, name, watched)
            for stage, now in (("a replica imported TensorFlow", any(
                                   line.text.startswith("tfop-example: ") for lines in watched.logs.values()
                                   for line in lines)),
                               ("first step", any(STEP.match(line.text) for lines in watched.logs.values()
                                                  for line in lines)),
                               ("seen waiting for its evaluator", watched.waiting is not None),
                               ("Succeeded, its evaluator deleted", done(watched))):
                if now and (name, stage) not in marked:
                    marked.add((name, stage))
                    stages.mark(f"{name}: {stage}")
        if all(done(watched) for watched in seen.values()):
            return seen
        time.sleep(1.0)  # each look runs kubectl (about 45 ms of CPU) for two jobs
    raise AssertionError(f"not all Succeeded with their evaluator deleted in {timeout:.0f}s; statuses "
                         f"{ {name: w.job.get('status') for name, w in seen.items()} }")


def done(watched: Watched) -> bool:
    return watched.evaluator_gone_at is not None and any(
        c["type"] == "Succeeded" and c["status"] == "True" for c in watched.job.get("status", {}).get("conditions", []))


def look(cluster: LocalCluster, namespace: str, name: str, seen: Watched) -> None:
    seen.job = get(cluster, namespace, "tfjob", name)
    for uid, lines in container_logs(cluster, namespace, name).items():
        if len(lines) >= len(seen.logs.get(uid, [])):
            seen.logs[uid] = lines
    for condition in seen.job.get("status", {}).get("conditions", []):
        if (seen.waiting is None and condition["type"] == "Succeeded"
                and condition.get("reason") == "WaitingForEvaluator"):
            seen.waiting = condition
            seen.waiting_view = cluster.kubectl("get", "tfjob", name, "-n", namespace).stdout.rstrip()
    evaluators = [p for p in job_pods(cluster, namespace, name)
                  if p["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "evaluator"]
    live = [p for p in evaluators if not p["metadata"].get("deletionTimestamp")]
    if live:
        seen.evaluator_uid = live[0]["metadata"]["uid"]
    elif seen.evaluator_uid and seen.evaluator_gone_at is None:
        seen.evaluator_gone_at = time.time()


class ContainerEnds:
    """Each pod's tensorflow container as a watch on the namespace's pods first reports it ended: pod uid -> (exit
    code, whether the pod was being deleted by then). A watch, as a poll a second apart misses an evaluator that
    ends by itself and is deleted between two looks (tfop cleans up within a second of its end)."""

    def __init__(self, cluster: LocalCluster, namespace: str) -> None:
        self.ends: dict[str, tuple[int, bool]] = {}
        self._client = KubeClient.from_kubeconfig(str(cluster.kubeconfig))
        _, resource_version = self._client.list(PODS, namespace)
        self._stream = self._client.watch(PODS, namespace, resource_version=resource_version, timeout_seconds=1800)
        self._reader = threading.Thread(target=self._read, name="container-ends", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for event in self._stream:
            pod = event["object"]
            if event["type"] == "BOOKMARK" or pod["metadata"]["uid"] in self.ends:
                continue
            for status in pod.get("status", {}).get("containerStatuses", []):
                ended = status["state"].get("terminated")
                if status["name"] == "tensorflow" and ended:
                    self.ends[pod["metadata"]["uid"]] = (ended["exitCode"], "deletionTimestamp" in pod["metadata"])

    def close(self) -> None:
        self._stream.close()
        self._reader.join(timeout=DEADLINE)
        self._client.close()


def lines_of(logs: dict[str, list[LogLine]], uid: str) -> list[LogLine]:
    assert uid in logs, f"no log on the nodes' disks for pod {uid}: {sorted(logs)}"
    return logs[uid]


def chief_uid(logs: dict[str, list[LogLine]], evaluator: str) -> str:
    """The chief's pod among the logs on disk (deleted by now): the one that says it is task chief:0."""
    [uid] = [uid for uid, lines in logs.items() if uid != evaluator
             and any(line.text.startswith("tfop-example: task=chief:0 ") for line in lines)]
    return uid


def shown(lines: list[LogLine], since: float) -> str:
    return "\n".join(f"  +{line.at - since:5.1f}s  {line.text}" for line in lines)


def test_the_evaluator_finishes_its_final_evaluation_before_the_job_is_cleaned_up(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str) -> None:
    cluster = real_node
    ends = ContainerEnds(cluster, namespace)
    try:
        apply(cluster, namespace, evaluated_job(cluster, namespace, "evaluated", WAIT_GRACE, FINAL_EVAL_SECONDS))
        # The contrast starts once the first job trains: its TensorFlow imports then take the cores the first job's
        # paced steps and final evaluation leave idle, rather than half of those its own imports need. A chief
        # and the evaluator are all it needs (a worker would change nothing of what it shows).
        wait_for(lambda: any(STEP.match(line.text) for lines in container_logs(cluster, namespace, "evaluated").values()
                             for line in lines), IMPORT_DEADLINE, "the evaluated job's first step",
                 interval=KUBECTL_INTERVAL)
        apply(cluster, namespace, evaluated_job(cluster, namespace, "cut-short", 0, ENDLESS, training=("Chief",)))
        # The contrast's imports are in this deadline too (under a full `make test` one took 400 s).
        jobs = watch(cluster, namespace, ["evaluated", "cut-short"], timeout=IMPORT_DEADLINE + 300)
    finally:
        ends.close()
    waited, cut = jobs["evaluated"], jobs["cut-short"]
    look(cluster, namespace, "evaluated", waited)  # the last lines, if any came since
    logs = waited.logs
    evaluator = lines_of(logs, waited.evaluator_uid)
    chief = lines_of(logs, chief_uid(logs, waited.evaluator_uid))
    last_step = [line for line in chief if STEP.match(line.text)][-1]
    [chief_ended] = [line for line in chief if line.text.startswith("done: ")]
    final = [line for line in evaluator if line.text.startswith(FINAL)]
    started = [line for line in evaluator if line.text == STARTED]
    events = cluster.kubectl("get", "events", "-n", namespace, "--field-selector",
                             "involvedObject.name=evaluated", "-o",
                             "custom-columns=REASON:.reason,MESSAGE:.message", "--no-headers").stdout
    print(f"\nchief's last lines:\n{shown(chief[-2:], last_step.at)}\nevaluator's last lines (seconds after the "
          f"chief's last step):\n{shown(evaluator[-5:], last_step.at)}\nwhile it waited:\n{waited.waiting_view}\n"
          f"  {waited.waiting}\nevaluator's end (exit code, pod deleting): {ends.ends.get(waited.evaluator_uid)}\n"
          f"its pod deleted by +{(waited.evaluator_gone_at or 0) - last_step.at:.1f}s\nevents:\n{events}")

    assert last_step.text.startswith(f"step {STEPS} "), [line.text for line in chief[-5:]]
    # The evaluator wrote its final line after the chief's last step, and ended by itself (exit 0, seen while its
    # pod was still there) before tfop deleted the pod.
    assert len(final) == 1 and len(started) == 1, [line.text for line in evaluator[-8:]]
    assert last_step.at < chief_ended.at < final[0].at < (waited.evaluator_gone_at or 0)
    assert started[0].at < final[0].at  # the final evaluation ran to its end, the chief ending meanwhile
    assert ends.ends.get(waited.evaluator_uid) == (0, False), ends.ends
    # The status said why the job was not Succeeded yet, from the chief's end until the evaluator's...
    assert waited.waiting is not None, waited.job["status"]
    assert waited.waiting["status"] == "False"
    assert f"the training succeeded; waiting up to {WAIT_GRACE}s" in waited.waiting["message"], waited.waiting
    assert "for Evaluator 0's final evaluation" in waited.waiting["message"], waited.waiting
    assert int(chief_ended.at) <= timestamp(waited.waiting["lastTransitionTime"]) <= final[0].at
    assert "WaitingForEvaluator" in events, events
    # ...and then it Succeeded, the evaluation done.
    [succeeded] = [c for c in waited.job["status"]["conditions"] if c["type"] == "Succeeded"]
    assert succeeded["status"] == "True" and succeeded["reason"] == "TFJobSucceeded", succeeded
    assert timestamp(succeeded["lastTransitionTime"]) >= int(final[0].at)

    # The contrast: with no grace, the same evaluator (beside a chief alone) is deleted as the training ends, its
    # final line never written.
    look(cluster, namespace, "cut-short", cut)
    cut_logs = cut.logs
    # On a loaded machine the evaluator may be deleted before it wrote its first line, leaving no log at all:
    # its final line was never written either.
    cut_evaluator = cut_logs.get(cut.evaluator_uid, [])
    cut_chief = lines_of(cut_logs, chief_uid(cut_logs, cut.evaluator_uid))
    print(f"\nwith a grace of 0, the evaluator's last lines (seconds after the chief's last line):\n"
          f"{shown(cut_evaluator[-3:], cut_chief[-1].at)}\n"
          f"its end (exit code, pod deleting): {ends.ends.get(cut.evaluator_uid)}")
    assert cut.waiting is None, cut.waiting
    # Killed, not ended by itself: if the kubelet reported its end at all, the pod was being deleted by then.
    assert ends.ends.get(cut.evaluator_uid, (None, True))[1], ends.ends
    assert [c["status"] for c in cut.job["status"]["conditions"] if c["type"] == "Succeeded"] == ["True"]
    assert not any(line.text.startswith("final evaluation at") for line in cut_evaluator), \
        [line.text for line in cut_evaluator[-5:]]
    # The chief ended its training by itself (TensorFlow may log more after that line: CI once saw an error).
    cut_steps = [line for line in cut_chief if STEP.match(line.text)]
    cut_done = [line for line in cut_chief if line.text.startswith("done: ")]
    assert cut_steps and cut_steps[-1].text.startswith(f"step {STEPS} "), [line.text for line in cut_chief[-5:]]
    assert len(cut_done) == 1 and cut_steps[-1].at <= cut_done[0].at, [line.text for line in cut_chief[-5:]]
