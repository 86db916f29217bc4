"""The reads the real-node tests make of a job's pods' logs as JobLogs (hack/bench/real_jobs.py) follows them."""

from __future__ import annotations

import re

from bench.real_jobs import JobLogs as JobLogs
from bench.real_jobs import LogLine
from support.real_node_jobs import story
from support.waiting import KUBECTL_INTERVAL, wait_for


def first(lines: list[LogLine], pattern: re.Pattern[str]) -> tuple[LogLine, re.Match[str]] | None:
    for line in lines:
        if match := pattern.match(line.text):
            return line, match
    return None


def texts(lines: list[LogLine], tail: int = 30) -> list[str]:
    return [line.text for line in lines][-tail:]


def wait_for_line(logs: JobLogs, uid: str, pattern: re.Pattern[str], what: str,
                  timeout: float = 400) -> tuple[LogLine, re.Match[str]]:
    """The first line of the pod `uid` that matches, waited for; on a timeout, the pod's last lines and the
    namespace's events say where it stands (TensorFlow's import, a peer it waits for, the pod not started)."""
    try:
        return wait_for(lambda: first(logs.of(uid), pattern), timeout, what, interval=KUBECTL_INTERVAL)
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\nits last lines: {texts(logs.of(uid))}\n"
                             f"{story(logs.cluster, logs.namespace)}") from None
