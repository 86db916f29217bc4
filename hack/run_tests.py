"""`make test` and `make test-all`: the suite as four pytest processes at once, each with its own local cluster.

`make test` is the gate (12 minutes warm on 2 cores): every test but those test/support/tiers.py marks `long`,
scenarios that cost minutes each. `make test-all` (`run_tests.py --all`) runs those too; CI (.ci/run) runs it
whenever every build is cached (`make builds-cached`), `make test` otherwise.

Much of the suite's time is waiting, not computing: the e2e tests wait for TensorFlow to train on the real nodes
and for the node lifecycle controller to mark a node lost; the integration tests wait for the apiserver, kwok, the
add-ons' controllers and Prometheus. So the e2e suite (test/e2e) runs beside the unit and integration suites, and
the integration modules that mostly wait run in a third lane (with two lanes the 2-core machine still sat idle
40% of the time), the costliest of the rest in a fourth.

Each lane's lines stream as they come, prefixed with its name; at the end each lane's summary (its failures and
its last line) is printed again unprefixed, with its exit code and time, then the whole run's wall time against the
budget (docs/development/index.md#time-budget), and the exit status is the first failing lane's. With arguments
(`make test PYTEST_ARGS="-k crd"`) one plain pytest runs them, both tiers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from xml.etree import ElementTree

REPO = Path(__file__).resolve().parents[1]
SUMMARY_START = "short test summary info"
# The budget of a whole `make test` on 2 cores (docs/development/index.md#time-budget): warm, with everything built
# and cached in ~/.cache/tfop; cold, building it all first (the builds print their own times).
WARM_BUDGET = 12 * 60
COLD_BUDGET = 45 * 60
# `make test-all`'s, warm: CI runs it whenever every build is cached (.ci/run), and CI gives a run 90 minutes, so
# half of them, leaving room for lint, a loaded machine and the long tier's growth (measured: 33 minutes).
ALL_BUDGET = 45 * 60


@dataclass
class Lane:
    name: str
    args: list[str]
    nice: int = 0  # added to the lane's niceness, and so to its cluster's processes
    lines: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None
    report: Path | None = None  # pytest's JUnit XML: each test's seconds, for the modules' times at the end
    started: float = 0.0
    ended: float = 0.0

    def start(self, reports: Path | None = None) -> None:
        self.started = time.monotonic()
        niced = ["nice", "-n", str(self.nice)] if self.nice else []
        junit: list[str] = []
        if reports is not None:
            self.report = reports / f"{self.name}.xml"
            junit = [f"--junitxml={self.report}"]
        self.process = subprocess.Popen([*niced, sys.executable, "-m", "pytest", *self.args, *junit], cwd=REPO,
                                        text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1,
                                        start_new_session=True)  # a Ctrl-C reaches it once, from forward()

    def stream(self, lock: threading.Lock) -> None:
        assert self.process and self.process.stdout
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            with lock:
                print(f"[{self.name}] {line}", end="", flush=True)
        self.process.wait()
        self.ended = time.monotonic()

    @property
    def returncode(self) -> int:
        assert self.process and self.process.returncode is not None
        return self.process.returncode

    def summary(self) -> list[str]:
        """From pytest's short test summary (the failures and errors) to its last line; the last line alone when
        nothing failed."""
        start = next((i for i, line in enumerate(self.lines) if SUMMARY_START in line), None)
        return self.lines[start:] if start is not None else self.lines[-1:]


def module_times(report: Path) -> list[tuple[str, float]]:
    """Seconds per test module from a lane's JUnit XML, longest first. A test's time holds its setup and teardown,
    so a module's first test carries the session's cluster start-up: the lane's cost as it was paid."""
    totals: dict[str, float] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        parts = case.get("classname", "").split(".")
        module = "/".join(part for part in parts if not part.startswith("Test")) + ".py"
        totals[module] = totals.get(module, 0.0) + float(case.get("time", "0"))
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))


