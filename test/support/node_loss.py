"""What the node-loss tests on real nodes read and build: TensorFlow replicas placed on chosen real nodes (tf_pod,
kept in hack/bench/real_jobs.py with the other reads a benchmark shares), the containers' own log files on each
node's disk (timestamped by the runtime, readable while a node is cut off), and the timeline of one recovery (node
failed, marked lost, replacement created, Running again, resumed, Succeeded)."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field

from bench.real_jobs import LogLine as LogLine
from bench.real_jobs import condition_at as condition_at
from bench.real_jobs import started_at as started_at
from bench.real_jobs import tf_pod as tf_pod
from bench.real_jobs import timestamp as timestamp
from localcluster import LocalCluster

STEP = re.compile(r"^step (\d+) loss")
RESUMED = re.compile(r"resumed from checkpoint at step (\d+)")


class Stages:
    """Prints how far into a scenario each of its stages came (pod start, TensorFlow's import, a step, a failure
    seen), so a run's output shows where its wall time went. Printed, never asserted."""

    def __init__(self, scenario: str) -> None:
        self.scenario, self.began = scenario, time.monotonic()

    def mark(self, stage: str) -> None:
        print(f"\n[{self.scenario} +{time.monotonic() - self.began:.0f} s] {stage}", flush=True)


def container_logs(cluster: LocalCluster, namespace: str, job: str) -> dict[str, list[LogLine]]:
    """pod uid -> the lines its tensorflow container wrote, from the log files kubelet keeps on each node's disk
    (`<ns>_<pod>_<uid>/tensorflow/<n>.log`, each line `<time> <stream> <tag> <text>`). Read from the disk, so a
    pod deleted from the API or a node cut off still shows what its process did."""
    found: dict[str, list[LogLine]] = {}
    for node in cluster.nodes:
        for pod_dir in (node.layout.root / "pod-logs").glob(f"{namespace}_{job}-*_*"):
            uid = pod_dir.name.rsplit("_", 1)[1]
            for log in sorted((pod_dir / "tensorflow").glob("*.log")):
                for raw in log.read_text(errors="replace").splitlines():
                    when, _, rest = raw.partition(" ")
                    found.setdefault(uid, []).append(LogLine(timestamp(when), rest.split(" ", 2)[-1]))
    return found


def follow_logs(cluster: LocalCluster, namespace: str, pod: str) -> subprocess.Popen[str]:
    """`kubectl logs -f` of the pod's tensorflow container, collecting until the container ends."""
    assert cluster.bin_dir is not None, "bin_dir is known once the control plane is built"
    return subprocess.Popen([str(cluster.bin_dir / "kubectl"), "--kubeconfig", str(cluster.kubeconfig), "logs", "-f",
                             "-n", namespace, pod, "-c", "tensorflow"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def step_spans(lines: list[LogLine]) -> tuple[float, float] | None:
    """When a process logged its first and its last training step, if it logged any."""
    steps = [line.at for line in lines if STEP.match(line.text)]
    return (steps[0], steps[-1]) if steps else None


@dataclass
class Timeline:
    """Seconds after the node failed, of each stage of one recovery."""

    failed_at: float
    stages: dict[str, float] = field(default_factory=dict)
    moments: dict[str, float] = field(default_factory=dict)  # the same, as the Unix times they were read as
    resumed_step: int | None = None

    def mark(self, stage: str, at: float) -> None:
        self.stages[stage] = round(at - self.failed_at, 1)
        self.moments[stage] = at

    def row(self, scenario: str) -> str:
        cells = [f"{self.stages[s]:.0f} s" if s in self.stages else "never"
                 for s in ("marked lost", "replacement created", "Running again", "resumed", "Succeeded")]
        step = "" if self.resumed_step is None else f" (step {self.resumed_step})"
        return f"| {scenario} | 0 | {' | '.join(cells[:3])} | {cells[3]}{step} | {cells[4]} |"


def node_lost_at(cluster: LocalCluster, name: str) -> float | None:
    """When the node lifecycle controller marked the node Ready Unknown (or False), if it did."""
    node = cluster.api("GET", f"/api/v1/nodes/{name}")
    [ready] = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    return None if ready["status"] == "True" else timestamp(ready["lastTransitionTime"])


