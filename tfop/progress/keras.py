"""Training progress reported from a TFJob's pod to tfop (docs/tfjob/progress.md): a Keras callback for
`model.fit`, and the function a custom training loop calls, which sends the very request the Kubeflow SDK's
`kubeflow.trainer.update_trainjob_status` sends (Kubeflow Trainer's status protocol), so either works in a TFJob.

This file depends on the standard library alone (and on TensorFlow for the callback): tfop ships it into every pod
of a job, next to the token, when the progress endpoint is on, so a training script needs nothing installed:

    import sys; sys.path.insert(0, "/var/run/secrets/tfop.kubeflow.org/progress")
    from tfop_progress import ProgressCallback, update_trainjob_status
    model.fit(dataset, epochs=10, callbacks=[ProgressCallback()])

With `checkpoints` (the BackupAndRestore or ModelCheckpoint callbacks, or the directories a program saves to), the
callback also reports when the last checkpoint was saved, as the metric lastCheckpointTime: tfop writes it in the
job's status and on its pods, for schedulers that choose as victims the pods that lose the least work.

Outside a pod tfop gave the variables to, reporting does nothing and returns False; it never raises, so a training
never stops for a report that could not be sent.
"""

from __future__ import annotations

import json
import logging
import math
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

try:  # the reporter works without TensorFlow; the callback needs it
    from tensorflow import keras as _keras

    _Callback: Any = _keras.callbacks.Callback
except ImportError:
    _Callback = object

ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
MIN_INTERVAL_SECONDS = 5.0  # as the Kubeflow SDK: the endpoint's rate per job is bounded anyway
MAX_METRICS = 256
MAX_TEXT = 64
TIMEOUT_SECONDS = 5.0
CHECKPOINT_METRIC = "lastCheckpointTime"  # an RFC 3339 time, or seconds since 1970
CHECK_SECONDS = 1.0  # how often, within an epoch, the checkpoints' files are looked at

log = logging.getLogger("tfop_progress")


class _Sent:
    """When the last report was taken, for the pacing (one per process, as the Kubeflow SDK's)."""

    lock = threading.Lock()
    last = -math.inf


def update_trainjob_status(progress_percent: int | None = None, estimated_remaining_seconds: int | None = None,
                           metrics: Mapping[str, float | int | str] | None = None, *, force: bool = False) -> bool:
    """Reports progress (0-100), the seconds left and named metrics; True when the endpoint took the report.
    At most one report per MIN_INTERVAL_SECONDS is sent (`force`: this one regardless, e.g. the last)."""
    url = os.environ.get(ENV_URL)
    if not url:
        return False
    with _Sent.lock:
        if not force and time.monotonic() - _Sent.last < MIN_INTERVAL_SECONDS:
            return False
    try:
        token = _read(os.environ.get(ENV_TOKEN, ""))
        if not token:
            return False
        body = json.dumps({"trainerStatus": trainer_status(progress_percent, estimated_remaining_seconds, metrics)})
        request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        ca = os.environ.get(ENV_CA_CERT, "")
        context = ssl.create_default_context(cafile=ca if ca and os.path.exists(ca) else None)
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS, context=context) as response:
            ok = bool(response.status == 200)
    except urllib.error.HTTPError as error:
        log.warning("progress report refused: HTTP %s %s", error.code, error.read(300).decode(errors="replace"))
        return False
    except (OSError, ValueError) as error:
        log.warning("progress report not sent: %s", error)
        return False
    if ok:
        with _Sent.lock:
            _Sent.last = time.monotonic()
    return ok


def trainer_status(progress_percent: int | None, estimated_remaining_seconds: int | None,
                   metrics: Mapping[str, float | int | str] | None) -> dict[str, Any]:
    """The request's trainerStatus, bounded as the endpoint requires (values as text, at most 64 characters)."""
    status: dict[str, Any] = {"lastUpdatedTime": datetime.now(UTC).isoformat()}
    if progress_percent is not None:
        status["progressPercentage"] = max(0, min(100, int(progress_percent)))
    if estimated_remaining_seconds is not None:
        status["estimatedRemainingSeconds"] = max(0, int(estimated_remaining_seconds))
    if metrics:
        status["metrics"] = [{"name": str(name)[:MAX_TEXT], "value": _text(str(name), value)}
                             for name, value in list(metrics.items())[:MAX_METRICS]]
    return status


def _text(name: str, value: float | int | str) -> str:
    if name == CHECKPOINT_METRIC and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _rfc3339(float(value))  # time.time(): to the second, where 6 digits would be off by minutes
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)[:MAX_TEXT] or "-"


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def last_saved(paths: list[str]) -> float | None:
    """When the newest file under `paths` (each a file, or a directory and the directories in it: Keras's
    BackupAndRestore writes either level) was last written, as seconds since 1970; None when there is none."""
    times = [written for path in paths for written in _written(path)]
    return max(times) if times else None


def _written(path: str, depth: int = 1) -> list[float]:
    try:
        if not os.path.isdir(path):
            return [os.stat(path).st_mtime]
        with os.scandir(path) as entries:
            found = list(entries)
    except OSError:  # not there (yet, or any more), or replaced while we looked
        return []
    times: list[float] = []
    for entry in found:
        if entry.is_dir(follow_symlinks=False):
            times.extend(_written(entry.path, depth - 1) if depth > 0 else [])
        else:
            times.extend(_written(entry.path))
    return times


