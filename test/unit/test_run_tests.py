"""`make test`'s runner (hack/run_tests.py) stops its lanes cleanly on Ctrl-C or SIGTERM, even when it was started
the way CI and nohup start jobs: in the background, with SIGINT ignored, which every child inherits."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from support.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]


def test_a_lane_started_with_sigint_ignored_still_stops_on_sigint(tmp_path: Path) -> None:
    (tmp_path / "test_waits.py").write_text(textwrap.dedent("""
        import os
        import signal

        def test_waits_for_ever():
            with open("lane.pid", "w") as pid:
                pid.write(str(os.getpid()))
            print("waiting", flush=True)
            signal.pause()  # until a signal: the runner's SIGINT, or the test's SIGKILL if that never comes
        """))
    runner = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / "hack")!r})
        import run_tests
        lane = run_tests.Lane("only", ["-s", "-p", "no:cacheprovider", "--rootdir", {str(tmp_path)!r},
                                       {str(tmp_path / "test_waits.py")!r}])
        sys.exit(run_tests.run_lanes((lane,)))
        """)
    output: list[str] = []
    # As a background job of a non-interactive shell: SIGINT ignored from the start.
    process = subprocess.Popen(["sh", "-c", 'trap "" INT; exec "$0" -c "$1"', sys.executable, runner],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout
        for line in process.stdout:  # up to the lane's first test output: its pytest is then running the test
            output.append(line)
            if "waiting" in line:
                break
        process.send_signal(signal.SIGINT)
        output.extend(process.stdout)
        wait_for(lambda: process.poll() is not None, message="the runner to end after SIGINT")
    finally:
        if process.poll() is None:
            process.kill()
        if (REPO / "lane.pid").exists():  # the lane runs in the repo; a lane left running must not outlive the test
            lane = int((REPO / "lane.pid").read_text())
            (REPO / "lane.pid").unlink()
            with contextlib.suppress(ProcessLookupError):
                os.kill(lane, signal.SIGKILL)
    text = "".join(output)
    assert "KeyboardInterrupt" in text, text
    assert "==== only: exit 2" in text, text
    assert process.returncode == 2


def test_the_machines_cpu_time_is_read_from_proc_stat_in_core_seconds(tmp_path: Path) -> None:
    import run_tests

    ticks = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice, in ticks
    stat.write_text(f"cpu  {3 * ticks} {ticks} {2 * ticks} {10 * ticks} {4 * ticks} 0 0 0 {ticks} 0\n"
                    "cpu0 1 2 3 4 5 6 7 8 9 10\n")
    assert run_tests.CpuTimes.now(stat) == run_tests.CpuTimes(busy=6.0, total=20.0)


def test_the_cpu_line_says_how_busy_the_run_kept_the_machine() -> None:
    import run_tests

    line = run_tests.cpu_line(run_tests.CpuTimes(100.0, 1000.0), run_tests.CpuTimes(1540.0, 2600.0), 2)
    assert line == ("==== CPU while the builds and lanes ran: 1440 core-seconds busy of 1600 (90%); on 2 cores that "
                    "work alone takes at least 12m00s ====")


def test_the_budget_line_judges_the_gate_and_test_all() -> None:
    import run_tests

    assert run_tests.budget_line(700.0, 10.0, 12.0) == (
        "==== make test: 11m40s wall (the first lane started 0m10s in, the last build ended 0m12s in); budget on 2 "
        "cores: warm 12m00s, cold 45m00s: within the warm budget ====")
    assert run_tests.budget_line(2400.0, 1080.0, 2100.0) == (
        "==== make test: 40m00s wall (the first lane started 18m00s in, the last build ended 35m00s in); budget on 2 "
        "cores: warm 12m00s, cold 45m00s: OVER the warm budget; within the cold one only if this run built things "
        "====")
    assert run_tests.budget_line(1989.0, 10.0, 10.0, everything=True) == (
        "==== make test-all: 33m09s wall (the first lane started 0m10s in, the last build ended 0m10s in); budget on "
        "2 cores, warm (CI runs it when the builds are cached, within its 90 minutes): 45m00s: within it ====")
    assert run_tests.budget_line(2760.0, 10.0, 10.0, everything=True) == (
        "==== make test-all: 46m00s wall (the first lane started 0m10s in, the last build ended 0m10s in); budget on "
        "2 cores, warm (CI runs it when the builds are cached, within its 90 minutes): 45m00s: OVER it: CI would "
        "have too little room left ====")


def test_each_lane_ends_with_its_costliest_modules_from_the_junit_report(tmp_path: Path) -> None:
    import run_tests

    report = tmp_path / "lane.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="test.e2e.test_examples_on_real_node" name="test_a" time="370.5" />'
        '<testcase classname="test.e2e.test_examples_on_real_node" name="test_b" time="279.25" />'
        '<testcase classname="test.unit.test_x.TestGroup" name="test_c" time="0.5" />'
        '<testcase classname="test.unit.test_y" name="test_d" time="0.25" />'
        '<testcase classname="test.e2e.test_python_sdk" name="test_e" time="231" />'
        '</testsuite></testsuites>')
    times = run_tests.module_times(report)
    assert times == [("test/e2e/test_examples_on_real_node.py", 649.75), ("test/e2e/test_python_sdk.py", 231.0),
                     ("test/unit/test_x.py", 0.5), ("test/unit/test_y.py", 0.25)]
    assert run_tests.modules_line("e2e", times, shown=2) == (
        "==== e2e's modules, seconds: test_examples_on_real_node 650, test_python_sdk 231; 2 others 1 ====")


