"""An operator process that exits before it is ready says so with the end of its log, since a test run's temp
directories (where the log is) are gone a few runs later."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.operators import OperatorProcess


class Exiting(OperatorProcess):
    """A real process that writes a few lines and exits 1 before any readiness probe can pass."""

    def command(self) -> list[str]:
        return ["sh", "-c", "for i in $(seq 1 20); do echo line $i; done; echo 'problem running manager'; exit 1"]

    def ready(self) -> bool:
        return False


def test_an_operator_that_exits_at_start_is_told_with_its_logs_end(tmp_path: Path) -> None:
    log = tmp_path / "operator.log"
    with pytest.raises(RuntimeError) as raised:
        Exiting(tmp_path / "kubeconfig", log, []).start(timeout=60)
    assert str(raised.value) == (
        f"sh exited with 1; see {log}, which ends:\n"
        + "\n".join([f"line {i}" for i in range(7, 21)] + ["problem running manager"]))
