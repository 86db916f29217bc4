"""`--pin-operator`: the contender on a CPU of its own and the cluster on the others, as an operator runs on a node
apart from the control plane. On the shared cores of the default bench, every CPU-second an operator spends is
taken from the apiserver, the scheduler and kwok; pinned, what is left between the operator and the limit is
what it asks of the apiserver and how it sequences its requests."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# The cluster's processes, by the name the kernel gives them (15 characters at most).
CLUSTER_PROCESSES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller", "kwok")


@dataclass(frozen=True)
class Pinning:
    operator: frozenset[int]  # the contender's CPUs (tfop, the Go operator, the limit client)
    rest: frozenset[int]  # the cluster's and the bench's own

    @classmethod
    def split(cls) -> Pinning:
        """The last CPU for the operator, the others for everything else."""
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise SystemExit("--pin-operator needs at least 2 CPUs")
        return cls(frozenset(cpus[-1:]), frozenset(cpus[:-1]))

    def operator_command(self, command: list[str]) -> list[str]:
        """The command pinned from its first instruction (taskset execs it: the pid stays), so every thread it
        starts inherits the mask."""
        return ["taskset", "--cpu-list", ",".join(str(cpu) for cpu in sorted(self.operator)), *command]

    def pin_bench(self) -> None:
        """The bench process (its watch, the job creates and exit patches) beside the cluster; threads started
        from now on inherit it."""
        os.sched_setaffinity(0, set(self.rest))

    def pin_cluster(self) -> list[int]:
        """Every thread of the cluster's running processes; returns their pids."""
        pids = processes_named(CLUSTER_PROCESSES)
        for pid in pids:
            _pin_threads(pid, set(self.rest))
        return pids


def processes_named(names: tuple[str, ...]) -> list[int]:
    """The pids of the running processes the kernel names one of `names`."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _name(int(entry)) in names]


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _pin_threads(pid: int, cpus: set[int]) -> None:
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return  # gone
    for thread in threads:
        try:
            os.sched_setaffinity(int(thread), cpus)
        except (ProcessLookupError, PermissionError):
            continue
