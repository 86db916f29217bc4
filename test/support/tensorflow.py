"""Real TensorFlow for the tests: the pinned tensorflow-cpu in its own virtualenv (hack/tensorflow-venv.sh), run
in subprocesses, so the operator's environment never depends on it."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What the TensorFlow processes of the tests run; each reads its input on stdin or from its environment.
SCRIPTS = Path(__file__).resolve().parent / "tf"


def tensorflow_python() -> Path:
    """Creates the virtualenv on first use (minutes: the wheels are downloaded once into the cache); fails the
    test, naming the reason, when it cannot."""
    started = time.monotonic()
    result = subprocess.run(["bash", str(REPO / "hack" / "tensorflow-venv.sh")], capture_output=True, text=True,
                            check=False, timeout=1800)
    if result.returncode != 0:
        pytest.fail(f"hack/tensorflow-venv.sh failed (exit {result.returncode}):\n{result.stderr}")
    print(f"tensorflow virtualenv ready in {time.monotonic() - started:.1f}s")
    return Path(result.stdout.split()[-1])