def modules_line(lane: str, times: list[tuple[str, float]], shown: int = 6) -> str:
    """A lane's costliest modules, so that moving one between lanes, or into the long tier, is decided on figures."""
    named = ", ".join(f"{Path(module).stem} {seconds:.0f}" for module, seconds in times[:shown])
    rest = sum(seconds for _, seconds in times[shown:])
    return f"==== {lane}'s modules, seconds: {named}; {len(times[shown:])} others {rest:.0f} ===="


# The integration modules that mostly wait, about half of the integration suite's time: the co-scheduler's and
# Kueue's controllers, Prometheus' scrapes and rule evaluation, a token re-read once a minute, a 2,000-replica job,
# the chaos soak's short form (leader takeovers waiting out the Lease, apiserver restarts).
WAITING_MODULES = tuple(f"test/integration/{name}.py" for name in (
    "test_gang", "test_big_job", "test_alerts_fire", "test_metrics_scraped", "test_credentials", "test_multikueue",
    "test_kueue", "test_kueue_without_tfjob", "test_chaos"))

# A fourth lane takes the costliest of the rest (helm and kubectl renders of every install variant, the fuzzed
# jobs, the HPA, the webhook's certificates, the Go operator's takeover, TensorFlow's cluster specs): with them the
# unit+integration lane took 58 minutes under load where the others took 19-23.
SECOND_MODULES = tuple(f"test/integration/{name}.py" for name in (
    "test_deploy", "test_deploy_webhook", "test_fuzz", "test_autoscaler", "test_local_webhook", "test_takeover",
    "test_tensorflow", "test_training_examples", "test_python_sdk", "test_operations", "test_pod_troubles"))

# The e2e modules that mostly wait (node loss: the node lifecycle controller's 50 s grace, several times over; the
# evaluator's final evaluation) run first, beside the busy integration lanes; the modules whose TensorFlow computes
# (the examples) then get the cores those lanes leave when they end. In alphabetical order the node-loss module ran
# last, and the machine sat 72% idle for the last five and a half minutes.
E2E_WAITING_FIRST = ("test/e2e/test_node_loss_on_real_nodes.py", "test/e2e/test_evaluator_on_real_nodes.py")


def e2e_modules() -> list[str]:
    rest = sorted(str(path.relative_to(REPO)) for path in (REPO / "test" / "e2e").glob("test_*.py"))
    return [*E2E_WAITING_FIRST, *(module for module in rest if module not in E2E_WAITING_FIRST)]


def tier_lanes(everything: bool) -> tuple[Lane, ...]:
    """The four lanes, of the gate (`long` tests deselected) or of everything.

    --durations: each lane names its slowest tests, where the suite's wall time goes. The e2e lane is the longest,
    and its TensorFlow jobs compute where the others mostly wait: the integration lanes run niced, so they take the
    cores e2e leaves idle rather than half of those it needs."""
    tier = "" if everything else " and not long"
    return (
        Lane("e2e", ["-m", f"e2e{tier}", "--durations=10", *e2e_modules()]),
        Lane("unit+integration", ["-m", f"(unit or integration){tier}", "--durations=10", "test/unit",
                                  "test/integration",
                                  *(f"--ignore={module}" for module in (*WAITING_MODULES, *SECOND_MODULES))],
             nice=10),
        Lane("integration-2", ["-m", f"integration{tier}", "--durations=10", *SECOND_MODULES], nice=10),
        Lane("integration-waits", ["-m", f"integration{tier}", "--durations=10", *WAITING_MODULES], nice=10),
    )


