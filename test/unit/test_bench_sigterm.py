"""A bench ended by SIGTERM (it runs in the background, where SIGINT is ignored) goes through its clean-up."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from bench.cluster import end_on_sigterm


@pytest.fixture
def sigterm_restored() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def a_bench(cleaned_up: list[str]) -> None:
    try:
        signal.raise_signal(signal.SIGTERM)  # runs the Python handler before it returns
        raise AssertionError("SIGTERM did not end the bench")
    finally:
        cleaned_up.append("cluster destroyed")


@pytest.mark.usefixtures("sigterm_restored")
def test_sigterm_runs_the_finally_blocks_that_stop_the_operator_and_the_cluster() -> None:
    end_on_sigterm()
    cleaned_up: list[str] = []
    with pytest.raises(SystemExit) as ended:
        a_bench(cleaned_up)
    assert ended.value.code == 143
    assert cleaned_up == ["cluster destroyed"]
