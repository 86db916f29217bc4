"""The gang schedulers' side of a local cluster (hack/local_cluster.py), started on demand beside it:

- scheduler-plugins: its scheduler (kube-scheduler with the Coscheduling plugin, built by
  hack/build-coscheduler.sh) as a second scheduler named `scheduler-plugins-scheduler`; its controller (same
  module, `cmd/controller`), which writes each PodGroup's status.phase and pod counts; and the CRDs of both from
  the module's own manifests in the Go module cache (PodGroup from manifests/coscheduling, and ElasticQuota from
  manifests/capacityscheduling, since the controller also watches ElasticQuotas and does not start without them).
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
from .process import AddOnProcess, describe, run_build_script, run_cli, tail

HACK_DIR = Path(__file__).resolve().parents[2]
SCHEDULER_NAME = "scheduler-plugins-scheduler"
VOLCANO_CRD = Path(__file__).resolve().parent / "volcano-podgroup-crd.yaml"
GANGS = ("scheduler-plugins", "volcano")
BINARY = "kube-scheduler-plugins"
CONTROLLER_BINARY = "scheduler-plugins-controller"
# The controller's reconcilers start once their informers have synced; controller-runtime logs a line with both of
# these for each (klogr writes `"msg"="Starting workers" "controller"="podgroup" ...`).
CONTROLLER_STARTED = (b"Starting workers", b'"podgroup"')


def log(message: str) -> None:
    print(f"[coscheduler] {message}", file=sys.stderr, flush=True)


def build() -> Path:
    """The bin directory holding the co-scheduler, built once per version."""
    return run_build_script("build-coscheduler.sh")


def build_controller() -> Path:
    """The bin directory holding scheduler-plugins' controller, built once per version."""
    return run_build_script("build-coscheduler.sh", "controller")


def module_dir() -> Path:
    return run_build_script("build-coscheduler.sh", "--module-dir")


class CoScheduler:
    """The co-scheduler of one LocalCluster."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.directory = cluster.directory
        self.process = AddOnProcess(cluster.directory, BINARY)
        self.controller = AddOnProcess(cluster.directory, CONTROLLER_BINARY)

    @property
    def log_file(self) -> Path:
        return self.process.log_file

    @property
    def config_file(self) -> Path:
        return self.directory / "coscheduler-config.yaml"

    def pid(self) -> int | None:
        return self.process.pid()

    def install_crd(self) -> None:
        manifests = module_dir() / "manifests"
        for crd, name in ((manifests / "coscheduling" / "crd.yaml", "podgroups.scheduling.x-k8s.io"),
                          (manifests / "capacityscheduling" / "crd.yaml", "elasticquotas.scheduling.x-k8s.io")):
            if not crd.exists():
                raise ClusterError(f"{crd} is missing: the scheduler-plugins module no longer ships the {name} CRD "
                                   "there")
            self.cluster.apply(str(crd), manager="tfop-hack-coscheduler")
            self.cluster.admin.wait_established(name)

    def start(self) -> None:
        """Installs the CRDs and starts the scheduler and the controller unless they run; waits until both work."""
        bin_dir = build()
        controller_dir = build_controller()
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
        self._start_controller(controller_dir)

    def _start_controller(self, bin_dir: Path, timeout: float = 60.0) -> None:
        """The PodGroup controller, its metrics and probes on loopback ports of their own; up once its PodGroup
        reconciler has started (its informers synced), which its log says."""
        if self.controller.pid() is None:
            offset = self.controller.log_file.stat().st_size if self.controller.log_file.exists() else 0
            self.controller.spawn([str(bin_dir / CONTROLLER_BINARY), f"--kubeconfig={self.cluster.kubeconfig}",
                                   f"--metricsAddr=127.0.0.1:{free_port()}", f"--probeAddr=127.0.0.1:{free_port()}",
                                   "--qps=50", "--burst=100", "--workers=2"], cwd=self.directory)
        else:
            offset = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.controller.pid() is None:
                raise self.controller.exited("scheduler-plugins' controller")
            with self.controller.log_file.open("rb") as log_file:
                log_file.seek(offset)
                if any(all(part in line for part in CONTROLLER_STARTED) for line in log_file):
                    return
            time.sleep(0.2)
        raise ClusterError(f"scheduler-plugins' controller did not start its PodGroup reconciler within "
                           f"{timeout:.0f}s; see {self.controller.log_file}:\n{tail(self.controller.log_file)}")

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
        self.controller.stop(timeout)
        self.process.stop(timeout)

    def status(self) -> str:
        return describe(self.pid())

    def controller_status(self) -> str:
        return describe(self.controller.pid())


def install_volcano_crd(cluster: LocalCluster) -> None:
    cluster.apply(str(VOLCANO_CRD), manager="tfop-hack-volcano")
    cluster.admin.wait_established("podgroups.scheduling.volcano.sh")


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
            print(build_controller())
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
                log(f"its PodGroup controller is running (pid {scheduler.controller.pid()}); log: "
                    f"{scheduler.controller.log_file}")
        elif args.command == "down":
            scheduler.stop()
            log("stopped")
        else:
            print(f"{SCHEDULER_NAME:26} {scheduler.status()}")
            print(f"{CONTROLLER_BINARY:26} {scheduler.controller_status()}")

    return run_cli(command, log)

