"""hack/lib.sh, which every build script sources: the Go version is checked with a message saying what to do,
and a long build prints a line at a steady pace so it never looks hung."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
