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
from support.node_loss import LogLine, condition_at, container_logs, tf_pod, timestamp
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods, story, wait_for_condition
from support.waiting import KUBECTL_INTERVAL, wait_for
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


def pods_by_task(cluster: LocalCluster, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    """task ("worker:1") -> its pod, of the pods not being deleted."""
    return {f"{p['metadata']['labels']['training.kubeflow.org/replica-type']}:"
            f"{p['metadata']['labels']['training.kubeflow.org/replica-index']}": p
            for p in job_pods(cluster, namespace, job) if not p["metadata"].get("deletionTimestamp")}


def uids(pods: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {task: pod["metadata"]["uid"] for task, pod in pods.items()}


def log_of(cluster: LocalCluster, namespace: str, job: str, uid: str) -> list[LogLine]:
    """What the pod's tensorflow container wrote, from its node's disk: a pod deleted since still shows it."""
    return container_logs(cluster, namespace, job).get(uid, [])


def first(lines: list[LogLine], pattern: re.Pattern[str]) -> tuple[LogLine, re.Match[str]] | None:
    for line in lines:
        if match := pattern.match(line.text):
            return line, match
    return None


def texts(lines: list[LogLine], tail: int = 30) -> list[str]:
    return [line.text for line in lines][-tail:]


def wait_for_line(cluster: LocalCluster, namespace: str, job: str, uid: str, pattern: re.Pattern[str],
                  what: str, timeout: float = 400) -> tuple[LogLine, re.Match[str]]:
    """The first line of the pod `uid` that matches, waited for; on a timeout, the pod's last lines and the
    namespace's events say where it stands (TensorFlow's import, a peer it waits for, the pod not started)."""
    try:
        return wait_for(lambda: first(log_of(cluster, namespace, job, uid), pattern), timeout, what,
                        interval=KUBECTL_INTERVAL)
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\nits last lines: {texts(log_of(cluster, namespace, job, uid))}\n"
                             f"{story(cluster, namespace)}") from None


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
    created = timestamp(get(cluster, namespace, "tfjob", job)["metadata"]["creationTimestamp"])
    table = Table(created)
    before = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and len(p) == 2 and p, 120,
                      "the job's 2 worker pods", interval=KUBECTL_INTERVAL)
    old = uids(before)
    # Two epochs backed up: the restart must resume past epoch 0 whatever it loses of the epoch in flight.
    wait_for_line(cluster, namespace, job, old["worker:0"], re.compile(r"^epoch 2 loss"), "worker:0's epoch 2")

    resize = Resize("2 -> 3 workers, by restart", scale(cluster, namespace, job, 3))
    table.resizes.append(resize)
    after = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and len(p) == 3
                     and not set(uids(p).values()) & set(old.values()) and p, 300,
                     "3 worker pods, none of the old ones", interval=KUBECTL_INTERVAL)
    new = uids(after)
    resize.pods_changed = max(timestamp(p["metadata"]["creationTimestamp"]) for p in after.values())
    resumed = {task: wait_for_line(cluster, namespace, job, uid, RESUMED_AT_EPOCH,
                                   f"{task} of the resized job to resume from the backup")
               for task, uid in sorted(new.items())}
    resize.resumed = max(line.at for line, _ in resumed.values())
    done = wait_for_condition(cluster, namespace, job, {"Failed", "Succeeded"}, timeout=600)
    table.succeeded = condition_at(done, "Succeeded")
    print(f"\n{table.rows('MWMS Keras fit, BackupAndRestore')}")

    logs = container_logs(cluster, namespace, job)
    assert table.succeeded, f"{done['status']}\n{story(cluster, namespace)}\n{operator.job_story(namespace, job)}"
    for task, uid in old.items():  # the old processes trained as 2, and none saw a 3-worker cluster
        assert [m[1] for line in logs[uid] if (m := IN_SYNC.match(line.text))] == ["2"], (task, texts(logs[uid]))
    # All three resumed from the same backup, past its first epoch.
    resumed_at = {int(match[1]) for _, match in resumed.values()}
    assert len(resumed_at) == 1 and min(resumed_at) > 0, resumed
    for task, uid in new.items():
        assert [m[1] for line in logs[uid] if (m := IN_SYNC.match(line.text))] == ["3"], (task, texts(logs[uid]))
    # The new worker 0 trains on from the epoch after the backup's, to the last.
    restored = int(resumed["worker:0"][1][1])
    trained = [int(m[1]) for line in logs[new["worker:0"]] if (m := EPOCH.match(line.text))]
    assert trained == list(range(restored + 1, epochs + 1)), trained
    # A resize is not a failure: no restart counted, and the old pods went only once the resize was asked.
    assert done["status"]["replicaStatuses"]["Worker"].get("restarts", 0) == 0, story(cluster, namespace)
    last_old = max(line.at for uid in old.values() for line in logs[uid])
    assert resize.asked <= resize.pods_changed + 1 and last_old <= resize.resumed, table
    assert resize.pods_changed <= resize.resumed <= table.succeeded + 1, table


