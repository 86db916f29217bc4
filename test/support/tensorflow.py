"""Real TensorFlow for the tests: the pinned tensorflow-cpu in its own virtualenv (hack/tensorflow-venv.sh), run
in subprocesses, so the operator's environment never depends on it."""

from __future__ import annotations

from pathlib import Path

from support.builds import built

REPO = Path(__file__).resolve().parents[2]
# What the TensorFlow processes of the tests run; each reads its input on stdin or from its environment.
SCRIPTS = Path(__file__).resolve().parent / "tf"


def tensorflow_python() -> Path:
    """The virtualenv's python, made on first use (minutes: the wheels are downloaded once into the cache)."""
    return built("tensorflow-venv.sh", "the TensorFlow virtualenv", timeout=1800)
