"""The operator's log: JSON stays JSON when libraries log or warn, and a job's story is told at info, one line per
transition, each with job=ns/name."""

from __future__ import annotations

import json
import subprocess
import sys

from structlog.testing import capture_logs

from tfop.controller.apply.job_story import log_lifecycle
from tfop.controller.plan.types import JobEvent, Plan, ReplicaRestart

LIBRARY_CHATTER = """
import logging, warnings
from tfop import logs
logs.configure("json", "info")
logging.getLogger("urllib3.connectionpool").warning("Retrying (%s) after connection broken", "Retry(total=2)")
logging.getLogger("kubernetes.client.rest").info("too chatty to show")
import urllib3
warnings.warn("Unverified HTTPS request is being made", urllib3.exceptions.InsecureRequestWarning)
try:
    1 / 0
except ZeroDivisionError:
    logging.getLogger("somelib").exception("it broke")
"""


def test_stdlib_logging_and_warnings_come_out_as_json_lines() -> None:
    result = subprocess.run([sys.executable, "-c", LIBRARY_CHATTER], capture_output=True, text=True, timeout=60,
                            check=True)
    records = [json.loads(line) for line in result.stderr.splitlines()]  # every line parses
    by_logger = {record.get("logger"): record for record in records}
    assert set(by_logger) == {"urllib3.connectionpool", "py.warnings", "somelib"}
    retry = by_logger["urllib3.connectionpool"]
    assert retry["event"] == "Retrying (Retry(total=2)) after connection broken" and retry["level"] == "warning"
    assert "InsecureRequestWarning" in by_logger["py.warnings"]["event"]
    assert "ZeroDivisionError" in by_logger["somelib"]["exception"]
    assert all("timestamp" in record for record in records)


def test_a_plan_is_told_as_lifecycle_lines_with_the_job() -> None:
    plan = Plan(events=[
        JobEvent("Normal", "TFJobCreated", "TFJob ns/mnist is created."),
        JobEvent("Warning", "TFJobRestarting", "TFJob ns/mnist is restarting Worker 1, which exited with code 137."),
        JobEvent("Normal", "TFJobRunning", "TFJob ns/mnist is running."),
        JobEvent("Normal", "TFJobSuspended", "TFJob ns/mnist is suspended."),
        JobEvent("Normal", "TFJobResumed", "TFJob ns/mnist is resumed."),
        JobEvent("Normal", "TFJobSucceeded", "TFJob ns/mnist successfully completed."),
        JobEvent("Warning", "BackoffLimitExceeded", "TFJob ns/mnist has failed because ..."),
        JobEvent("Normal", "TTLExpired", "TFJob ns/mnist finished at ...; deleting it"),
    ], restarts=(ReplicaRestart("Worker", 1, 137, "retryable", 3),
                 ReplicaRestart("PS", 0, 1, "permanent", 2, in_place=2)))
    with capture_logs() as lines:
        log_lifecycle("ns/mnist", plan)
    assert all(line["job"] == "ns/mnist" and line["log_level"] == "info" for line in lines)
    assert [(line["event"], line.get("reason")) for line in lines] == [
        ("replica restarting: recreating its pod", None), ("replica restarted", None),
        ("job created", "TFJobCreated"), ("job running: every replica runs", "TFJobRunning"),
        ("job suspended", "TFJobSuspended"), ("job resumed", "TFJobResumed"), ("job succeeded", "TFJobSucceeded"),
        ("job failed", "BackoffLimitExceeded"), ("deleting finished job: its TTL has passed", "TTLExpired")]
    recreated, in_place = lines[0], lines[1]
    assert {k: recreated[k] for k in ("replica_type", "replica_index", "exit_code", "exit_class", "restarts")} == {
        "replica_type": "Worker", "replica_index": 1, "exit_code": 137, "exit_class": "retryable", "restarts": 3}
    assert in_place["in_place"] == 2 and in_place["exit_class"] == "permanent" and "in_place" not in recreated