def test_async_ps_scaled_2_to_4_to_1_in_place_keeps_the_chief_and_ps_training(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str) -> None:
    cluster, job = real_node, "ps-resize"
    # STEPS: global steps, each worker pausing a second per step; enough for the new workers' start (a TensorFlow
    # import, tens of seconds on a loaded machine) with 2 workers training meanwhile.
    steps = 400
    env = {"STEPS": str(steps), "STEP_SECONDS": "1"}
    # A worker told to stop ends its step first; a step's few RPCs can take seconds on a loaded machine.
    spec = tf_pod("train_ps_dynamic.py", env, spread=job, grace=60)
    apply(cluster, namespace, tfjob(job, {"Chief": (1, spec), "PS": (1, spec), "Worker": (2, spec)}, dynamic=True))
    created = timestamp(get(cluster, namespace, "tfjob", job)["metadata"]["creationTimestamp"])
    table = Table(created)
    start = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and len(p) == 4 and p, 120,
                     "the job's 4 pods", interval=KUBECTL_INTERVAL)
    kept = {task: start[task]["metadata"]["uid"] for task in ("chief:0", "ps:0")}
    wait_for_line(cluster, namespace, job, kept["chief:0"], re.compile(r"^chief: global step ([1-9]\d+) "),
                  "the chief to see global step 10 or more")

    up = Resize("2 -> 4 workers, in place", scale(cluster, namespace, job, 4))
    table.resizes.append(up)
    grown = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and {"worker:2", "worker:3"} <= set(p)
                     and p, 120, "worker pods 2 and 3", interval=KUBECTL_INTERVAL)
    up.pods_changed = max(timestamp(grown[t]["metadata"]["creationTimestamp"]) for t in ("worker:2", "worker:3"))
    joined = {task: wait_for_line(cluster, namespace, job, grown[task]["metadata"]["uid"], WORKER_STEP,
                                  f"{task}'s first step") for task in ("worker:2", "worker:3")}
    up.resumed = max(line.at for line, _ in joined.values())

    def chief_counts_new_workers() -> dict[int, int] | None:
        for line in reversed(log_of(cluster, namespace, job, kept["chief:0"])):
            if match := CHIEF_VIEW.match(line.text):
                counts = {int(k): int(v) for k, v in re.findall(r"(\d+): (\d+)", match[2])}
                return counts if counts.get(2) and counts.get(3) else None
        return None
    seen = wait_for(chief_counts_new_workers, 120, "the chief to count steps of workers 2 and 3 on the PS",
                    interval=KUBECTL_INTERVAL)
    before_down = {t: p["metadata"]["uid"] for t, p in pods_by_task(cluster, namespace, job).items()}
    # Still mid-training: the scale-down must find workers at work (else raise STEPS).
    chief_now = [int(m[1]) for line in log_of(cluster, namespace, job, kept["chief:0"])
                 if (m := CHIEF_VIEW.match(line.text))]
    assert chief_now and chief_now[-1] < steps - 20, f"training nearly over before the scale-down: {chief_now[-1:]}"

    down = Resize("4 -> 1 workers, in place", scale(cluster, namespace, job, 1))
    table.resizes.append(down)
    removed = {t: before_down[t] for t in ("worker:1", "worker:2", "worker:3")}
    stopped = {task: wait_for_line(cluster, namespace, job, uid, TOLD_TO_STOP, f"{task} to stop when scaled away",
                                   timeout=120) for task, uid in removed.items()}
    down.pods_changed = max(line.at for line, _ in stopped.values())
    wait_for(lambda: set(pods_by_task(cluster, namespace, job)) == {"chief:0", "ps:0", "worker:0"}, 120,
             "only chief:0, ps:0 and worker:0 left", interval=KUBECTL_INTERVAL)
    worker0 = before_down["worker:0"]
    down.resumed = wait_for(lambda: next((line.at for line in log_of(cluster, namespace, job, worker0)
                                          if line.at > down.pods_changed and WORKER_STEP.match(line.text)), None),
                            120, "worker:0 to train on alone", interval=KUBECTL_INTERVAL)
    done = wait_for_condition(cluster, namespace, job, {"Failed", "Succeeded"}, timeout=900)
    table.succeeded = condition_at(done, "Succeeded")
    print(f"\n{table.rows('async PS, enableDynamicWorker')}")

    logs = container_logs(cluster, namespace, job)
    assert table.succeeded, f"{done['status']}\n{story(cluster, namespace)}\n{operator.job_story(namespace, job)}"
    end = pods_by_task(cluster, namespace, job)
    # The chief and the PS were never touched: the same pods, never restarted.
    for task, uid in kept.items():
        assert end[task]["metadata"]["uid"] == uid, (task, uid, end[task]["metadata"]["uid"])
        assert all(s["restartCount"] == 0 for s in end[task]["status"]["containerStatuses"]), end[task]["status"]
    chief = logs[kept["chief:0"]]
    assert first(chief, re.compile(r"^chief: initialized the variables on the PS")), texts(chief)
    # Each new worker read a sparse TF_CONFIG: the PS and itself (TensorFlow's own reading of it). (The chief's
    # names the workers it started with; the program connects it to the PS only.)
    assert first(chief, re.compile(r"^tfop-example: task=chief:0 workers=\d+ chief=1 ps=1")), texts(chief)
    for task in ("worker:2", "worker:3"):
        uid = grown[task]["metadata"]["uid"]
        assert first(logs[uid], re.compile(rf"^tfop-example: task={task} workers=1 chief=0 ps=1")), texts(logs[uid])
        # Its steps landed on the PS: the global step it got back grew past the one it joined at.
        global_steps = [int(m[3]) for line in logs[uid] if (m := WORKER_STEP.match(line.text))]
        assert len(global_steps) >= 2 and global_steps == sorted(global_steps), global_steps
    assert seen[2] > 0 and seen[3] > 0, seen
    final = first(list(reversed(chief)), re.compile(r"^done: global step (\d+) by worker \{(.*)\}"))
    assert final and int(final[1][1]) >= steps, texts(chief)
    # The workers scaled away left cleanly (exit 0 on SIGTERM), and none counts as a failure or a restart.
    for task, (line, _) in stopped.items():
        assert line.at >= down.asked - 1, (task, line)
    worker_status = done["status"]["replicaStatuses"]["Worker"]
    assert worker_status.get("failed", 0) == 0 and worker_status.get("restarts", 0) == 0, worker_status
    assert not condition_at(done, "Failed")
    assert up.asked <= up.pods_changed + 1 <= up.resumed + 1 <= down.asked + 1, table
    assert down.pods_changed <= down.resumed and down.resumed <= (table.succeeded or 0) + 1, table


