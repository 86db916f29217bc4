"""The gang schedulers' side of a local cluster (hack/local_cluster.py), started on demand beside it:

- scheduler-plugins: its scheduler (kube-scheduler with the Coscheduling plugin, built by
  hack/build-coscheduler.sh) as a second scheduler named `scheduler-plugins-scheduler`, and its PodGroup CRD
  from the module's own manifests (manifests/coscheduling/crd.yaml in the Go module cache).
- volcano: only its PodGroup CRD (volcano-podgroup-crd.yaml beside this module, structural, from volcano.sh/apis'
  types; see test/integration/test_gang.py). Volcano's scheduler is not built here: tests play its part by setting the
  PodGroup's phase.

    python3 hack/local_cluster.py coscheduler up|down|status [--gang scheduler-plugins|volcano] [--dir .local/cluster]

State (pid, config, log) lives in the cluster's directory, next to the other components'.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ports import free_port

from ..cluster import DEFAULT_DIR, LocalCluster
from ..supervisor import ClusterError
from .process import AddOnProcess, describe, run_build_script, run_cli

HACK_DIR = Path(__file__).resolve().parents[2]
SCHEDULER_NAME = "scheduler-plugins-scheduler"
VOLCANO_CRD = Path(__file__).resolve().parent / "volcano-podgroup-crd.yaml"
GANGS = ("scheduler-plugins", "volcano")
BINARY = "kube-scheduler-plugins"


def log(message: str) -> None:
    print(f"[coscheduler] {message}", file=sys.stderr, flush=True)


def build() -> Path:
    """The bin directory holding the co-scheduler, built once per version."""
    return run_build_script("build-coscheduler.sh")


def module_dir() -> Path:
    return run_build_script("build-coscheduler.sh", "--module-dir")


class CoScheduler:
    """The co-scheduler of one LocalCluster."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.directory = cluster.directory
        self.process = AddOnProcess(cluster.directory, BINARY)

    @property
    def log_file(self) -> Path:
        return self.process.log_file

    @property
    def config_file(self) -> Path:
        return self.directory / "coscheduler-config.yaml"

    def pid(self) -> int | None:
        return self.process.pid()

    def install_crd(self) -> None:
        crd = module_dir() / "manifests" / "coscheduling" / "crd.yaml"
        if not crd.exists():
            raise ClusterError(f"{crd} is missing: the scheduler-plugins module no longer ships its PodGroup CRD there")
        self.cluster.kubectl("apply", "--server-side", "-f", str(crd))
        self.cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                             "crd/podgroups.scheduling.x-k8s.io")

    def start(self) -> None:
        """Installs the CRD and starts the scheduler unless it runs; waits until it serves /healthz."""
        bin_dir = build()
        self.install_crd()
        if self.pid() is None:
            port = free_port()
            self.config_file.write_text(f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: {self.cluster.kubeconfig}
  qps: 100
  burst: 200
profiles:
- schedulerName: {SCHEDULER_NAME}
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
""")
            self.process.spawn([str(bin_dir / BINARY), f"--config={self.config_file}", "--bind-address=127.0.0.1",
                                f"--secure-port={port}", f"--authentication-kubeconfig={self.cluster.kubeconfig}",
                                f"--authorization-kubeconfig={self.cluster.kubeconfig}", "--v=2"], cwd=self.directory)
            (self.directory / "run" / f"{BINARY}.port").write_text(str(port))
        self._wait_leading()

    def _wait_leading(self, timeout: float = 60.0) -> None:
        """Up once its informers have synced and it schedules: the log says so."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pid() is None:
                raise self.process.exited("the co-scheduler")
            if "Starting Kubernetes Scheduler" in self.log_file.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise ClusterError(f"the co-scheduler did not start within {timeout:.0f}s; see {self.log_file}")

    def stop(self, timeout: float = 15.0) -> None:
        self.process.stop(timeout)

    def status(self) -> str:
        return describe(self.pid())


def install_volcano_crd(cluster: LocalCluster) -> None:
    cluster.kubectl("apply", "--server-side", "-f", str(VOLCANO_CRD))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/podgroups.scheduling.volcano.sh")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "build"])
    parser.add_argument("--gang", choices=GANGS, default="scheduler-plugins")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"cluster state directory (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)

    def command() -> None:
        if args.command == "build":
            print(build())
            return
        cluster = LocalCluster(args.dir)
        scheduler = CoScheduler(cluster)
        if args.command == "up":
            if args.gang == "volcano":
                install_volcano_crd(cluster)
                log("Volcano's PodGroup CRD is installed (no Volcano scheduler runs: set a PodGroup's "
                    "status.phase to Inqueue to admit it)")
            else:
                scheduler.start()
                log(f"{SCHEDULER_NAME} is running (pid {scheduler.pid()}); log: {scheduler.log_file}")
        elif args.command == "down":
            scheduler.stop()
            log("stopped")
        else:
            print(f"{SCHEDULER_NAME:26} {scheduler.status()}")

    return run_cli(command, log)

