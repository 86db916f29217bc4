"""`make test`'s schedule: the builds the tests run on, a few at once, and each lane of tests started as soon as the
builds it needs first are done, while the others go on building.

A cold run used to build everything (49 minutes on a loaded 2-core machine), then start the lanes. But the lanes
mostly wait (for controllers, for TensorFlow's peers, for a node's grace), and most of them need only the control
plane to begin: so the control plane is built first, at full priority, the rest niced beside it, and a lane starts
once what it needs first is built. What a lane needs later (Kueue, the co-scheduler, Prometheus) its fixtures ask
for as they always did; the per-build lock (`build_lock` in hack/lib.sh) makes such a fixture wait for the build in
progress here rather than build it again, and a cached build answers at once. The lanes' own modules are ordered
so that those needing the late builds come last (hack/run_tests.py).

`Schedule.run` is the loop; `next_builds` decides, purely, what to start.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

# Nothing printed for this long, the schedule says what runs: the budget asks for a line at least every 30 s, and a
# lane's fixture waiting for a build in progress is silent.
HEARTBEAT = 20.0


@dataclass(frozen=True)
class Build:
    """One build the tests run on: a make target (or, in the schedule's own tests, any command)."""

    name: str
    command: tuple[str, ...]
    after: tuple[str, ...] = ()  # builds that must end first (the node's kubelet reuses the control plane's objects)
    nice: int = 0  # added to the build's niceness: the ones no lane waits on to start yield to those some do


class LaneProcess(Protocol):
    """What the schedule needs of a lane (hack/run_tests.py's Lane): its name, the builds it needs before it can
    start, and a way to start it and to hand each of its lines to `write` until it ends."""

    name: str
    needs: tuple[str, ...]

    def start(self) -> None: ...

    def stream(self, write: Callable[[str], None]) -> None: ...


@dataclass
class BuildState:
    """What the schedule knows of the builds: which ended well, which failed (with their exit codes), which run."""

    done: set[str] = field(default_factory=set)
    failed: dict[str, int] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)

    def ended(self, name: str) -> bool:
        return name in self.done or name in self.failed


def next_builds(builds: Sequence[Build], state: BuildState, jobs: int) -> tuple[list[Build], list[Build]]:
    """(the builds to start now, the builds never to start because one they come after failed), in table order:
    at most `jobs` running at once, each only once the builds it comes after are done. A build that waits for
    another does not hold up the ones behind it, and takes the first free slot when it can go (so the node, after
    the control plane, gets the slot the control plane leaves)."""
    start: list[Build] = []
    dropped: list[Build] = []
    free = jobs - len(state.running)
    for build in builds:
        if build.name in state.running or state.ended(build.name):
            continue
        if any(before in state.failed for before in build.after):
            dropped.append(build)
        elif free > 0 and all(before in state.done for before in build.after):
            start.append(build)
            free -= 1
    return start, dropped


