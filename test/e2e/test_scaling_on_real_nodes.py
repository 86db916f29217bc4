"""A TFJob's workers resized mid-training on the local cluster's real nodes, with real TensorFlow, the two ways tfop
resizes (docs: "Scaling a job"):

- by restart (enableDynamicWorker false): Keras `model.fit` under MultiWorkerMirroredStrategy, whose membership is
  fixed at start, goes 2 -> 3 workers: every replica is stopped and all come back together with the new TF_CONFIG,
  and `fit` resumes from its BackupAndRestore backup in the shared directory, 3 replicas in sync.
- in place (enableDynamicWorker true): asynchronous parameter-server training whose workers are clients of their
  own (examples/train_ps_dynamic.py) goes 2 -> 4 -> 1 workers while the chief and the PS run on untouched; the new
  workers' steps land on the PS, and the workers scaled away leave cleanly and are not failures.

The resize is asked as a user asks it: `kubectl scale`, through the TFJob's scale subresource. Each test prints one
table row per resize (seconds after the job's creation): resize asked, pods changed, training resumed, Succeeded.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.operators import GoOperatorProcess
from localcluster import LocalCluster
from support.job_logs import JobLogs, first, texts, wait_for_line
from support.node_loss import LogLine, condition_at, tf_pod, timestamp
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods, story, wait_for_condition
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for
from tfop.kube.client import KubeClient

JOB_NAME_LABEL = "training.kubeflow.org/job-name"
# What the training programs print (examples/train_keras.py, examples/train_ps_dynamic.py).
IN_SYNC = re.compile(r"^num_replicas_in_sync=(\d+)")
RESUMED_AT_EPOCH = re.compile(r"^resumed from the backup at epoch (\d+)")
EPOCH = re.compile(r"^epoch (\d+) loss")
WORKER_STEP = re.compile(r"^worker (\d+) step (\d+) loss \S+ global step (\d+)")
CHIEF_VIEW = re.compile(r"^chief: global step (\d+) by worker \{(.*)\}")
TOLD_TO_STOP = re.compile(r"^worker (\d+) told to stop after (\d+) steps")


@dataclass
class Resize:
    """One resize's moments, as Unix times; printed as seconds after the job's creation."""

    label: str
    asked: float
    pods_changed: float | None = None
    resumed: float | None = None


@dataclass
class Table:
    created: float
    resizes: list[Resize] = field(default_factory=list)
    succeeded: float | None = None

    def rows(self, scenario: str) -> str:
        def cell(at: float | None) -> str:
            return "never" if at is None else f"{at - self.created:.0f} s"
        return "\n".join(f"| {scenario} | {r.label} | {cell(r.asked)} | {cell(r.pods_changed)} | {cell(r.resumed)} "
                         f"| {cell(self.succeeded)} |" for r in self.resizes)


def has_scale_subresource(cluster: LocalCluster) -> bool:
    crd = json.loads(cluster.kubectl("get", "crd", "tfjobs.kubeflow.org", "-o", "json").stdout)
    v1 = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return "scale" in v1.get("subresources", {})


def scale(cluster: LocalCluster, namespace: str, name: str, workers: int) -> float:
    """Asks for `workers` workers as a user would, and returns when it was asked. `kubectl scale` needs the CRD's
    scale subresource; on a CRD without one, the same field is patched directly (what the subresource writes)."""
    asked = time.time()
    if has_scale_subresource(cluster):
        cluster.kubectl("scale", "-n", namespace, f"tfjob/{name}", f"--replicas={workers}")
    else:
        cluster.kubectl("patch", "-n", namespace, "tfjob", name, "--type=merge", "-p",
                        json.dumps({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers}}}}))
    return asked


def tfjob(name: str, replicas: dict[str, tuple[int, dict[str, Any]]], *, dynamic: bool) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
        "spec": {"enableDynamicWorker": dynamic,
                 "runPolicy": {"backoffLimit": 3, "cleanPodPolicy": "None"},
                 "tfReplicaSpecs": {kind: {"replicas": count, "restartPolicy": "ExitCode",
                                           "template": {"spec": spec}} for kind, (count, spec) in replicas.items()}},
    }


def resized_events(cluster: LocalCluster, namespace: str) -> str:
    """What tfop told of each resize (its Resized events), e.g. "ns/job: Worker 2 -> 3, asked by a user ..."."""
    return str(cluster.kubectl("get", "events", "-n", namespace, "--field-selector", "reason=Resized",
                               "-o", "custom-columns=MESSAGE:.message").stdout)


def pods_by_task(cluster: LocalCluster, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    """task ("worker:1") -> its pod, of the pods not being deleted."""
    return {f"{p['metadata']['labels']['training.kubeflow.org/replica-type']}:"
            f"{p['metadata']['labels']['training.kubeflow.org/replica-index']}": p
            for p in job_pods(cluster, namespace, job) if not p["metadata"].get("deletionTimestamp")}


def uids(pods: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {task: pod["metadata"]["uid"] for task, pod in pods.items()}


def in_sync(lines: list[LogLine]) -> list[str]:
    return [m[1] for line in lines if (m := IN_SYNC.match(line.text))]


def test_keras_mwms_scaled_2_to_3_restarts_together_and_resumes_from_its_backup(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str) -> None:
    cluster, job, epochs = real_node, "keras-resize", 8
    backup = cluster.shared_dir / f"{namespace}-{job}"
    backup.mkdir()
    # Short epochs (a backup each) with a pause, so the resize lands between backups with epochs left to train:
    # the old replicas stop at once when told (the example's SIGTERM handler), so they get no further than that.
    env = {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": str(epochs), "STEPS_PER_EPOCH": "10", "EPOCH_SECONDS": "2",
           "BACKUP_DIR": f"/shared/{backup.name}"}
    apply(cluster, namespace, tfjob(job, {"Worker": (2, tf_pod("train_keras.py", env, spread=job, grace=10,
                                                                   shared=cluster.shared_dir))}, dynamic=False))
    with JobLogs(cluster, namespace, job) as logs:
        table = Table(timestamp(get(cluster, namespace, "tfjob", job)["metadata"]["creationTimestamp"]))
        before = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and len(p) == 2 and p, DEADLINE,
                          "the job's 2 worker pods", interval=KUBECTL_INTERVAL)
        old = uids(before)
        # Two epochs backed up: the restart must resume past epoch 0 whatever it loses of the epoch in flight.
        wait_for_line(logs, old["worker:0"], re.compile(r"^epoch 2 loss"), "worker:0's epoch 2")

        resize = Resize("2 -> 3 workers, by restart", scale(cluster, namespace, job, 3))
        table.resizes.append(resize)
        after = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and len(p) == 3
                         and not set(uids(p).values()) & set(old.values()) and p, 300,
                         "3 worker pods, none of the old ones", interval=KUBECTL_INTERVAL)
        new = uids(after)
        resize.pods_changed = max(timestamp(p["metadata"]["creationTimestamp"]) for p in after.values())
        resumed = {task: wait_for_line(logs, uid, RESUMED_AT_EPOCH, f"{task} of the resized job to resume")
                   for task, uid in sorted(new.items())}
        resize.resumed = max(line.at for line, _ in resumed.values())
        done = wait_for_condition(cluster, namespace, job, {"Failed", "Succeeded"}, timeout=600)
        table.succeeded = condition_at(done, "Succeeded")
        # The new workers' logs to their end (worker 0's Succeeded may come before the others' last lines).
        wait_for(lambda: all(first(logs.of(uid), re.compile(r"^done: ")) for uid in new.values()), DEADLINE,
                 "every new worker's last line", interval=KUBECTL_INTERVAL)
    print(f"\n{table.rows('MWMS Keras fit, BackupAndRestore')}\nresumed: "
          f"{ {task: line.text for task, (line, _) in resumed.items()} }")

    assert table.succeeded, f"{done['status']}\n{story(cluster, namespace)}\n{operator.job_story(namespace, job)}"
    for task, uid in old.items():  # the old processes trained as 2, and were stopped before they finished
        assert in_sync(logs.of(uid)) == ["2"], (task, texts(logs.of(uid)))
        assert not first(logs.of(uid), re.compile(r"^done: ")), (task, texts(logs.of(uid)))
    # All three resumed from the same backup, past its first epoch, 3 replicas in sync.
    resumed_at = {int(match[1]) for _, match in resumed.values()}
    assert len(resumed_at) == 1 and min(resumed_at) > 0, resumed
    for task, uid in new.items():
        assert in_sync(logs.of(uid)) == ["3"], (task, texts(logs.of(uid)))
    # The new worker 0 trains on from the epoch after the backup's, to the last.
    restored = resumed_at.pop()
    trained = [int(m[1]) for line in logs.of(new["worker:0"]) if (m := EPOCH.match(line.text))]
    assert trained == list(range(restored + 1, epochs + 1)), trained
    # A resize is not a failure: no restart counted; the old processes ended before the new ones resumed.
    assert done["status"]["replicaStatuses"]["Worker"].get("restarts", 0) == 0, story(cluster, namespace)
    assert "Worker 2 -> 3" in resized_events(cluster, namespace), story(cluster, namespace)
    last_old = max(line.at for uid in old.values() for line in logs.of(uid))
    assert resize.asked <= resize.pods_changed + 1 and last_old <= resize.resumed, table
    assert resize.pods_changed <= resize.resumed <= (table.succeeded or 0) + 1, table


def chief_view(lines: list[LogLine]) -> tuple[int, dict[int, int]] | None:
    """The chief's last report: the global step, and the steps each worker applied, as read off the PS."""
    for line in reversed(lines):
        if match := CHIEF_VIEW.match(line.text):
            return int(match[1]), {int(k): int(v) for k, v in re.findall(r"(\d+): (\d+)", match[2])}
    return None


