"""make test's schedule (hack/build_schedule.py): which builds start when, by table; and, with real processes that
wait for each other (never for a length of time), that a lane starts while builds it does not need still run, that
a build and a lane's fixture asking for the same thing build it once, that a failed build stops only what needs it,
and that a silent stretch gets a line."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from build_schedule import Build, BuildState, Schedule, next_builds

LIB = Path(__file__).resolve().parents[2] / "hack" / "lib.sh"

TABLE = (
    Build("controlplane", ("true",)),
    Build("node", ("true",), after=("controlplane",)),
    Build("images", ("true",)),
    Build("kueue", ("true",), nice=15),
)


@pytest.mark.parametrize(("done", "failed", "running", "jobs", "start", "dropped"), [
    # Nothing yet: the first `jobs` that need nothing before them; the node waits for the control plane.
    ((), (), (), 3, ["controlplane", "images", "kueue"], []),
    ((), (), (), 1, ["controlplane"], []),
    # The control plane done: the node takes the slot it left, ahead of the builds behind it.
    (("controlplane",), (), ("images",), 2, ["node"], []),
    (("controlplane",), (), (), 2, ["node", "images"], []),
    # Every slot busy: nothing starts.
    ((), (), ("controlplane", "images"), 2, [], []),
    # The control plane failed: the node is never started, the others go on.
    ((), ("controlplane",), (), 3, ["images", "kueue"], ["node"]),
    # All ended: nothing to do.
    (("controlplane", "node", "images", "kueue"), (), (), 3, [], []),
])
def test_which_builds_start(done: tuple[str, ...], failed: tuple[str, ...], running: tuple[str, ...], jobs: int,
                            start: list[str], dropped: list[str]) -> None:
    state = BuildState(done=set(done), failed=dict.fromkeys(failed, 2), running=set(running))
    starting, never = next_builds(TABLE, state, jobs)
    assert ([build.name for build in starting], [build.name for build in never]) == (start, dropped)


@dataclass
class ShellLane:
    """A lane as the schedule sees one (hack/run_tests.py's Lane runs pytest): a shell command."""

    name: str
    needs: tuple[str, ...]
    command: str
    cwd: Path
    lines: list[str] = field(default_factory=list)
    process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(["bash", "-c", self.command], cwd=self.cwd, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)

    def stream(self, write: Callable[[str], None]) -> None:
        assert self.process and self.process.stdout
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            write(f"[{self.name}] {line.rstrip()}")
        self.process.wait()


def shell(command: str, cwd: Path | None = None) -> tuple[str, ...]:
    return ("bash", "-c", f"cd {cwd} && {command}" if cwd else command)


def wait_for_file(name: str) -> str:
    return f"until [ -e {name} ]; do sleep 0.05; done"


def test_a_lane_starts_when_its_builds_are_done_while_the_others_still_build(tmp_path: Path) -> None:
    """The slow build ends only once the lane has run, so the lane can only have run while it was building; the
    lane checks that what it needs was done when it started."""
    lines: list[str] = []
    builds = (Build("controlplane", shell("touch controlplane.done", tmp_path), ()),
              Build("kueue", shell(f"{wait_for_file('lane.ran')}; touch kueue.done", tmp_path), nice=15))
    lane = ShellLane("integration", ("controlplane",),
                     "test -e controlplane.done && test ! -e kueue.done && echo 'needs met, kueue building' "
                     "&& touch lane.ran", tmp_path)
    outcome = Schedule(builds, (lane,), jobs=2, write=lines.append).run()
    assert lane.lines == ["needs met, kueue building"], lines
    assert lane.process and lane.process.returncode == 0
    assert (outcome.failed_builds, outcome.not_run, sorted(outcome.build_seconds)) == ({}, {},
                                                                                      ["controlplane", "kueue"])
    assert any(line.startswith("==== build kueue: started") and "(nice 15)" in line for line in lines), lines
    assert "[integration] needs met, kueue building" in lines
    # Its start is announced before kueue's end.
    started = next(n for n, line in enumerate(lines) if line.startswith("==== integration: started"))
    assert started < next(n for n, line in enumerate(lines) if line.startswith("==== build kueue: done")), lines


def test_at_most_jobs_builds_run_at_once(tmp_path: Path) -> None:
    """With one job, each build finds the one before it ended."""
    builds = (Build("a", shell("touch a.done", tmp_path)),
              Build("b", shell("test -e a.done && touch b.done", tmp_path)),
              Build("c", shell("test -e b.done", tmp_path)))
    outcome = Schedule(builds, (), jobs=1, write=lambda line: None).run()
    assert outcome.failed_builds == {} and sorted(outcome.build_seconds) == ["a", "b", "c"]


def test_a_lane_and_the_schedule_asking_for_one_build_build_it_once(tmp_path: Path) -> None:
    """The per-build lock (hack/lib.sh): whichever comes first builds, the other waits and finds it cached."""
    script = tmp_path / "build-thing.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/usr/bin/env bash
        set -euo pipefail
        LOG_NAME=build-thing
        source {LIB}
        if [[ -f "${{CACHE_ROOT}}/thing" ]]; then echo cached; exit 0; fi
        building "the thing"
        echo "start" >>{tmp_path}/builds.log
        until grep -qs "waiting: another process" {tmp_path}/callers.err; do sleep 0.05; done
        touch "${{CACHE_ROOT}}/thing"
        echo built
        """))
    # The build goes on only once the other caller says it waits for it, so that one finds it in progress.
    call = f"TFOP_CACHE_DIR={tmp_path}/cache bash {script} 2> >(tee -a {tmp_path}/callers.err >&2)"
    builds = (Build("thing", shell(call)),)
    lane = ShellLane("lane", (), call, tmp_path)
    lines: list[str] = []
    outcome = Schedule(builds, (lane,), jobs=1, write=lines.append).run()
    assert outcome.failed_builds == {}, lines
    assert (tmp_path / "builds.log").read_text() == "start\n", lines
    assert any("waiting: another process is building the thing" in line for line in lines), lines
    answers = [line.rsplit("] ", 1)[-1] for line in lines]
    assert sorted(answer for answer in answers if answer in ("built", "cached")) == ["built", "cached"], lines


def test_a_failed_build_stops_only_what_needs_it(tmp_path: Path) -> None:
    builds = (Build("controlplane", shell("echo broken; exit 2")),
              Build("node", shell("true"), after=("controlplane",)),
              Build("helm", shell("true")))
    needing = ShellLane("integration", ("controlplane",), "echo ran", tmp_path)
    free = ShellLane("unit", ("helm",), "echo ran", tmp_path)
    lines: list[str] = []
    outcome = Schedule(builds, (needing, free), jobs=3, write=lines.append).run()
    assert outcome.failed_builds == {"controlplane": 2, "node": -1}
    assert outcome.not_run == {"integration": "the build controlplane failed"}
    assert needing.process is None and free.lines == ["ran"]
    assert "==== build controlplane: FAILED (exit 2) after 0m00s ====" in lines
    assert "==== build node: not started, as controlplane failed ====" in lines
    assert "==== integration: not run: the build controlplane failed ====" in lines


def test_a_silent_stretch_gets_a_line_naming_what_runs(tmp_path: Path) -> None:
    """The build says nothing until the schedule has printed a status line (the write below marks it)."""
    lines: list[str] = []

    def write(line: str) -> None:
        lines.append(line)
        if "in: building" in line:
            (tmp_path / "status.seen").touch()

    builds = (Build("kueue", shell(wait_for_file(str(tmp_path / "status.seen")))),)
    lane = ShellLane("e2e", ("kueue",), "echo ran", tmp_path)
    Schedule(builds, (lane,), jobs=1, write=write, heartbeat=0.2).run()
    status = next(line for line in lines if "in: building" in line)
    assert "building kueue (0m0" in status and "e2e waits for kueue" in status, status
    assert lane.lines == ["ran"]


def test_a_lane_needing_a_build_the_schedule_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match=r"lane e2e needs builds the schedule does not have: \['node'\]"):
        Schedule((Build("controlplane", ("true",)),), (ShellLane("e2e", ("node",), "true", Path()),), jobs=1)


def test_a_build_runs_in_a_process_group_of_its_own_within_the_schedules_session(tmp_path: Path) -> None:
    """Its group is what stop() ends; the session is the schedule's, so that a niced build's nice value weighs
    against the other builds' (with autogroup scheduling, CPU is shared between sessions before nice counts)."""
    probe = "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"
    builds = (Build("niced", ("python3", "-c", probe), nice=15),)
    lines: list[str] = []
    Schedule(builds, (), jobs=1, write=lines.append).run()
    pid, group, session = next(map(int, line.split()) for line in lines if line[:1].isdigit())
    assert group == pid, "its own process group"
    assert session == os.getsid(0), "the schedule's session"
