"""Two tfop replicas with leader election, as a cluster runs them: the leader can be SIGKILLed and a replacement
started as the new standby, and each process's RSS is sampled over its life."""

from __future__ import annotations

import time
from pathlib import Path

from bench.operators import TfopProcess


class OperatorPair:
    def __init__(self, kubeconfig: Path, namespace: str, log_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.log_dir = log_dir
        self.processes: list[TfopProcess] = []
        self.started_at: dict[str, float] = {}
        self.rss: dict[str, list[tuple[float, int]]] = {}  # process label -> (seconds since its start, RSS)
        self.kills = 0

    def _start_one(self) -> TfopProcess:
        label = f"tfop-{len(self.started_at)}"
        process = TfopProcess(self.kubeconfig, self.log_dir / f"{label}.log", [
            "--namespace", self.namespace, "--leader-elect", "--leader-elect-namespace", self.namespace])
        process.start()
        self.processes.append(process)
        self.started_at[label] = time.monotonic()
        self.rss[label] = []
        return process

    def label(self, process: TfopProcess) -> str:
        return process.log_path.stem

    def start(self) -> None:
        self._start_one()
        self._start_one()

    def leader(self) -> TfopProcess | None:
        return next((process for process in self.processes if process.metric_sum("tf_operator_is_leader") == 1.0),
                    None)

    def kill_leader(self) -> str:
        """SIGKILL the leader (or, between leaders, the older replica) and start a standby in its place; returns
        what was done, for the timeline."""
        victim = self.leader() or self.processes[0]
        self.sample()
        assert victim.process is not None
        victim.process.kill()
        victim.process.wait()
        self.processes.remove(victim)
        self.kills += 1
        replacement = self._start_one()
        return f"killed {self.label(victim)}, started {self.label(replacement)}"

    def sample(self) -> None:
        now = time.monotonic()
        for process in self.processes:
            try:
                rss = process.memory()["VmRSS"]
            except (OSError, KeyError):  # it exited
                continue
            label = self.label(process)
            self.rss[label].append((now - self.started_at[label], rss))

    def stop(self) -> None:
        for process in self.processes:
            process.stop()