class JobFailedError(AssertionError):
    """The TFJob failed while a test waited for a line that can then no longer come."""


def line_unless_failed(cluster: LocalCluster, namespace: str, job: str, logs: JobLogs, uid: str,
                       pattern: re.Pattern[str], what: str, timeout: float = 400) -> tuple[LogLine, re.Match[str]]:
    """wait_for_line, ended at once by the TFJob failing: a line that can no longer come is not waited out, and the
    failure's first line (most of what CI shows) says which replicas exited how (a PS's crash, the chief's exit)."""
    def check() -> tuple[LogLine, re.Match[str]] | None:
        if found := first(logs.of(uid), pattern):
            return found
        status = get(cluster, namespace, "tfjob", job).get("status", {})
        failed = next((c for c in status.get("conditions", []) if c["type"] == "Failed" and c["status"] == "True"),
                      None)
        if failed:
            exits = cluster.kubectl("get", "events", "-n", namespace, "--field-selector", "reason=ExitedWithCode",
                                    "-o", "custom-columns=MESSAGE:.message", "--no-headers", check=False).stdout
            raise JobFailedError(f"TFJob {job} failed while waiting for {what}: {failed.get('message')}; exits: "
                                 f"{'; '.join(line for line in exits.splitlines() if line)}\n"
                                 f"its last lines: {texts(logs.of(uid))}\n{story(cluster, namespace)}")
        return None
    try:
        return wait_for(check, timeout, what, interval=KUBECTL_INTERVAL)
    except JobFailedError:
        raise
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\nits last lines: {texts(logs.of(uid))}\n"
                             f"{story(cluster, namespace)}") from None


