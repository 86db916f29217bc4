"""The examples' training programs against real TensorFlow: the pinned tensorflow-cpu of the TensorFlow image, in
its virtualenv under the cache root (hack/tensorflow-venv.sh). Each example's TFJob goes through tfop's own
defaulting and desired-pod code; every replica then runs as a process on loopback with the TF_CONFIG tfop wrote
for its pod, the Service addresses mapped to local ports. So this checks the manifests, the scripts and the
TF_CONFIG contract together, without a cluster; the real node's e2e tests run the same in pods.

No control plane is needed, so no `integration` marker: these run in every `make test` and `make integration`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from ports import free_port
from support.plan_builders import parsed
from tfop import yamlio
from tfop.api.defaults import apply_defaults
from tfop.controller.plan.children.desired import DesiredChildren

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
# Where the TensorFlow image carries examples/train_*.py (hack/build-images.sh).
IMAGE_SCRIPT_DIR = "/opt/train/"
STEPS = 20
# Cold TensorFlow imports on a busy 2-core machine take tens of seconds; a hung cluster must still end the test.
RUN_TIMEOUT = 300.0


@pytest.fixture(scope="session")
def tensorflow_python() -> Path:
    """Creates the virtualenv on first use (a few minutes: the wheels are downloaded once into the cache)."""
    result = subprocess.run(["bash", str(REPO / "hack" / "tensorflow-venv.sh")], capture_output=True,
                            text=True, check=False, timeout=1800)
    if result.returncode != 0:
        pytest.fail(f"hack/tensorflow-venv.sh failed (exit {result.returncode}):\n{result.stderr}")
    return Path(result.stdout.split()[-1])


@dataclass
class Replica:
    task: str  # "worker:1", as TensorFlow names the task
    command: list[str]
    tf_config: dict[str, Any]
    env: dict[str, str]  # the container's own, TF_CONFIG aside
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def output(self) -> str:
        return self.log.read_text(errors="replace")



def replicas_of(manifest: Path, log_dir: Path) -> list[Replica]:
    """One Replica per pod tfop would create for the manifest's TFJob, with that pod's command and TF_CONFIG."""
    job = yamlio.load(manifest.read_text())
    job["metadata"].update(namespace="default", uid=f"uid-of-{manifest.stem}")
    job = apply_defaults(job)
    children = DesiredChildren(parsed(job))
    replicas = []
    for replica_type, spec in job["spec"]["tfReplicaSpecs"].items():
        for index in range(spec["replicas"]):
            pod = children.pod(replica_type, index)
            container = next(c for c in pod["spec"]["containers"] if c["name"] == "tensorflow")
            env = {variable["name"]: variable["value"] for variable in container["env"]}
            tf_config = json.loads(env["TF_CONFIG"])
            task = f"{tf_config['task']['type']}:{tf_config['task']['index']}"
            own = {name: value for name, value in env.items() if name != "TF_CONFIG"}
            replicas.append(Replica(task, container["command"], tf_config, own,
                                    log_dir / f"{task.replace(':', '-')}.log"))
    return replicas


def on_loopback(replicas: list[Replica]) -> None:
    """Maps every address of the (one, shared) cluster to a local port, in every replica's TF_CONFIG alike."""
    cluster = replicas[0].tf_config["cluster"]
    assert all(replica.tf_config["cluster"] == cluster for replica in replicas), "replicas disagree on the cluster"
    local = {address: f"127.0.0.1:{free_port()}" for addresses in cluster.values() for address in addresses}
    for replica in replicas:
        replica.tf_config["cluster"] = {task_type: [local[address] for address in addresses]
                                        for task_type, addresses in cluster.items()}


def script_of(replica: Replica) -> Path:
    """The pod's `python /opt/train/<script>` as a path in examples/."""
    interpreter, script, *rest = replica.command
    assert interpreter == "python" and script.startswith(IMAGE_SCRIPT_DIR) and not rest, replica.command
    return EXAMPLES / script.removeprefix(IMAGE_SCRIPT_DIR)


