"""Two tfop replicas with leader election, kept running as a Deployment's kubelet keeps its pods: a replica that
exits (SIGKILLed by a fault, or stepping down after it could not renew its Lease through an apiserver outage, as
it is meant to) is started again. Each process's RSS is sampled over its life."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

from bench.operators import TfopProcess

REPLICAS = 2
SUPERVISE_INTERVAL = 1.0


class OperatorPair:
    def __init__(self, kubeconfig: Path, namespace: str, log_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.log_dir = log_dir
        self.processes: list[TfopProcess] = []
        self.started_at: dict[str, float] = {}
        self.rss: dict[str, list[tuple[float, int]]] = {}  # process label -> (seconds since its start, RSS)
        self.exits: list[tuple[str, int]] = []  # (label, exit code) of every replica that exited by itself
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._supervise, daemon=True, name="operators")

    def label(self, process: TfopProcess) -> str:
        return process.log_path.stem

    def _start_one(self) -> None:
        label = f"tfop-{len(self.started_at)}"
        process = TfopProcess(self.kubeconfig, self.log_dir / f"{label}.log", [
            "--namespace", self.namespace, "--leader-elect", "--leader-elect-namespace", self.namespace])
        with self._lock:
            self.started_at[label] = time.monotonic()
            self.rss[label] = []
            self.processes.append(process)
        # Not ready within its timeout (the apiserver is down?), or exited at once: the next look decides.
        with contextlib.suppress(RuntimeError, TimeoutError):
            process.start()

    def start(self) -> None:
        for _ in range(REPLICAS):
            self._start_one()
        self._thread.start()

    def _supervise(self) -> None:
        while not self._stop.wait(SUPERVISE_INTERVAL):
            with self._lock:
                exited = [p for p in self.processes if p.process is not None and p.process.poll() is not None]
                for process in exited:
                    self.processes.remove(process)
                    assert process.process is not None
                    self.exits.append((self.label(process), process.process.returncode))
            for _ in range(REPLICAS - len(self.processes)):
                if not self._stop.is_set():
                    self._start_one()

    def leader(self) -> TfopProcess | None:
        with self._lock:
            processes = list(self.processes)
        return next((process for process in processes if process.metric_sum("tf_operator_is_leader") == 1.0),
                    None)

    def kill_leader(self) -> str:
        """SIGKILL the leader (or, between leaders, the oldest replica); the supervision starts a standby in its
        place. Returns what was done, for the timeline."""
        self.sample()
        leader = self.leader()
        with self._lock:
            victim = leader or self.processes[0]
            assert victim.process is not None
            victim.process.kill()
            victim.process.wait()
            self.processes.remove(victim)
        return f"killed {self.label(victim)} ({'the leader' if leader else 'no leader then'})"

    def sample(self) -> None:
        now = time.monotonic()
        with self._lock:
            processes = list(self.processes)
        for process in processes:
            try:
                rss = process.memory()["VmRSS"]
            except (OSError, KeyError, AssertionError):  # it exited, or was never started
                continue
            label = self.label(process)
            self.rss[label].append((now - self.started_at[label], rss))

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(180)
        with self._lock:
            for process in self.processes:
                process.stop()
