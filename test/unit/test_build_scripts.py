"""hack/lib.sh, which every build script sources: the Go version is checked with a message saying what to do,
a long build prints a line at a steady pace so it never looks hung, and scripts run side by side take turns
with apt-get."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
from pathlib import Path

from support.waiting import wait_for

LIB = Path(__file__).resolve().parents[2] / "hack" / "lib.sh"


def bash(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f"LOG_NAME=build-test; source {LIB}; {script}"], capture_output=True,
                          text=True, timeout=60, check=False)


def test_version_comparison() -> None:
    result = bash("for p in '1.26.0 1.26.0' '1.26.8 1.26.0' '1.27 1.26.0' '1.25.9 1.26.0' '1.9.0 1.26.0'; do "
                  "version_at_least $p && echo yes || echo no; done")
    assert result.stdout.split() == ["yes", "yes", "yes", "no", "no"]


def test_a_go_too_old_is_named_with_what_to_do() -> None:
    result = bash("GO_MIN_VERSION=99.0.0; check_go_version")
    assert result.returncode == 1
    assert "[build-test] ERROR: Go 99.0.0 or newer is needed" in result.stderr
    assert "found go" in result.stderr and "Install a newer Go and put it first on PATH" in result.stderr


def test_the_pinned_minimum_is_met_here() -> None:
    assert bash("check_go_version").returncode == 0


def test_a_build_prints_a_line_at_a_steady_pace() -> None:
    result = bash("HEARTBEAT_SECONDS=1 start_heartbeat; sleep 3.5")
    lines = [line for line in result.stderr.splitlines() if "still building" in line]
    assert len(lines) >= 2, result.stderr
    assert lines[0].startswith("[build-test] still building (0m0")


def test_every_script_names_its_lines_before_it_sources_lib() -> None:
    """lib.sh's log and die print ${LOG_NAME} under `set -u`: a script that does not set it fails on its first
    line of output (hack/browser.sh did, on a machine without chromium, stopping a cold `make test`)."""
    unnamed = []
    for script in sorted(LIB.parent.glob("*.sh")):
        lines = script.read_text().splitlines()
        if not lines or not lines[0].startswith("#!"):
            continue  # sourced by others after they set it (wheels.sh)
        sourcing = next((n for n, line in enumerate(lines) if line.startswith("source") and "lib.sh" in line), None)
        if sourcing is not None and not any(line.startswith("LOG_NAME=") for line in lines[:sourcing]):
            unnamed.append(script.name)
    assert unnamed == []


def test_debian_packages_are_installed_by_one_script_at_a_time(tmp_path: Path) -> None:
    """make test runs build scripts side by side, and a second apt-get fails at once on dpkg's lock: two scripts
    missing packages at once take turns, each one's update and install together (a fake apt-get logs them)."""
    fakes, log = tmp_path / "bin", tmp_path / "apt.log"
    fakes.mkdir()
    for name, body in (("apt-get", f'echo "start $PPID" >>{log}; sleep 0.3; echo "end $PPID" >>{log}'),
                       ("dpkg-query", "exit 1"), ("id", "echo 0")):
        (fakes / name).write_text(f"#!/bin/bash\n{body}\n")
        (fakes / name).chmod(0o755)
    script = f"PATH={fakes}:$PATH TFOP_CACHE_DIR={tmp_path}/cache; source {LIB}; ensure_debian_packages pkg-$1"
    scripts = [subprocess.Popen(["bash", "-c", f"LOG_NAME=build-{n}; {script}", "-", str(n)],
                                stderr=subprocess.PIPE, text=True) for n in (1, 2)]
    for process in scripts:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
    entries = [line.split() for line in log.read_text().splitlines()]
    assert len(entries) == 8  # an update and an install each, each logging its start and end
    owners = [pid for _, pid in entries]
    # One script's four lines, then the other's: no apt-get of one ran while the other's did.
    assert owners[:4] == [owners[0]] * 4 and owners[4:] == [owners[4]] * 4 and owners[0] != owners[4], entries
    assert [what for what, _ in entries] == ["start", "end"] * 4


def test_a_check_stops_where_the_build_would_start(tmp_path: Path) -> None:
    """With TFOP_CHECK_CACHED=1 `building` ends the script with NOT_CACHED (3) and names what is missing; without
    it the script goes on to build."""
    checking = bash("TFOP_CHECK_CACHED=1; building 'the thing'; echo built")
    assert (checking.returncode, checking.stdout) == (3, "")
    assert "[build-test] not cached: the thing" in checking.stderr
    building = bash(f"TFOP_CACHE_DIR={tmp_path}; building 'the thing'; echo built")
    assert (building.returncode, building.stdout) == (0, "built\n")