def clock(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


@dataclass
class Outcome:
    """How the schedule went: each build's seconds and exit code, when each lane started and why one never did."""

    build_seconds: dict[str, float] = field(default_factory=dict)
    failed_builds: dict[str, int] = field(default_factory=dict)
    lane_started: dict[str, float] = field(default_factory=dict)  # seconds after the schedule began
    not_run: dict[str, str] = field(default_factory=dict)  # lane -> why
    builds_ended: float = 0.0  # seconds after the schedule began that the last build ended


class Schedule:
    def __init__(self, builds: Sequence[Build], lanes: Sequence[LaneProcess], jobs: int,
                 write: Callable[[str], None] = lambda line: print(line, flush=True),
                 heartbeat: float = HEARTBEAT) -> None:
        names = {build.name for build in builds}
        for lane in lanes:
            missing = set(lane.needs) - names
            if missing:
                raise ValueError(f"lane {lane.name} needs builds the schedule does not have: {sorted(missing)}")
        self.builds = list(builds)
        self.lanes = list(lanes)
        self.jobs = max(1, jobs)
        self.heartbeat = heartbeat
        self.lock = threading.Lock()  # one line at a time from every build and lane
        self._write = write
        self._last_line = time.monotonic()
        self._events: queue.Queue[tuple[str, str, int]] = queue.Queue()
        self._stopping = threading.Event()
        self._builds: dict[str, subprocess.Popen[str]] = {}

    def stop(self) -> None:
        """Start nothing more and end the running builds (the caller stops the lanes, which must tear their
        clusters down); run() returns once everything has ended."""
        self._stopping.set()
        for process in list(self._builds.values()):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)

    def write(self, line: str) -> None:
        with self.lock:
            self._write(line)
            self._last_line = time.monotonic()

    def _run_build(self, build: Build) -> None:
        niced = ("nice", "-n", str(build.nice)) if build.nice else ()
        # A process group of its own, so that stop() ends the whole build (make, its script, go) and nothing else;
        # not a session of its own: with autogroup scheduling (Debian's kernels: sched_autogroup_enabled) the CPU
        # is shared between sessions first, and a nice value weighs only within its session, so the builds niced
        # to yield to the control plane's each took as much CPU as it did when each had a session (a cold run:
        # the control plane's build 45 min instead of the 26 it took when it shared with fewer).
        process = subprocess.Popen([*niced, *build.command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, bufsize=1, process_group=0)
        self._builds[build.name] = process
        if self._stopping.is_set():  # stop() came between the decision and the start
            os.killpg(process.pid, signal.SIGTERM)
        assert process.stdout
        for line in process.stdout:
            self.write(line.rstrip("\n"))
        code = process.wait()
        del self._builds[build.name]
        self._events.put(("build", build.name, code))

    def _run_lane(self, lane: LaneProcess) -> None:
        lane.stream(self.write)
        self._events.put(("lane", lane.name, 0))

    def run(self) -> Outcome:
        """Runs every build and every lane it can; returns once all have ended (a lane whose first builds failed
        is not started, and says so)."""
        began = time.monotonic()
        state = BuildState()
        started: dict[str, float] = {}
        outcome = Outcome()
        waiting = list(self.lanes)
        running_lanes: dict[str, float] = {}
        while True:
            start, dropped = next_builds(self.builds, state, self.jobs)
            if self._stopping.is_set():
                start, dropped = [], [build for build in self.builds
                                      if build.name not in state.running and not state.ended(build.name)]
            for build in dropped:
                state.failed[build.name] = -1
                outcome.failed_builds[build.name] = -1
                why = "the run was stopped" if self._stopping.is_set() else f"{', '.join(build.after)} failed"
                self.write(f"==== build {build.name}: not started, as {why} ====")
            for build in start:
                state.running.add(build.name)
                started[build.name] = time.monotonic()
                self.write(f"==== build {build.name}: started {clock(started[build.name] - began)} in"
                           f"{f' (nice {build.nice})' if build.nice else ''} ====")
                threading.Thread(target=self._run_build, args=(build,), daemon=True).start()
            for lane in list(waiting):
                failed = [need for need in lane.needs if need in state.failed]
                if failed or self._stopping.is_set():
                    waiting.remove(lane)
                    outcome.not_run[lane.name] = (f"the build {', '.join(failed)} failed" if failed else
                                                  "the run was stopped")
                    self.write(f"==== {lane.name}: not run: {outcome.not_run[lane.name]} ====")
                elif all(need in state.done for need in lane.needs):
                    waiting.remove(lane)
                    running_lanes[lane.name] = time.monotonic()
                    outcome.lane_started[lane.name] = running_lanes[lane.name] - began
                    self.write(f"==== {lane.name}: started {clock(outcome.lane_started[lane.name])} in, its first "
                               f"builds done ({', '.join(lane.needs) or 'none needed'}) ====")
                    lane.start()
                    threading.Thread(target=self._run_lane, args=(lane,), daemon=True).start()
            if not (state.running or running_lanes or waiting):
                break
            try:
                kind, name, code = self._events.get(timeout=1.0)
            except queue.Empty:
                if time.monotonic() - self._last_line >= self.heartbeat:
                    self.write(self._status(state, started, running_lanes, waiting, began))
                continue
            if kind == "lane":
                del running_lanes[name]
                continue
            state.running.discard(name)
            seconds = time.monotonic() - started[name]
            outcome.build_seconds[name] = seconds
            outcome.builds_ended = time.monotonic() - began
            if code == 0:
                state.done.add(name)
                self.write(f"==== build {name}: done in {clock(seconds)} ====")
            else:
                state.failed[name] = code
                outcome.failed_builds[name] = code
                self.write(f"==== build {name}: FAILED (exit {code}) after {clock(seconds)} ====")
        return outcome

    def _status(self, state: BuildState, started: dict[str, float], running_lanes: dict[str, float],
                waiting: list[LaneProcess], began: float) -> str:
        now = time.monotonic()
        parts = [f"building {', '.join(f'{name} ({clock(now - started[name])})' for name in sorted(state.running))}"
                 if state.running else "no build running"]
        if running_lanes:
            parts.append(f"lanes {', '.join(f'{name} ({clock(now - at)})' for name, at in running_lanes.items())}")
        parts.extend(f"{lane.name} waits for {', '.join(n for n in lane.needs if n not in state.done)}"
                     for lane in waiting)
        return f"==== {clock(now - began)} in: {'; '.join(parts)} ===="
