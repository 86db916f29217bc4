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


def test_the_cpu_line_says_how_busy_the_lanes_kept_the_machine() -> None:
    import run_tests

    line = run_tests.cpu_line(run_tests.CpuTimes(100.0, 1000.0), run_tests.CpuTimes(1540.0, 2600.0), 2)
    assert line == ("==== CPU while the lanes ran: 1440 core-seconds busy of 1600 (90%); on 2 cores that work alone "
                    "takes at least 12m00s ====")


def test_the_budget_line_judges_the_gate_and_test_all() -> None:
    import run_tests

    assert run_tests.budget_line(700.0, 690.0) == (
        "==== make test: 11m40s wall (0m10s building, 11m30s the lanes); budget on 2 cores: warm 12m00s, cold "
        "45m00s: within the warm budget ====")
    assert run_tests.budget_line(1989.0, 1979.0, everything=True) == (
        "==== make test-all: 33m09s wall (0m10s building, 32m59s the lanes); budget on 2 cores, warm (CI runs it "
        "when the builds are cached, within its 90 minutes): 45m00s: within it ====")
    assert run_tests.budget_line(2760.0, 2750.0, everything=True) == (
        "==== make test-all: 46m00s wall (0m10s building, 45m50s the lanes); budget on 2 cores, warm (CI runs it "
        "when the builds are cached, within its 90 minutes): 45m00s: OVER it: CI would have too little room left "
        "====")


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
