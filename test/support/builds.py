"""What hack/'s build scripts built, for the test fixtures: each prints where it put it last (a directory of
binaries built from source, or a virtualenv's python; made once, then cached); a failed build fails the test with
its output, never skips it."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

HACK = Path(__file__).resolve().parents[2] / "hack"


def built(script: str, what: str, timeout: float = 3600, args: tuple[str, ...] = ()) -> Path:
    """The path hack/`script` (given `args`) printed last."""
    started = time.monotonic()
    result = subprocess.run(["bash", str(HACK / script), *args], capture_output=True, text=True, check=False,
                            timeout=timeout)
    if result.returncode != 0:
        pytest.fail(f"building {what} failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    print(f"{what} ready in {time.monotonic() - started:.1f}s")
    return Path(result.stdout.strip().splitlines()[-1])