def test_the_lanes_need_only_builds_the_schedule_has_and_run_the_late_needs_last() -> None:
    """Each lane starts on builds make test runs, and a module whose fixtures need a late build (Kueue, the
    co-scheduler) comes after every module that needs none, in the order of the builds."""
    import run_tests

    names = [name for name, _, _ in run_tests.BUILD_ORDER]
    assert names[0] == "controlplane"
    for everything in (False, True):
        for lane in run_tests.tier_lanes(everything):
            assert set(lane.needs) <= set(names), lane.name
            modules = [arg for arg in lane.args if arg.endswith(".py")]
            ranks = [names.index(run_tests.LATER_NEEDS[m]) + 1 if m in run_tests.LATER_NEEDS else 0 for m in modules]
            assert ranks == sorted(ranks), (lane.name, modules)
    gate = {lane.name: lane for lane in run_tests.tier_lanes(everything=False)}
    assert gate["integration-waits"].args[-2:] == ["test/integration/test_kueue.py",
                                                   "test/integration/test_kueue_without_tfjob.py"]
    assert "e2e-long" not in gate  # its modules are all long


def test_every_module_runs_in_one_lane_once() -> None:
    import run_tests

    for everything in (False, True):
        listed = [arg for lane in run_tests.tier_lanes(everything) for arg in lane.args if arg.endswith(".py")]
        expected = run_tests.modules_of("integration") + run_tests.modules_of("e2e")
        assert sorted(listed) == sorted(expected), everything
    assert sorted(run_tests.LATER_NEEDS) == sorted(set(run_tests.LATER_NEEDS)) and all(
        (run_tests.REPO / module).is_file() for module in run_tests.LATER_NEEDS)


def test_make_test_all_builds_what_builds_cached_asks_for_and_make_test_what_the_gate_needs() -> None:
    """make test-all's schedule builds every build of the Makefile's TEST_BUILDS (the virtualenv make has made), so a
    machine a session ran it on is one .ci/run's `make builds-cached` finds complete; make test leaves out
    metrics-server, which only long tests' fixtures need."""
    import re

    import run_tests
    from support.tiers import is_long

    makefile = (REPO / "Makefile").read_text()
    listed = re.search(r"^TEST_BUILDS := (.*?[^\\])$", makefile, re.MULTILINE | re.DOTALL)
    assert listed, "no TEST_BUILDS in the Makefile"
    test_builds = set(listed.group(1).replace("\\\n", " ").split()) - {"venv"}
    assert {build.name for build in run_tests.suite_builds()} == test_builds
    assert {build.name for build in run_tests.suite_builds(everything=False)} == test_builds - {"metrics-server"}
    assert all(re.search(rf"^{name}:", makefile, re.MULTILINE) for name in test_builds)
    long_only = [module for module, build in run_tests.LATER_NEEDS.items() if build in run_tests.LONG_ONLY_BUILDS]
    assert long_only == ["test/e2e/test_resource_metrics_on_real_nodes.py"]
    assert all(is_long(module) for module in long_only)
