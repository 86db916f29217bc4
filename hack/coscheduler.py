#!/usr/bin/env python3
"""The gang schedulers' side of a local cluster (hack/local_cluster.py), started on demand beside it:

- scheduler-plugins: its scheduler (kube-scheduler with the Coscheduling plugin, built by
  hack/build-coscheduler.sh) as a second scheduler named `scheduler-plugins-scheduler`, and its PodGroup CRD
  from the module's own manifests (manifests/coscheduling/crd.yaml in the Go module cache).
- volcano: only its PodGroup CRD (hack/volcano-podgroup-crd.yaml, structural, from volcano.sh/apis' types; see
  test/integration/test_gang.py). Volcano's scheduler is not built here: tests play its part by setting the
  PodGroup's phase.

    python hack/coscheduler.py up|down|status [--gang scheduler-plugins|volcano] [--dir .local/cluster]

State (pid, config, log) lives in the cluster's directory, next to the other components'.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from local_cluster import DEFAULT_DIR, ClusterError, LocalCluster, free_port

HACK_DIR = Path(__file__).resolve().parent
SCHEDULER_NAME = "scheduler-plugins-scheduler"
VOLCANO_CRD = HACK_DIR / "volcano-podgroup-crd.yaml"
GANGS = ("scheduler-plugins", "volcano")
BINARY = "kube-scheduler-plugins"


def log(message: str) -> None:
    print(f"[coscheduler] {message}", file=sys.stderr, flush=True)


def _hack_script(*args: str) -> Path:
    """Runs hack/build-coscheduler.sh (its progress goes to our stderr) and returns the path it prints."""
    result = subprocess.run(["bash", str(HACK_DIR / "build-coscheduler.sh"), *args], stdout=subprocess.PIPE,
                            text=True, check=False)
    if result.returncode != 0:
        raise ClusterError(f"hack/build-coscheduler.sh {' '.join(args)} failed (exit {result.returncode}); its "
                           "messages above name the module and version")
    return Path(result.stdout.strip().splitlines()[-1])


def build() -> Path:
    """The bin directory holding the co-scheduler, built once per version."""
    return _hack_script()


def module_dir() -> Path:
    return _hack_script("--module-dir")


class CoScheduler:
    """The co-scheduler of one LocalCluster."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.directory = cluster.directory

    @property
    def pid_file(self) -> Path:
        return self.directory / "run" / f"{BINARY}.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / "logs" / f"{BINARY}.log"

    @property
    def config_file(self) -> Path:
        return self.directory / "coscheduler-config.yaml"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text())
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError):
            return None
        if state in ("Z", "X"):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return None
        return pid if not argv0 or Path(argv0).name == BINARY else None

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
            (self.directory / "run").mkdir(parents=True, exist_ok=True)
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with self.log_file.open("ab") as out:
                proc = subprocess.Popen(
                    [str(bin_dir / BINARY), f"--config={self.config_file}", "--bind-address=127.0.0.1",
                     f"--secure-port={port}",
                     f"--authentication-kubeconfig={self.cluster.kubeconfig}",
                     f"--authorization-kubeconfig={self.cluster.kubeconfig}", "--v=2"],
                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                    cwd=self.directory)
            self.pid_file.write_text(str(proc.pid))
            (self.directory / "run" / f"{BINARY}.port").write_text(str(port))
        self._wait_leading()

    def _wait_leading(self, timeout: float = 60.0) -> None:
        """Up once its informers have synced and it schedules: the log says so."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pid() is None:
                raise ClusterError(f"the co-scheduler exited; see {self.log_file}:\n{_tail(self.log_file)}")
            if "Starting Kubernetes Scheduler" in self.log_file.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise ClusterError(f"the co-scheduler did not start within {timeout:.0f}s; see {self.log_file}")

    def stop(self, timeout: float = 15.0) -> None:
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.pid() is not None:
            os.kill(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)

    def status(self) -> str:
        pid = self.pid()
        return f"running (pid {pid})" if pid else "stopped"


def install_volcano_crd(cluster: LocalCluster) -> None:
    cluster.kubectl("apply", "--server-side", "-f", str(VOLCANO_CRD))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/podgroups.scheduling.volcano.sh")


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down", "status", "build"])
    parser.add_argument("--gang", choices=GANGS, default="scheduler-plugins")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help=f"cluster state directory (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build())
            return 0
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
    except ClusterError as error:
        log(f"ERROR: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
