"""A run's report: the fault timeline, counts by kind, per-kind recovery times, the invariants, the operator's RSS;
written as JSON (for tools) and markdown (for people)."""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from chaos.invariants import CONVERGENCE_BOUND, ERRORED, SKIPPED, Verdict, judged_for_memory


@dataclass
class FaultRecord:
    round: int
    kind: str
    started: float  # seconds since the run started
    healed: float
    detail: str  # what was hit; "skipped: ..." when nothing fitted, "error: ..." when making or healing it failed
    recovered: float | None = None  # seconds from the round's healing to convergence; None: not within the bound

    @property
    def outcome(self) -> str:
        """injected, errored (it may have been made in part: not counted as injected) or skipped."""
        if self.detail.startswith(ERRORED):
            return "errored"
        return "skipped" if self.detail.startswith(SKIPPED) else "injected"


@dataclass
class Report:
    seed: int
    duration: float  # asked for
    elapsed: float = 0.0
    real_nodes: int = 0
    faults: list[FaultRecord] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    rss: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)  # expected outcome -> count
    operator_exits: list[tuple[str, int]] = field(default_factory=list)  # replicas that exited by themselves
    deletions_finished: list[str] = field(default_factory=list)  # pods whose deletion the harness ended for kwok
    tensorflow_processes: int = 0  # real TensorFlow processes that said their task in their log on a node's disk

    @property
    def held(self) -> bool:
        """Every invariant held; a run that judged none has shown nothing and does not pass."""
        return bool(self.verdicts) and all(verdict.held for verdict in self.verdicts)

    def counts(self, outcome: str = "injected") -> dict[str, int]:
        """Faults by kind that ended as `outcome` (injected, errored or skipped)."""
        return dict(sorted(Counter(f.kind for f in self.faults if f.outcome == outcome).items()))

    def recovery(self) -> dict[str, dict[str, float]]:
        """Convergence times by kind, of the faults injected."""
        times: dict[str, list[float]] = defaultdict(list)
        for fault in self.faults:
            if fault.recovered is not None and fault.outcome == "injected":
                times[fault.kind].append(fault.recovered)
        return {kind: {"n": len(values), "median": round(statistics.median(values), 1),
                       "max": round(max(values), 1)} for kind, values in sorted(times.items())}

    def rss_summary(self) -> dict[str, dict[str, float | bool]]:
        judged = set(judged_for_memory(self.rss))
        return {process: {"lived_s": round(points[-1][0]), "start_mib": round(points[0][1] / 2**20, 1),
                          "end_mib": round(points[-1][1] / 2**20, 1), "judged": process in judged}
                for process, points in self.rss.items() if points}

    def to_json(self) -> str:
        return json.dumps({
            "seed": self.seed, "duration_s": self.duration, "elapsed_s": round(self.elapsed), "held": self.held,
            "real_nodes": self.real_nodes, "fault_counts": self.counts(), "faults_errored": self.counts("errored"),
            "faults_skipped": self.counts("skipped"), "recovery_s": self.recovery(),
            "convergence_bound_s": CONVERGENCE_BOUND, "jobs": self.jobs, "rss": self.rss_summary(),
            "operator_exits": [{"process": label, "code": code} for label, code in self.operator_exits],
            "deletions_finished_for_kwok": self.deletions_finished,
            "tensorflow_processes": self.tensorflow_processes,
            "invariants": [{"name": v.name, "held": v.held, "violations": list(v.violations)}
                           for v in self.verdicts],
            "timeline": [asdict(fault) for fault in self.faults],
        }, indent=2)

    def to_markdown(self) -> str:
        lines = [f"# Chaos run, seed {self.seed}", "",
                 (f"{self.elapsed / 60:.1f} min ({self.duration / 60:.0f} asked), real nodes: {self.real_nodes}; "
                  f"invariants {'all held' if self.held else 'VIOLATED'}."), "",
                 "| invariant | held | violations |", "| --- | --- | --- |"]
        lines += [f"| {v.name} | {'yes' if v.held else 'NO'} | {'; '.join(v.violations[:5]) or '-'} |"
                  for v in self.verdicts]
        if self.real_nodes:
            processes = self.tensorflow_processes
            lines += ["", f"Real TensorFlow processes read from their log files on the nodes' disks: {processes}."]
        lines += ["", f"Jobs by expected outcome: {', '.join(f'{k} {n}' for k, n in sorted(self.jobs.items()))}.",
                  "", "| fault kind | injected | errored | skipped | recovery median (s) | max (s) |",
                  "| --- | --- | --- | --- | --- | --- |"]
        recovery = self.recovery()
        injected, errored, skipped = self.counts(), self.counts("errored"), self.counts("skipped")
        lines += [f"| {kind} | {injected.get(kind, 0)} | {errored.get(kind, 0)} | {skipped.get(kind, 0)} | "
                  f"{recovery.get(kind, {}).get('median', '-')} | {recovery.get(kind, {}).get('max', '-')} |"
                  for kind in sorted({f.kind for f in self.faults})]
        exits = ", ".join(f"{label} ({code})" for label, code in self.operator_exits) or "none"
        finished = ", ".join(self.deletions_finished) or "none"
        lines += ["", f"Operator replicas that exited by themselves (exit code), each started again: {exits}.",
                  "", f"Pods stuck Terminating whose deletion the harness finished, as a kubelet would: {finished}.",
                  "", "| operator process | lived (s) | RSS start (MiB) | RSS end (MiB) | growth judged |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| {p} | {s['lived_s']} | {s['start_mib']} | {s['end_mib']} | {'yes' if s['judged'] else 'no'} |"
                  for p, s in self.rss_summary().items()]
        lines += ["", "| round | at (s) | fault | healed (s) | converged after (s) | detail |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {f.round} | {f.started:.0f} | {f.kind} | {f.healed:.0f} | "
                  f"{'-' if f.recovered is None else f'{f.recovered:.1f}'} | {f.detail} |" for f in self.faults]
        return "\n".join(lines) + "\n"

    def write(self, directory: Path) -> tuple[Path, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        stem = directory / f"chaos-seed-{self.seed}"
        json_path, markdown_path = stem.with_suffix(".json"), stem.with_suffix(".md")
        json_path.write_text(self.to_json())
        markdown_path.write_text(self.to_markdown())
        return json_path, markdown_path