def minutes(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


def budget_line(wall: float, in_lanes: float, everything: bool = False) -> str:
    """The run's wall time (from make's start, builds included) against the budget, so a reader sees at once
    whether it fits: the gate's, or `make test-all`'s, which CI runs warm."""
    spent = f"{minutes(wall)} wall ({minutes(wall - in_lanes)} building, {minutes(in_lanes)} the lanes)"
    if everything:
        verdict = "within it" if wall <= ALL_BUDGET else "OVER it: CI would have too little room left"
        return (f"==== make test-all: {spent}; budget on 2 cores, warm (CI runs it when the builds are cached, "
                f"within its 90 minutes): {minutes(ALL_BUDGET)}: {verdict} ====")
    verdict = ("within the warm budget" if wall <= WARM_BUDGET else
               "OVER the warm budget; within the cold one only if this run built things" if wall <= COLD_BUDGET else
               "OVER even the cold budget")
    return (f"==== make test: {spent}; "
            f"budget on 2 cores: warm {minutes(WARM_BUDGET)}, cold {minutes(COLD_BUDGET)}: {verdict} ====")


@dataclass(frozen=True)
class CpuTimes:
    """The machine's CPU time since boot, from /proc/stat's first line, in core-seconds."""
    busy: float
    total: float

    @staticmethod
    def now(stat: Path = Path("/proc/stat")) -> CpuTimes:
        # user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
        ticks = [int(field) for field in stat.read_text().splitlines()[0].split()[1:9]]
        per_second = os.sysconf("SC_CLK_TCK")
        idle = ticks[3] + ticks[4]
        return CpuTimes((sum(ticks) - idle) / per_second, sum(ticks) / per_second)


def cpu_line(before: CpuTimes, after: CpuTimes, cores: int) -> str:
    """How busy the machine was while the lanes ran: at full use the suite's work is CPU-bound, and only doing less
    of it, never more parallelism, shortens the run. Anything else running on the machine counts too."""
    busy, total = after.busy - before.busy, after.total - before.total
    share = busy / total if total else 0.0
    return (f"==== CPU while the lanes ran: {busy:.0f} core-seconds busy of {total:.0f} ({share:.0%}); on {cores} "
            f"cores that work alone takes at least {minutes(busy / cores)} ====")


def run_lanes(lanes: tuple[Lane, ...], everything: bool = False) -> int:
    # The Makefile passes when make started (epoch seconds); run by hand, the run starts here.
    started = float(os.environ.get("TFOP_MAKE_STARTED") or time.time())
    began = time.monotonic()
    lock = threading.Lock()

    def forward(_signum: int, _frame: FrameType | None) -> None:
        # As SIGINT, whatever came: pytest turns it into KeyboardInterrupt and tears its cluster down, where a
        # SIGTERM would end it with the cluster's processes left running.
        for lane in lanes:
            if lane.process and lane.process.poll() is None:
                lane.process.send_signal(signal.SIGINT)

    # Installed before the lanes start, so that they start with SIGINT at its default: a shell that runs a job in
    # the background (CI's, nohup) ignores SIGINT, an ignored signal stays ignored across exec, and Python then
    # never turns it into KeyboardInterrupt, so the lanes would run on and keep their clusters.
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    cpu_before = CpuTimes.now()
    reports = Path(tempfile.mkdtemp(prefix="tfop-lanes-"))
    for lane in lanes:
        lane.start(reports)
    readers = [threading.Thread(target=lane.stream, args=(lock,), daemon=True) for lane in lanes]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    print()
    for lane in lanes:
        print(f"==== {lane.name}: exit {lane.returncode} after {lane.ended - lane.started:.0f} s ====")
        print("\n".join(lane.summary()))
    for lane in lanes:
        if lane.report and lane.report.is_file():
            try:
                print(modules_line(lane.name, module_times(lane.report)))
            except ElementTree.ParseError as error:  # a lane killed while pytest wrote it
                print(f"==== {lane.name}'s modules: its report is unreadable ({error}) ====")
        if lane.report:
            lane.report.unlink(missing_ok=True)
    reports.rmdir()
    print(budget_line(max(time.time() - started, time.monotonic() - began), time.monotonic() - began, everything))
    print(cpu_line(cpu_before, CpuTimes.now(), os.cpu_count() or 1))
    return next((lane.returncode for lane in lanes if lane.returncode), 0)


def main(argv: list[str]) -> int:
    if argv == ["--all"]:
        return run_lanes(tier_lanes(everything=True), everything=True)
    if argv:
        return subprocess.call([sys.executable, "-m", "pytest", *argv], cwd=REPO)
    return run_lanes(tier_lanes(everything=False))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