def test_the_go_operator_gives_a_dynamic_ps_job_tf_configs_tensorflow_refuses_and_no_scale(
        real_node: LocalCluster, go_crd: Path, training_operator: tuple[Path, Path], namespace: str,
        tmp_path: Path) -> None:
    """The same program under the Kubeflow training operator v1.9.3, on its own CRD: its enableDynamicWorker
    TF_CONFIG as its pods get it, what TensorFlow in those pods makes of it, and what `kubectl scale` does to
    its TFJob, which has no scale subresource."""
    cluster, job = real_node, "ps-dynamic-go"
    go = GoOperatorProcess(training_operator[0], KubeClient.from_kubeconfig(str(cluster.kubeconfig)),
                           cluster.kubeconfig, tmp_path / "go-operator.log", [f"--namespace={namespace}"])
    try:
        go.start(timeout=300)
        spec = tf_pod("train_ps_dynamic.py", {"STEPS": "1000", "STEP_SECONDS": "1"}, spread=job, grace=5)
        apply(cluster, namespace, tfjob(job, {"Chief": (1, spec), "PS": (2, spec), "Worker": (2, spec)},
                                        dynamic=True))
        pods = wait_for(lambda: (p := pods_by_task(cluster, namespace, job)) and len(p) == 5 and p, 120,
                        "the Go operator's 5 pods", interval=KUBECTL_INTERVAL)
        configs = {task: json.loads(next(e["value"] for e in pod["spec"]["containers"][0]["env"]
                                         if e["name"] == "TF_CONFIG")) for task, pod in sorted(pods.items())}
        for task, config in configs.items():
            print(f"\nGo operator v1.9.3 {task} TF_CONFIG={json.dumps(config, sort_keys=True)}")
        scaled = cluster.kubectl("scale", "-n", namespace, f"tfjob/{job}", "--replicas=3", check=False)
        print(f"\nGo operator v1.9.3: kubectl scale tfjob/{job} --replicas=3: exit {scaled.returncode}: "
              f"{scaled.stderr.strip()}")
        # What TensorFlow in the pods said of it: the chief knows no task at all, ps:1 is not in its own cluster.
        chief = wait_for_line(cluster, namespace, job, pods["chief:0"]["metadata"]["uid"],
                              re.compile(r"^\w*Error: "), "the chief's error", timeout=400)
        ps1 = wait_for_line(cluster, namespace, job, pods["ps:1"]["metadata"]["uid"],
                            re.compile(r".*Task 1 was not defined in job"), "ps:1's error", timeout=400)
        print(f"\nGo operator v1.9.3 chief:0: {chief[0].text}\nGo operator v1.9.3 ps:1: {ps1[0].text}")
    finally:
        go.stop()
    # Measured from its code (notes: issue 33 facts): the chief's cluster is empty, a PS lists only itself.
    assert configs["chief:0"]["cluster"] == {"ps": [], "worker": {}}, configs["chief:0"]
    assert len(configs["ps:1"]["cluster"]["ps"]) == 1 and configs["ps:1"]["task"]["index"] == 1, configs["ps:1"]
    assert configs["worker:1"]["cluster"]["worker"].keys() == {"1"}, configs["worker:1"]
    assert scaled.returncode != 0, scaled.stdout
