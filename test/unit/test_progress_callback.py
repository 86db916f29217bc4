"""The reporter and Keras callback shipped into pods (tfop/progress/keras.py), here without TensorFlow (the
callback's base is then a plain object; test/e2e runs it in model.fit): which replica reports, what a report holds,
how far a fit is, and the request as an HTTPS server receives it. Also the store of reports the planner reads and
the metric made from it (controller/progress_reports.py, progress/metrics.py)."""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from tfop.controller.plan.job_status import TrainerStatus
from tfop.controller.progress_reports import ProgressReports, Report, steps_per_second
from tfop.progress import keras as reporter
from tfop.progress.metrics import ProgressCollector
from tfop.tls import self_signed_certificate


def tf_config(task: str, index: int, *kinds: str) -> str:
    return json.dumps({"cluster": {kind: ["h:1"] for kind in kinds}, "task": {"type": task, "index": index}})


REPLICAS: dict[str, tuple[str | None, bool]] = {
    "a lone process (no TF_CONFIG)": (None, True),
    "the chief": (tf_config("chief", 0, "chief", "worker"), True),
    "a master": (tf_config("master", 0, "master", "worker"), True),
    "worker 0 of a job with a chief": (tf_config("worker", 0, "chief", "worker"), False),
    "worker 0 of workers only": (tf_config("worker", 0, "worker"), True),
    "worker 1 of workers only": (tf_config("worker", 1, "worker"), False),
    "a PS": (tf_config("ps", 0, "worker", "ps"), False),
    "an evaluator": (tf_config("evaluator", 0, "chief", "evaluator"), False),
    "unreadable": ("{", True),
}


@pytest.mark.parametrize(("config", "reports"), REPLICAS.values(), ids=REPLICAS.keys())
def test_one_replica_reports(config: str | None, reports: bool) -> None:
    assert reporter.reports_here(config) is reports


def test_a_report_is_bounded_as_the_endpoint_requires() -> None:
    status = reporter.trainer_status(130, -5, {"loss": 0.123456789, "epoch": 2, "note": "x" * 80, "empty": ""})
    assert {key: value for key, value in status.items() if key != "lastUpdatedTime"} == {
        "progressPercentage": 100, "estimatedRemainingSeconds": 0,
        "metrics": [{"name": "loss", "value": "0.123457"}, {"name": "epoch", "value": "2"},
                    {"name": "note", "value": "x" * 64}, {"name": "empty", "value": "-"}]}


FITS: dict[str, tuple[dict[str, Any], int, int, tuple[int | None, bool]]] = {
    # params Keras gives, epochs done, steps done -> (percent, whether seconds left are known)
    "steps known, a quarter": ({"epochs": 4, "steps": 10}, 1, 10, (25, True)),
    "steps known, none yet": ({"epochs": 4, "steps": 10}, 0, 0, (0, False)),
    "steps unknown: by epochs": ({"epochs": 4, "steps": None}, 3, 7, (75, True)),
    "no epochs: unknown": ({}, 0, 3, (None, False)),
}


@pytest.mark.parametrize(("params", "epoch", "step", "expected"), FITS.values(), ids=FITS.keys())
def test_how_far_a_fit_is(params: dict[str, Any], epoch: int, step: int, expected: tuple[int | None, bool]) -> None:
    callback = reporter.ProgressCallback()
    callback.params = params
    callback.on_train_begin()
    callback._epoch, callback._step = epoch, step
    percent, left = callback.progress()
    assert (percent, left is not None) == expected


class Received:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], Any]] = []


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[tuple[str, Path, Received]]:
    """An HTTPS server on loopback with a self-signed certificate, taking every POST with 200."""
    context, _, pem = self_signed_certificate(["127.0.0.1"], "test")
    ca = tmp_path / "ca.crt"
    ca.write_text(pem)
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.requests.append((self.path, dict(self.headers), json.loads(body)))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/apis/kubeflow.org/v1/namespaces/ns/tfjobs/j/status", ca, \
        received
    server.shutdown()
    server.server_close()


