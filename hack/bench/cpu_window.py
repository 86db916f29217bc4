"""Where a window's CPU went: each of the bench cluster's processes and the whole machine, from /proc.

A benchmark whose operator waits on the apiserver needs to say whether the apiserver was short of CPU (the machine
busy) or only slow to answer one caller at a time (the machine idle): the two call for different fixes.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

from bench.cluster import BenchCluster
from bench.operators import process_cpu_seconds
from localcluster.controlplane import COMPONENTS

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def machine_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of every CPU since boot: the first line of /proc/stat, idle and iowait not busy."""
    fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal; guest time is counted in user
    idle = fields[3] + fields[4]
    return (total - idle) / CLOCK_TICKS, total / CLOCK_TICKS


class CpuWindow:
    """Opened at the window's start; `close()` gives what each cluster process and the machine spent since."""

    def __init__(self, cluster: BenchCluster) -> None:
        self.cluster = cluster
        self._components = self._component_seconds()
        self._machine = machine_seconds()

    def _component_seconds(self) -> dict[str, float]:
        seconds = {}
        for component in COMPONENTS:
            pid = self.cluster.local.pid(component)
            if pid is not None:
                with suppress(OSError):  # gone meanwhile
                    seconds[component] = process_cpu_seconds(pid)
        return seconds

    def close(self) -> dict[str, float]:
        """CPU seconds per cluster process over the window, `machine_cpu_s`: every process's on the machine, and
        `machine_busy`: the share of all CPUs' time busy."""
        now = self._component_seconds()
        spent = {f"{name}_cpu_s": round(now[name] - before, 1)
                 for name, before in self._components.items() if name in now}
        busy, total = machine_seconds()
        busy_before, total_before = self._machine
        spent["machine_cpu_s"] = round(busy - busy_before, 1)
        spent["machine_busy"] = round((busy - busy_before) / max(total - total_before, 1e-9), 2)
        return spent
