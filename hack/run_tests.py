"""`make test` and `make test-all`: the builds the tests run on, and the suite as four pytest processes at once (five
for test-all), each with its own local cluster; each lane starts as soon as the builds it needs first are done
(hack/build_schedule.py), so on a cold machine most of the suite runs while Kueue and the co-scheduler build.

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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from xml.etree import ElementTree

from build_schedule import Build, Schedule, clock

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
    needs: tuple[str, ...] = ()  # the builds (make targets) it cannot start without; the rest its fixtures ask for
    lines: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None
    report: Path | None = None  # pytest's JUnit XML: each test's seconds, for the modules' times at the end
    started: float = 0.0
    ended: float = 0.0

    def start(self) -> None:
        self.started = time.monotonic()
        niced = ["nice", "-n", str(self.nice)] if self.nice else []
        junit = [f"--junitxml={self.report}"] if self.report else []
        self.process = subprocess.Popen([*niced, sys.executable, "-m", "pytest", *self.args, *junit], cwd=REPO,
                                        text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1,
                                        start_new_session=True)  # a Ctrl-C reaches it once, from forward()

    def stream(self, write: Callable[[str], None]) -> None:
        assert self.process and self.process.stdout
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            write(f"[{self.name}] {line.rstrip(chr(10))}")
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
    "test_multikueue_own", "test_kueue", "test_kueue_without_tfjob", "test_chaos"))

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


# What the suite runs on, in the order the schedule starts them (hack/build_schedule.py, BUILD_JOBS at once): the
# control plane first, at full priority, as every lane needs it; the node's kubelet right after it, as it reuses the
# control plane's compiled packages; the images and virtualenvs, which the e2e lanes need to start; then the rest,
# niced so that they take what the lanes leave, cheap ones first. metrics-server only the long tier uses: make
# test leaves it out (LONG_ONLY_BUILDS), as a cold machine's CPU is the gate's budget (a cold run's 8,061 core-s);
# make test-all builds it, so a machine a session ran test-all on is one `make builds-cached` finds complete.
BACKGROUND_NICE = 15
BUILD_ORDER: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("controlplane", (), 0),
    ("node", ("controlplane",), 0),
    ("test-artifacts", (), 0),
    ("helm", (), BACKGROUND_NICE),
    ("prometheus", (), BACKGROUND_NICE),
    ("training-operator", (), BACKGROUND_NICE),
    ("browser", (), BACKGROUND_NICE),
    ("coscheduler", (), BACKGROUND_NICE),
    ("kueue", (), BACKGROUND_NICE),
    ("kube-router", (), BACKGROUND_NICE),
    ("metrics-server", (), BACKGROUND_NICE),
)
LONG_ONLY_BUILDS = ("metrics-server",)
E2E_NEEDS = ("controlplane", "node", "test-artifacts")


def suite_builds(everything: bool = True) -> tuple[Build, ...]:
    """The builds of BUILD_ORDER, those only the long tier needs (LONG_ONLY_BUILDS) left out unless `everything`."""
    return tuple(Build(name, ("make", "-C", str(REPO), "--no-print-directory", name), after, nice)
                 for name, after, nice in BUILD_ORDER if everything or name not in LONG_ONLY_BUILDS)


# The modules whose fixtures need a build no lane waits for: each lane runs them last, in the order of BUILD_ORDER,
# so that on a cold machine they come when their build is likeliest done (a fixture reaching one still building
# waits for it: the per-build lock). The others run in their lane's own order first.
LATER_NEEDS: dict[str, str] = {
    **{f"test/integration/{name}.py": "helm" for name in (
        "test_alerts", "test_big_job", "test_deploy", "test_deploy_webhook", "test_metrics_auth")},
    **{f"test/integration/{name}.py": "prometheus" for name in ("test_alerts_fire",)},
    **{f"test/integration/{name}.py": "training-operator" for name in (
        "test_metrics_scraped", "test_operations", "test_takeover")},
    **{f"test/integration/{name}.py": "test-artifacts" for name in (
        "test_tensorflow", "test_training_examples", "test_python_sdk")},
    "test/integration/test_ui_browser.py": "browser",
    "test/e2e/test_ui_on_real_nodes.py": "browser",
    **{f"test/integration/{name}.py": "coscheduler" for name in ("test_gang", "test_gang_resize")},
    **{f"test/integration/{name}.py": "kueue" for name in (
        "test_kueue", "test_kueue_keys", "test_kueue_own", "test_kueue_without_tfjob", "test_multikueue",
        "test_multikueue_own")},
    "test/e2e/test_kueue_preemption_on_real_nodes.py": "kueue",
    "test/e2e/test_network_policy_on_real_nodes.py": "kube-router",
    "test/e2e/test_resource_metrics_on_real_nodes.py": "metrics-server",
}


def later_last(modules: list[str]) -> list[str]:
    """The modules in their order, those of LATER_NEEDS moved to the end in the order of their builds."""
    rank = {name: position for position, (name, _, _) in enumerate(BUILD_ORDER)}
    return sorted(modules, key=lambda module: rank[LATER_NEEDS[module]] + 1 if module in LATER_NEEDS else 0)


# In `make test-all` the e2e lane was the longest by far (a CI run: node loss 820 s, scaling 369 s, then the
# evaluator 120 s, the examples 101 s, ...: over 25 of test-all's 33 minutes), ending alone for its last 12
# minutes. Those two scenarios, every test of them long, take a lane of their own there, with its own cluster and
# real nodes; node loss mostly waits out the node lifecycle grace, so the two lanes share the cores well. The
# disruptions (a drain, a preemption, a spot reclaim, each minutes of TensorFlow) join them: the e2e lane has
# the rest of the long tier's TensorFlow, and would end alone again. So does the Keras job preempted through Kueue,
# the disruptions' scenario with Kueue as the disruption (it runs last, its Kueue build the latest).
E2E_LONG_MODULES = ("test/e2e/test_node_loss_on_real_nodes.py", "test/e2e/test_scaling_on_real_nodes.py",
                    "test/e2e/test_disruption_on_real_nodes.py", "test/e2e/test_kueue_preemption_on_real_nodes.py")


def modules_of(suite: str) -> list[str]:
    return sorted(str(path.relative_to(REPO)) for path in (REPO / "test" / suite).glob("test_*.py"))


def e2e_modules(everything: bool = False) -> list[str]:
    rest = [module for module in modules_of("e2e") if module not in E2E_WAITING_FIRST]
    waiting = [module for module in E2E_WAITING_FIRST if not (everything and module in E2E_LONG_MODULES)]
    rest = [module for module in rest if not (everything and module in E2E_LONG_MODULES)]
    return later_last([*waiting, *rest])


def tier_lanes(everything: bool) -> tuple[Lane, ...]:
    """The lanes, of the gate (`long` tests deselected) or of everything, each with the builds it needs to start.

    --durations: each lane names its slowest tests, where the suite's wall time goes. The e2e lane is the longest,
    and its TensorFlow jobs compute where the others mostly wait: the integration lanes run niced, so they take the
    cores e2e leaves idle rather than half of those it needs."""
    tier = "" if everything else " and not long"
    firsts = [module for module in modules_of("integration") if module not in (*WAITING_MODULES, *SECOND_MODULES)]
    lanes = [
        Lane("e2e", ["-m", f"e2e{tier}", "--durations=10", *e2e_modules(everything)], needs=E2E_NEEDS),
        Lane("unit+integration", ["-m", f"(unit or integration){tier}", "--durations=10", "test/unit",
                                  *later_last(firsts)], nice=10, needs=("controlplane",)),
        Lane("integration-2", ["-m", f"integration{tier}", "--durations=10", *later_last(list(SECOND_MODULES))],
             nice=10, needs=("controlplane",)),
        Lane("integration-waits", ["-m", f"integration{tier}", "--durations=10",
                                   *later_last(list(WAITING_MODULES))], nice=10, needs=("controlplane",)),
    ]
    if everything:
        lanes.insert(1, Lane("e2e-long", ["-m", "e2e", "--durations=10", *later_last(list(E2E_LONG_MODULES))],
                             needs=E2E_NEEDS))
    return tuple(lanes)


def budget_line(wall: float, lanes_from: float, builds_until: float, everything: bool = False) -> str:
    """The run's wall time (from make's start, builds included) against the budget, so a reader sees at once
    whether it fits: the gate's, or `make test-all`'s, which CI runs warm. When the first lane started and the last
    build ended say how much of it building took, as the two overlap."""
    spent = (f"{clock(wall)} wall (the first lane started {clock(lanes_from)} in, the last build ended "
             f"{clock(builds_until)} in)")
    if everything:
        verdict = "within it" if wall <= ALL_BUDGET else "OVER it: CI would have too little room left"
        return (f"==== make test-all: {spent}; budget on 2 cores, warm (CI runs it when the builds are cached, "
                f"within its 90 minutes): {clock(ALL_BUDGET)}: {verdict} ====")
    verdict = ("within the warm budget" if wall <= WARM_BUDGET else
               "OVER the warm budget; within the cold one only if this run built things" if wall <= COLD_BUDGET else
               "OVER even the cold budget")
    return (f"==== make test: {spent}; "
            f"budget on 2 cores: warm {clock(WARM_BUDGET)}, cold {clock(COLD_BUDGET)}: {verdict} ====")


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
    """How busy the machine was while the builds and lanes ran: at full use the work is CPU-bound, and only doing
    less of it, never more parallelism, shortens the run. Anything else running on the machine counts too."""
    busy, total = after.busy - before.busy, after.total - before.total
    share = busy / total if total else 0.0
    return (f"==== CPU while the builds and lanes ran: {busy:.0f} core-seconds busy of {total:.0f} ({share:.0%}); on "
            f"{cores} cores that work alone takes at least {clock(busy / cores)} ====")


def build_jobs() -> int:
    """BUILD_JOBS from make (3): how many builds run at once."""
    try:
        return max(1, int(os.environ.get("BUILD_JOBS") or 3))
    except ValueError:
        return 3


def run_lanes(lanes: tuple[Lane, ...], everything: bool = False, builds: tuple[Build, ...] = ()) -> int:
    """Builds `builds` and runs `lanes`, each lane once the builds it needs are done; prints the summaries and the
    budget line; returns the first failing lane's exit code, else a failed build's."""
    # The Makefile passes when make started (epoch seconds); run by hand, the run starts here.
    started = float(os.environ.get("TFOP_MAKE_STARTED") or time.time())
    began = time.monotonic()
    schedule = Schedule(builds, lanes, build_jobs())

    def forward(_signum: int, _frame: FrameType | None) -> None:
        # As SIGINT, whatever came: pytest turns it into KeyboardInterrupt and tears its cluster down, where a
        # SIGTERM would end it with the cluster's processes left running. Nothing waiting starts after it.
        schedule.stop()
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
        lane.report = reports / f"{lane.name}.xml"
    outcome = schedule.run()
    print()
    for lane in lanes:
        if lane.name in outcome.not_run:
            print(f"==== {lane.name}: not run: {outcome.not_run[lane.name]} ====")
            continue
        print(f"==== {lane.name}: exit {lane.returncode} after {lane.ended - lane.started:.0f} s "
              f"(started {clock(outcome.lane_started[lane.name])} in) ====")
        print("\n".join(lane.summary()))
    if outcome.build_seconds:
        built = (f"{name} {seconds:.0f}" + (" FAILED" if name in outcome.failed_builds else "")
                 for name, seconds in outcome.build_seconds.items())
        print(f"==== builds, seconds each: {', '.join(built)} ====")
    for lane in lanes:
        if lane.report and lane.report.is_file():
            try:
                print(modules_line(lane.name, module_times(lane.report)))
            except ElementTree.ParseError as error:  # a lane killed while pytest wrote it
                print(f"==== {lane.name}'s modules: its report is unreadable ({error}) ====")
        if lane.report:
            lane.report.unlink(missing_ok=True)
    reports.rmdir()
    offset = max(0.0, (time.time() - started) - (time.monotonic() - began))  # make's start to the schedule's
    lanes_from = min(outcome.lane_started.values(), default=0.0) + offset
    print(budget_line(max(time.time() - started, time.monotonic() - began), lanes_from,
                      outcome.builds_ended + offset, everything))
    print(cpu_line(cpu_before, CpuTimes.now(), os.cpu_count() or 1))
    failed_lanes = [lane.returncode for lane in lanes if lane.name not in outcome.not_run and lane.returncode]
    return next(iter(failed_lanes), 1 if outcome.not_run or outcome.failed_builds else 0)


def main(argv: list[str]) -> int:
    if argv == ["--all"]:
        return run_lanes(tier_lanes(everything=True), everything=True, builds=suite_builds())
    if argv:
        # One plain pytest (make test PYTEST_ARGS=...): whatever it selects may need any build, so all come first.
        schedule = Schedule(suite_builds(), (), build_jobs())
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda _signum, _frame: schedule.stop())
        outcome = schedule.run()
        if outcome.failed_builds:
            return 1
        return subprocess.call([sys.executable, "-m", "pytest", *argv], cwd=REPO)
    return run_lanes(tier_lanes(everything=False), builds=suite_builds(everything=False))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