def test_async_ps_scaled_2_to_4_to_1_in_place_keeps_the_chief_and_ps_training(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str) -> None:
    cluster, job = real_node, "ps-resize"
    # STEPS: global steps, each worker pausing a second per step; enough for the new workers' start (a TensorFlow
    # import: 15 s measured on an idle machine, over 100 s on a loaded one) with 2 workers training meanwhile. What
    # is left after the scale-down, one worker trains alone.
    steps = 300
    env = {"STEPS": str(steps), "STEP_SECONDS": "1"}
    # A worker told to stop ends its step first; a step's few RPCs can take seconds on a loaded machine.
    spec = tf_pod("train_ps_dynamic.py", env, spread=job, grace=60)
    apply(cluster, namespace, tfjob(job, {"Chief": (1, spec), "PS": (1, spec), "Worker": (2, spec)}, dynamic=True))
    with JobLogs(cluster, namespace, job) as logs:
        table = Table(timestamp(get(cluster, namespace, "tfjob", job)["metadata"]["creationTimestamp"]))
        start = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and len(p) == 4 and p, DEADLINE,
                         "the job's 4 pods", interval=KUBECTL_INTERVAL)
        kept = {task: start[task]["metadata"]["uid"] for task in ("chief:0", "ps:0")}
        chief = kept["chief:0"]
        # A replica's permanent exit fails the job; the wait ends then (CI once waited out 400 s on a chief that
        # had exited 1 after its PS crashed with 139 under a load of 25), naming the exits.
        line_unless_failed(cluster, namespace, job, logs, chief, re.compile(r"^chief: global step ([1-9]\d+) "),
                           "the chief to see global step 10 or more")

        up = Resize("2 -> 4 workers, in place", scale(cluster, namespace, job, 4))
        table.resizes.append(up)
        grown = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and {"worker:2", "worker:3"} <= set(p)
                         and p, DEADLINE, "worker pods 2 and 3", interval=KUBECTL_INTERVAL)
        up.pods_changed = max(timestamp(grown[t]["metadata"]["creationTimestamp"]) for t in ("worker:2", "worker:3"))
        added = {task: grown[task]["metadata"]["uid"] for task in ("worker:2", "worker:3")}
        joined = {task: wait_for_line(logs, uid, WORKER_STEP, f"{task}'s first step") for task, uid in added.items()}
        up.resumed = max(line.at for line, _ in joined.values())

        def counts_new_workers() -> tuple[int, dict[int, int]] | None:
            # Two steps each, so that each new worker's log shows the global step growing under its updates.
            stepped = all(sum(1 for line in logs.of(uid) if WORKER_STEP.match(line.text)) >= 2
                          for uid in added.values())
            view = chief_view(logs.of(chief))
            return view if stepped and view and view[1].get(2) and view[1].get(3) else None
        seen = wait_for(counts_new_workers, DEADLINE, "workers 2 and 3 to step twice, counted by the chief on the PS",
                        interval=KUBECTL_INTERVAL)
        before_down = uids(pods_by_task(cluster, namespace, job))
        # Still mid-training: the scale-down must find workers at work (else raise STEPS).
        assert seen[0] < steps - 20, f"training nearly over before the scale-down: {seen}"

        down = Resize("4 -> 1 workers, in place", scale(cluster, namespace, job, 1))
        table.resizes.append(down)
        removed = {t: before_down[t] for t in ("worker:1", "worker:2", "worker:3")}
        stopped = {task: wait_for_line(logs, uid, TOLD_TO_STOP, f"{task} to stop when scaled away", timeout=180)
                   for task, uid in removed.items()}
        down.pods_changed = max(line.at for line, _ in stopped.values())
        wait_for(lambda: set(pods_by_task(cluster, namespace, job)) == {"chief:0", "ps:0", "worker:0"}, DEADLINE,
                 "only chief:0, ps:0 and worker:0 left", interval=KUBECTL_INTERVAL)
        worker0 = before_down["worker:0"]
        down.resumed = wait_for(lambda: next((line.at for line in logs.of(worker0)
                                              if line.at > (down.pods_changed or 0) and WORKER_STEP.match(line.text)),
                                             None), DEADLINE, "worker:0 to train on alone", interval=KUBECTL_INTERVAL)
        done = wait_for_condition(cluster, namespace, job, {"Failed", "Succeeded"}, timeout=900)
        table.succeeded = condition_at(done, "Succeeded")
    print(f"\n{table.rows('async PS, enableDynamicWorker')}\nchief when workers 2 and 3 had stepped: global step "
          f"{seen[0]} by worker {seen[1]}\nchief at the end: {texts(logs.of(chief), 1)}")

    assert table.succeeded, f"{done['status']}\n{story(cluster, namespace)}\n{operator.job_story(namespace, job)}"
    end = pods_by_task(cluster, namespace, job)
    # The chief and the PS were never touched: the same pods, never restarted.
    for task, uid in kept.items():
        assert end[task]["metadata"]["uid"] == uid, (task, uid, end[task]["metadata"]["uid"])
        assert all(s["restartCount"] == 0 for s in end[task]["status"]["containerStatuses"]), end[task]["status"]
    chief_lines = logs.of(chief)
    assert first(chief_lines, re.compile(r"^chief: initialized the variables on the PS")), texts(chief_lines)
    # The chief knows the PS (its TF_CONFIG also names the workers it started with; the program connects it to
    # the PS only). Each new worker read a sparse TF_CONFIG: the PS and itself (TensorFlow's own reading of it).
    assert first(chief_lines, re.compile(r"^tfop-example: task=chief:0 workers=\d+ chief=1 ps=1")), texts(chief_lines)
    for task, uid in added.items():
        lines = logs.of(uid)
        assert first(lines, re.compile(rf"^tfop-example: task={task} workers=1 chief=0 ps=1")), texts(lines)
        # Its steps landed on the PS: the global step it read back after each grew.
        global_steps = [int(m[3]) for line in lines if (m := WORKER_STEP.match(line.text))]
        assert len(global_steps) >= 2 and global_steps == sorted(global_steps), global_steps
    final = first(list(reversed(chief_lines)), re.compile(r"^done: global step (\d+) by worker \{(.*)\}"))
    assert final and int(final[1][1]) >= steps, texts(chief_lines)
    # Every step was counted on the PS once: the chief's final global step is the sum of the workers' own.
    counts = {int(k): int(v) for k, v in re.findall(r"(\d+): (\d+)", final[1][2])}
    assert sum(counts.values()) == int(final[1][1]) and counts.get(2) and counts.get(3), final[0].text
    # The workers scaled away left cleanly (exit 0 on SIGTERM), and none counts as a failure or a restart.
    for task, (line, _) in stopped.items():
        assert line.at >= down.asked - 1, (task, line)
    worker_status = done["status"]["replicaStatuses"]["Worker"]
    assert worker_status.get("failed", 0) == 0 and worker_status.get("restarts", 0) == 0, worker_status
    assert not condition_at(done, "Failed")
    told = resized_events(cluster, namespace)
    assert "Worker 2 -> 4" in told and "Worker 4 -> 1" in told, story(cluster, namespace)
    assert up.asked <= up.pods_changed + 1 and up.pods_changed <= up.resumed + 1 <= down.asked + 1, table
    assert down.pods_changed <= down.resumed <= (table.succeeded or 0) + 1, table