def test_builds_cached_on_an_empty_cache_names_every_build_and_builds_nothing(tmp_path: Path) -> None:
    """`make builds-cached`, which .ci/run asks before choosing make test-all, answers no on an empty cache,
    naming each build the tests need, and leaves the cache as it found it: nothing built, nothing downloaded."""
    cache = tmp_path / "cache"
    result = subprocess.run(["make", "--no-print-directory", "builds-cached"], cwd=LIB.parents[1],
                            env={**os.environ, "TFOP_CACHE_DIR": str(cache)}, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode != 0
    named = {line.split("]")[0].lstrip("[") for line in result.stderr.splitlines() if "] not cached: " in line}
    # browser and the node's Debian packages are the machine's, cached or not; these are all in the cache.
    assert named >= {"build-controlplane", "build-images", "build-prometheus", "build-kueue", "build-coscheduler",
                     "build-metrics-server", "build-kube-router", "build-training-operator", "build-helm",
                     "build-node"}, result.stderr
    assert not cache.exists()


def fake_build(tmp_path: Path, seconds: float, fails: bool = False) -> Path:
    """A build script as hack/'s are: its cache check, then `building`, then a build that logs its start and end."""
    script = tmp_path / f"build-fake-{'failing' if fails else 'good'}.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/usr/bin/env bash
        set -euo pipefail
        LOG_NAME=build-fake
        source {LIB}
        if [[ -f "${{CACHE_ROOT}}/thing" ]]; then echo cached; exit 0; fi
        building "the thing"
        echo "start $$" >>{tmp_path}/builds.log
        sleep {seconds}
        echo "end $$" >>{tmp_path}/builds.log
        {"exit 1" if fails else 'touch "${CACHE_ROOT}/thing"'}
        echo built
        """))
    return script


def start(script: Path, cache: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(["bash", str(script)], env={**os.environ, "TFOP_CACHE_DIR": str(cache),
                                                         "HEARTBEAT_SECONDS": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def started_builds(tmp_path: Path) -> list[str]:
    log = tmp_path / "builds.log"
    return [line for line in log.read_text().splitlines() if line.startswith("start")] if log.exists() else []


def test_two_callers_of_one_build_build_it_once_and_the_second_reuses_it(tmp_path: Path) -> None:
    """make test builds while its lanes run, and a lane's fixture may ask for the same build: the second caller
    waits for the first (saying so), then finds the build cached."""
    cache = tmp_path / "cache"
    script = fake_build(tmp_path, seconds=3)
    first = start(script, cache)
    wait_for(lambda: len(started_builds(tmp_path)) == 1, message="the first build to start")
    second = start(script, cache)
    outputs = [process.communicate(timeout=60) for process in (first, second)]
    assert [process.returncode for process in (first, second)] == [0, 0], outputs
    assert [stdout for stdout, _ in outputs] == ["built\n", "cached\n"], outputs
    assert len(started_builds(tmp_path)) == 1, (tmp_path / "builds.log").read_text()
    waiting = outputs[1][1]
    assert "[build-fake] waiting: another process is building the thing" in waiting, waiting
    assert "[build-fake] still waiting for the other build of the thing" in waiting, waiting
    assert "starting over" in waiting, waiting
    # Cached, a third caller neither waits nor builds.
    third = start(script, cache)
    stdout, stderr = third.communicate(timeout=60)
    assert (third.returncode, stdout, stderr) == (0, "cached\n", "")


def test_a_caller_that_waited_for_a_build_that_failed_builds_it_itself(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = start(fake_build(tmp_path, seconds=2, fails=True), cache)
    wait_for(lambda: len(started_builds(tmp_path)) == 1, message="the failing build to start")
    second = start(fake_build(tmp_path, seconds=0), cache)
    # The second script names the same thing, so it takes the same lock although it is another file.
    _, first_err = first.communicate(timeout=60)
    stdout, stderr = second.communicate(timeout=60)
    assert first.returncode == 1, first_err
    assert (second.returncode, stdout) == (0, "built\n"), stderr
    assert len(started_builds(tmp_path)) == 2 and "waiting: another process" in stderr, stderr


def test_a_build_killed_mid_way_leaves_its_lock_free(tmp_path: Path) -> None:
    """The lock is the kernel's (flock), so a build that dies, however it dies, never leaves a stale lock. (Its
    children hold it while they run: they may still be writing what a second build would write.)"""
    cache = tmp_path / "cache"
    first = start(fake_build(tmp_path, seconds=600), cache)
    wait_for(lambda: len(started_builds(tmp_path)) == 1, message="the build to start")
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    second = start(fake_build(tmp_path, seconds=0), cache)
    stdout, stderr = second.communicate(timeout=60)
    assert (second.returncode, stdout) == (0, "built\n"), stderr
    assert "waiting" not in stderr, stderr