def checkpoint_paths(checkpoints: list[Any]) -> list[str]:
    """Where each checkpoint saves: a BackupAndRestore's backup_dir, the directory of a ModelCheckpoint's filepath
    (a pattern of the epoch), or a path given as it is."""
    paths = []
    for checkpoint in checkpoints:
        if isinstance(checkpoint, (str, os.PathLike)):
            paths.append(os.fspath(checkpoint))
        elif getattr(checkpoint, "backup_dir", None):
            paths.append(str(checkpoint.backup_dir))
        elif getattr(checkpoint, "filepath", None):
            paths.append(os.path.dirname(str(checkpoint.filepath)) or ".")
        else:
            raise TypeError(f"{checkpoint!r} names no place it saves to (backup_dir, filepath, or a path)")
    return paths


def _read(path: str) -> str:
    """The token as it is now: the kubelet renews the file before the token expires."""
    if not path or not os.path.exists(path):
        return ""
    with open(path) as file:
        return file.read().strip()


def reports_here(tf_config: str | None) -> bool:
    """Whether this replica is the one that reports: the chief (or master); worker 0 when there is none; the lone
    process of a job without TF_CONFIG. The others train the same steps, so one report says it all."""
    if not tf_config:
        return True
    try:
        config = json.loads(tf_config)
        task, cluster = config.get("task") or {}, config.get("cluster") or {}
        kind, index = str(task.get("type", "")).lower(), int(task.get("index", 0))
    except (ValueError, TypeError, AttributeError):
        return True
    if kind in ("chief", "master"):
        return True
    return kind == "worker" and index == 0 and not (set(cluster) & {"chief", "master"})


class ProgressCallback(_Callback):  # type: ignore[misc]
    """Reports how far `model.fit` is: after every epoch, and within one every `every_seconds` (by steps when
    Keras knows the steps per epoch), then 100 % at the end. The metrics are the epoch's logs (loss, accuracy,
    val_*), with currentEpoch, totalEpochs, currentStep and totalSteps beside them.

    `checkpoints`: the callbacks that save (BackupAndRestore, ModelCheckpoint) or the paths saved to. A save is
    seen by its files' modification time, looked at after each epoch and every CHECK_SECONDS within one (list this
    callback after them, so that it looks right after they save), and reported as lastCheckpointTime as soon as
    the pacing lets a report go; every report after it says it too."""

    def __init__(self, every_seconds: float = 30.0, *, all_replicas: bool = False,
                 checkpoints: list[Any] | tuple[Any, ...] = ()) -> None:
        super().__init__()
        self.every_seconds = every_seconds
        self.active = all_replicas or reports_here(os.environ.get("TF_CONFIG"))
        self._checkpoint_paths = checkpoint_paths(list(checkpoints))
        self._checked = -math.inf
        self.last_checkpoint: float | None = None  # seconds since 1970 of the last save seen
        self._checkpoint_told = True  # whether a report has said last_checkpoint
        self._started = 0.0
        self._last = 0.0
        self._epoch = 0
        self._step = 0
        self._logs: dict[str, float | int | str] = {}

    def _params(self) -> tuple[int | None, int | None]:
        params = getattr(self, "params", None) or {}
        epochs, steps = params.get("epochs"), params.get("steps")
        return (int(epochs) if epochs else None), (int(steps) if steps else None)

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        self._started = self._last = time.monotonic()

    def on_epoch_begin(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        _, steps = self._params()
        self._step = self._epoch * steps + batch + 1 if steps else self._step + 1
        if time.monotonic() - self._checked >= CHECK_SECONDS:
            self.look_for_checkpoint()
        if time.monotonic() - self._last >= self.every_seconds or not self._checkpoint_told:
            self.report(logs)

    def on_epoch_end(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        self._epoch = epoch + 1
        _, steps = self._params()
        if steps:
            self._step = self._epoch * steps
        self.look_for_checkpoint()
        self.report(logs, force=True)

    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None:
        self.report(logs, force=True, done=True)

    def look_for_checkpoint(self) -> None:
        """Notes a save newer than the last one seen, to be reported."""
        self._checked = time.monotonic()
        if not self.active or not self._checkpoint_paths:
            return
        saved = last_saved(self._checkpoint_paths)
        if saved is not None and (self.last_checkpoint is None or saved > self.last_checkpoint):
            self.last_checkpoint = saved
            self._checkpoint_told = False

    def progress(self) -> tuple[int | None, int | None]:
        """(percent done, seconds left), from the steps when Keras knows them, else the epochs."""
        epochs, steps = self._params()
        if not epochs:
            return None, None
        done, total = (self._step, epochs * steps) if steps else (self._epoch, epochs)
        fraction = min(1.0, done / total) if total else 0.0
        elapsed = time.monotonic() - self._started
        left = int(elapsed * (1 - fraction) / fraction) if fraction > 0 else None
        return int(fraction * 100), left

    def report(self, logs: Mapping[str, Any] | None = None, *, force: bool = False, done: bool = False) -> bool:
        if not self.active:
            return False
        self._last = time.monotonic()
        for name, value in (logs or {}).items():
            if isinstance(value, (int, float)) and math.isfinite(float(value)):
                self._logs[str(name)] = float(value)
        epochs, steps = self._params()
        percent, left = (100, 0) if done else self.progress()
        counts = {"currentEpoch": self._epoch, "totalEpochs": epochs, "currentStep": self._step,
                  "totalSteps": epochs * steps if epochs and steps else None}
        metrics = {**self._logs, **{name: value for name, value in counts.items() if value is not None}}
        if self.last_checkpoint is not None:
            metrics[CHECKPOINT_METRIC] = _rfc3339(self.last_checkpoint)
        sent = update_trainjob_status(percent, left, metrics, force=force)
        self._checkpoint_told = self._checkpoint_told or sent
        return sent