def test_the_go_operator_gives_a_dynamic_ps_job_tf_configs_tensorflow_refuses_and_no_scale(
        real_node: LocalCluster, go_crd: Path, training_operator: tuple[Path, Path], namespace: str,
        tmp_path: Path) -> None:
    """The same program under the Kubeflow training operator v1.9.3, on its own CRD: its enableDynamicWorker
    TF_CONFIG as its pods get it, what TensorFlow in those pods makes of it, and what `kubectl scale` does to
    its TFJob, which has no scale subresource."""
    cluster, job = real_node, "ps-dynamic-go"
    go = GoOperatorProcess(training_operator[0], KubeClient.from_kubeconfig(str(cluster.kubeconfig)),
                           cluster.kubeconfig, tmp_path / "go-operator.log", [f"--namespace={namespace}"])
    logs = JobLogs(cluster, namespace, job)
    try:
        go.start(timeout=300)
        spec = tf_pod("train_ps_dynamic.py", {"STEPS": "1000", "STEP_SECONDS": "1"}, spread=job, grace=5)
        apply(cluster, namespace, tfjob(job, {"Chief": (1, spec), "PS": (2, spec), "Worker": (2, spec)},
                                        dynamic=True))
        pods = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and len(p) == 5 and p, DEADLINE,
                        "the Go operator's 5 pods", interval=KUBECTL_INTERVAL)
        configs = {task: json.loads(next(e["value"] for e in pod["spec"]["containers"][0]["env"]
                                         if e["name"] == "TF_CONFIG")) for task, pod in sorted(pods.items())}
        for task, config in configs.items():
            print(f"\nGo operator v1.9.3 {task} TF_CONFIG={json.dumps(config, sort_keys=True)}")
        scaled = cluster.kubectl("scale", "-n", namespace, f"tfjob/{job}", "--replicas=3", check=False)
        print(f"\nGo operator v1.9.3: kubectl scale tfjob/{job} --replicas=3: exit {scaled.returncode}: "
              f"{scaled.stderr.strip()}")
        # What TensorFlow in the pods said of it: the chief knows no task at all, ps:1 is not in its own cluster.
        chief = wait_for_line(logs, pods["chief:0"]["metadata"]["uid"], re.compile(r"^\w*Error: "),
                              "the chief's error", timeout=400)
        ps1 = wait_for_line(logs, pods["ps:1"]["metadata"]["uid"], re.compile(r".*Task 1 was not defined in job"),
                            "ps:1's error", timeout=400)
        print(f"\nGo operator v1.9.3 chief:0: {chief[0].text}\nGo operator v1.9.3 ps:1: {ps1[0].text}")
    finally:
        logs.close()
        go.stop()
    # Measured from its code (notes: issue 33 facts): the chief's cluster is empty, a PS lists only itself.
    assert configs["chief:0"]["cluster"] == {"ps": [], "worker": {}}, configs["chief:0"]
    assert len(configs["ps:1"]["cluster"]["ps"]) == 1 and configs["ps:1"]["task"]["index"] == 1, configs["ps:1"]
    assert configs["worker:1"]["cluster"]["worker"].keys() == {"1"}, configs["worker:1"]
    assert scaled.returncode != 0, scaled.stdout