@pytest.fixture
def run_job(tensorflow_python: Path, tmp_path: Path) -> Iterator[Any]:
    """Starts every replica of an example and waits for those that finish; none outlives the test."""
    started: list[Replica] = []
    logs: list[IO[bytes]] = []

    def run(manifest: str, finishers: set[str], env_here: dict[str, str] | None = None) -> list[Replica]:
        """env_here: what the pod's env becomes on this machine (a path in the container, say)."""
        replicas = replicas_of(EXAMPLES / manifest, tmp_path)
        on_loopback(replicas)
        for replica in replicas:
            env = {name: value for name, value in os.environ.items() if name != "TF_CONFIG"}
            env.update(replica.env, **(env_here or {}))
            env.update(TF_CONFIG=json.dumps(replica.tf_config, sort_keys=True, separators=(",", ":")),
                       PYTHONUNBUFFERED="1")
            log = replica.log.open("wb")
            logs.append(log)
            replica.process = subprocess.Popen([str(tensorflow_python), str(script_of(replica))], env=env,
                                               stdout=log, stderr=subprocess.STDOUT)
            started.append(replica)
        deadline = time.monotonic() + RUN_TIMEOUT
        for replica in replicas:
            if replica.task in finishers:
                assert replica.process is not None
                try:
                    replica.process.wait(timeout=max(deadline - time.monotonic(), 1.0))
                except subprocess.TimeoutExpired:
                    pytest.fail(f"{replica.task} still runs after {RUN_TIMEOUT:.0f}s:\n{replica.output()[-3000:]}")
        return replicas

    yield run
    for replica in started:
        if replica.process is not None and replica.process.poll() is None:
            replica.process.send_signal(signal.SIGKILL)
            replica.process.wait()
    for log in logs:
        log.close()


def announced(replica: Replica) -> dict[str, str]:
    """The example's `tfop-example:` line: TensorFlow's own reading of the replica's TF_CONFIG."""
    match = re.search(r"^tfop-example: (.*)$", replica.output(), re.MULTILINE)
    assert match, f"{replica.task} printed no tfop-example line:\n{replica.output()[-3000:]}"
    return dict(field.split("=", 1) for field in match.group(1).split())


def losses(replica: Replica) -> list[float]:
    return [float(loss) for loss in re.findall(r"^step \d+ loss (\S+)$", replica.output(), re.MULTILINE)]


def assert_exit_0(replica: Replica) -> None:
    assert replica.process is not None
    output = replica.output()[-3000:]
    assert replica.process.returncode == 0, f"{replica.task} exited {replica.process.returncode}:\n{output}"


def test_mwms_chief_and_two_workers_train_in_step(run_job: Any) -> None:
    replicas = run_job("mwms.yaml", finishers={"chief:0", "worker:0", "worker:1"})

    assert sorted(replica.task for replica in replicas) == ["chief:0", "worker:0", "worker:1"]
    for replica in replicas:
        assert_exit_0(replica)
        assert announced(replica) == {"task": replica.task, "workers": "2", "chief": "1", "ps": "0"}
    # One all-reduce per step: every replica reports the same global loss, step for step, and it goes down.
    chief_losses = losses(replicas[0])
    assert len(chief_losses) == STEPS
    assert chief_losses[-1] < chief_losses[0] / 4
    for replica in replicas[1:]:
        assert losses(replica) == chief_losses


def test_ps_strategy_coordinator_trains_on_workers_with_variables_on_ps(run_job: Any) -> None:
    replicas = run_job("ps-strategy.yaml", finishers={"chief:0"})

    by_task = {replica.task: replica for replica in replicas}
    assert sorted(by_task) == ["chief:0", "ps:0", "worker:0", "worker:1"]
    chief = by_task["chief:0"]
    assert_exit_0(chief)
    for replica in replicas:
        assert announced(replica) == {"task": replica.task, "workers": "2", "chief": "1", "ps": "1"}
    for task in ("ps:0", "worker:0", "worker:1"):
        # Servers serve until stopped: in a cluster, the cleanPodPolicy deletes them once the chief is done.
        assert by_task[task].process is not None and by_task[task].process.poll() is None, by_task[task].output()
        assert f"serving {task} at grpc://" in by_task[task].output()
    assert "variables on /job:ps/replica:0/task:0" in chief.output()
    chief_losses = losses(chief)
    assert len(chief_losses) == STEPS
    assert chief_losses[-1] < chief_losses[0] / 4


def test_keras_fit_under_mwms_trains_in_step_and_every_replica_finishes(run_job: Any, tmp_path: Path) -> None:
    # One backup directory for all, as a volume every replica mounts would be.
    backup = tmp_path / "backup"
    replicas = run_job("keras_mwms.yaml", finishers={"chief:0", "worker:0", "worker:1"},
                       env_here={"BACKUP_DIR": str(backup)})

    for replica in replicas:
        assert_exit_0(replica)
        assert announced(replica) == {"task": replica.task, "workers": "2", "chief": "1", "ps": "0"}
    epochs = [re.findall(r"^epoch (\d+) loss (\S+) accuracy (\S+)$", replica.output(), re.MULTILINE)
              for replica in replicas]
    # model.fit all-reduces every step, so the epochs' logs (averaged over every replica's batches) agree.
    assert [epoch for epoch, _, _ in epochs[0]] == ["1", "2", "3"], replicas[0].output()[-3000:]
    assert all(other == epochs[0] for other in epochs[1:]), [r.output()[-1000:] for r in replicas]
    assert float(epochs[0][-1][1]) < float(epochs[0][0][1])
    assert not (backup / "chief").exists()  # fit deletes the backup once it completes