def test_the_reporter_posts_kubeflows_request_with_the_pods_token(
        endpoint: tuple[str, Path, Received], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, ca, received = endpoint
    token = tmp_path / "token"
    token.write_text("the-token\n")
    monkeypatch.setenv(reporter.ENV_URL, url)
    monkeypatch.setenv(reporter.ENV_CA_CERT, str(ca))
    monkeypatch.setenv(reporter.ENV_TOKEN, str(token))
    assert reporter.update_trainjob_status(40, 90, {"loss": 0.5}, force=True) is True
    token.write_text("renewed")  # the kubelet renews the file: the next report carries the new token
    assert reporter.update_trainjob_status(50, force=True) is True
    (path, headers, first), (_, renewed, second) = received.requests
    assert path == "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/j/status"
    assert (headers["Authorization"], headers["Content-Type"], renewed["Authorization"]) == (
        "Bearer the-token", "application/json", "Bearer renewed")
    assert set(first) == {"trainerStatus"} and set(first["trainerStatus"]) == {
        "lastUpdatedTime", "progressPercentage", "estimatedRemainingSeconds", "metrics"}
    assert (first["trainerStatus"]["progressPercentage"], first["trainerStatus"]["metrics"],
            second["trainerStatus"]["progressPercentage"]) == (40, [{"name": "loss", "value": "0.5"}], 50)


def test_outside_a_tfjob_reporting_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(reporter.ENV_URL, raising=False)
    assert reporter.update_trainjob_status(10, force=True) is False


def test_an_endpoint_that_cannot_be_reached_returns_false(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = tmp_path / "token"
    token.write_text("t")
    monkeypatch.setenv(reporter.ENV_URL, "https://127.0.0.1:1/status")
    monkeypatch.setenv(reporter.ENV_TOKEN, str(token))
    assert reporter.update_trainjob_status(10, force=True) is False


def at_step(step: int | None) -> TrainerStatus:
    return TrainerStatus(current_step=step, progress_percentage=None if step is None else step // 10)


RATES: dict[str, tuple[Report | None, TrainerStatus, float, float | None]] = {
    "the first report": (None, at_step(100), 10.0, None),
    "50 steps in 5 s": (Report(at_step(100), 5.0, True), at_step(150), 10.0, 10.0),
    "no step moved": (Report(at_step(100), 5.0, True), at_step(100), 10.0, 0.0),
    "the step went back (a restart)": (Report(at_step(100), 5.0, True), at_step(40), 10.0, None),
    "a report without a step": (Report(at_step(100), 5.0, True), at_step(None), 10.0, None),
    "no time passed": (Report(at_step(100), 10.0, True), at_step(150), 10.0, None),
}


@pytest.mark.parametrize(("previous", "status", "received", "expected"), RATES.values(), ids=RATES.keys())
def test_the_step_rate_between_two_reports(previous: Report | None, status: TrainerStatus, received: float,
                                           expected: float | None) -> None:
    assert steps_per_second(previous, status, received) == expected


def test_the_store_keeps_each_jobs_latest_within_its_bound_and_meters_who_opted_in() -> None:
    reports = ProgressReports(max_jobs=2)
    reports.put("ns/a", at_step(100), 1.0, metered=True)
    reports.put("ns/a", at_step(300), 3.0, metered=True)
    reports.put("ns/b", at_step(10), 1.0, metered=False)
    reports.put("ns/c", at_step(10), 1.0, metered=True)  # past the bound: a, reported to longest ago, goes
    assert (reports.latest("ns/a"), reports.latest("ns/b"), reports.latest("ns/c")) == (
        None, at_step(10), at_step(10))
    reports.put("ns/c", at_step(30), 2.0, metered=True)
    reports.forget("ns/b")
    assert reports.latest("ns/b") is None
    registry = CollectorRegistry()
    registry.register(ProgressCollector(reports))
    lines = [line for line in generate_latest(registry).decode().splitlines() if not line.startswith("#")]
    assert lines == ['tf_operator_job_training_steps_per_second{job_name="c",job_namespace="ns"} 20.0',
                     'tf_operator_job_training_progress_percent{job_name="c",job_namespace="ns"} 3.0']


def test_a_tls_client_of_the_shipped_module_verifies_the_endpoint(endpoint: tuple[str, Path, Received],
                                                                  tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    url, _, received = endpoint
    other = tmp_path / "other.crt"
    other.write_text(self_signed_certificate(["127.0.0.1"], "other")[2])
    token = tmp_path / "token"
    token.write_text("t")
    monkeypatch.setenv(reporter.ENV_URL, url)
    monkeypatch.setenv(reporter.ENV_CA_CERT, str(other))
    monkeypatch.setenv(reporter.ENV_TOKEN, str(token))
    assert reporter.update_trainjob_status(10, force=True) is False
    assert received.requests == []


class Saver:
    """What the callback reads of Keras's checkpointing callbacks: where they save."""

    def __init__(self, **where: str) -> None:
        self.__dict__.update(where)


PLACES: dict[str, tuple[list[Any], list[str] | None]] = {
    "BackupAndRestore: its backup_dir": ([Saver(backup_dir="/ckpt/backup")], ["/ckpt/backup"]),
    "ModelCheckpoint: the directory of its pattern": ([Saver(filepath="/ckpt/model-{epoch:02d}.keras")], ["/ckpt"]),
    "a file in the working directory": ([Saver(filepath="model.keras")], ["."]),
    "a path as it is": (["/ckpt/manager", Path("/ckpt/other")], ["/ckpt/manager", "/ckpt/other"]),
    "something that saves nowhere": ([Saver(name="x")], None),
}


@pytest.mark.parametrize(("given", "expected"), PLACES.values(), ids=PLACES.keys())
def test_where_the_checkpoints_are_saved(given: list[Any], expected: list[str] | None) -> None:
    if expected is None:
        with pytest.raises(TypeError, match="names no place it saves to"):
            reporter.checkpoint_paths(given)
    else:
        assert reporter.checkpoint_paths(given) == expected


def test_the_newest_file_one_directory_down_is_the_last_save(tmp_path: Path) -> None:
    (tmp_path / "chief").mkdir()
    (tmp_path / "chief" / "deep").mkdir()
    for name, written in (("training_metadata.json", 1000), ("chief/ckpt-1.index", 3000),
                          ("chief/deep/ignored", 9000)):
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (written, written))
    assert reporter.last_saved([str(tmp_path)]) == 3000
    assert reporter.last_saved([str(tmp_path / "training_metadata.json")]) == 1000
    assert reporter.last_saved([str(tmp_path / "missing")]) is None


def test_a_checkpoint_time_given_as_seconds_is_sent_as_rfc3339() -> None:
    status = reporter.trainer_status(None, None, {"lastCheckpointTime": 1795255100.9, "loss": 1795255100.9})
    assert status["metrics"] == [{"name": "lastCheckpointTime", "value": "2026-11-21T09:58:20Z"},
                                 {"name": "loss", "value": "1.79526e+09"}]


def test_the_callback_reports_each_save_once_the_pacing_lets_it(
        endpoint: tuple[str, Path, Received], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, ca, received = endpoint
    token = tmp_path / "token"
    token.write_text("t")
    for name, value in ((reporter.ENV_URL, url), (reporter.ENV_CA_CERT, str(ca)), (reporter.ENV_TOKEN, str(token))):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setattr(reporter._Sent, "last", -math.inf)
    backup = tmp_path / "backup"
    backup.mkdir()
    callback = reporter.ProgressCallback(every_seconds=3600, checkpoints=[Saver(backup_dir=str(backup))])
    callback.params = {"epochs": 2, "steps": 10}
    callback.on_train_begin()

    def save(written: int) -> None:
        (backup / "latest.weights.h5").write_text("w")
        os.utime(backup / "latest.weights.h5", (written, written))

    def told() -> list[str | None]:
        return [next((m["value"] for m in body["trainerStatus"].get("metrics", ())
                      if m["name"] == "lastCheckpointTime"), None) for _, _, body in received.requests]

    callback.on_train_batch_end(0)  # no save yet, and no report due
    save(1795255100)
    callback.on_epoch_end(0, {"loss": 0.5})  # the epoch's report says the save
    assert told() == ["2026-11-21T09:58:20Z"]
    save(1795255160)
    callback._checked = -math.inf  # the next batch looks again
    callback.on_train_batch_end(3)  # seen, but the report within 5 s of the last is held back
    assert told() == ["2026-11-21T09:58:20Z"] and callback.last_checkpoint == 1795255160
    monkeypatch.setattr(reporter._Sent, "last", -math.inf)  # the 5 s have passed
    callback.on_train_batch_end(4)
    callback.on_train_batch_end(5)  # told once: nothing more is due
    assert told() == ["2026-11-21T09:58:20Z", "2026-11-21T09:59:20Z"]
