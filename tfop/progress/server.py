"""The progress endpoint: HTTPS POST {status_path} for the pods of each job (docs/tfjob/progress.md).

A request is judged in the order that costs least first: the URL names a job, the body is within MAX_BODY, a
bearer token is there and this process leads (a standby's reports would reach no worker: it answers 503 and the
reporter tries again), the apiserver reviews the token (tokens.py), the pod it is bound to is one of the job's
(report.py, against the pod cache), the job is within its rate, and the body is a report within bounds. Only then
is the report kept (ProgressReports) and the job enqueued: this thread never writes to the apiserver, and a report
can change nothing but the job's status.trainerStatus. Answers are JSON; a refusal is a Kubernetes Status.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from io import BufferedIOBase
from typing import Any, Protocol

import structlog

from tfop.api.constants import ANNOTATION_PROGRESS_METRICS
from tfop.controller.plan.children.progress_reporting import token_audience
from tfop.controller.plan.controller_config import ProgressSettings
from tfop.controller.progress_reports import ProgressReports
from tfop.kube.access_review import ReviewError, bearer_token
from tfop.kube.ratelimit import TokenBucket
from tfop.objects import Object
from tfop.progress.report import MAX_BODY, Caller, Refusal, authorize, read_report, target_of
from tfop.progress.tokens import TokenReviewer
from tfop.tls import ContextSource, HTTPSServing

log = structlog.get_logger("tfop.progress")

MAX_RATED_JOBS = 10_000


class Jobs(Protocol):
    """What the endpoint reads of the controller (TFJobController)."""

    progress: ProgressReports
    leading: threading.Event

    def cached_pod(self, namespace: str, name: str) -> Object | None: ...

    def cached_job(self, key: str) -> Object | None: ...

    def progress_reported(self, key: str) -> None: ...


class JobRates:
    """A token bucket per job, for the `max_jobs` jobs that reported last."""

    def __init__(self, rate: float, burst: int, max_jobs: int = MAX_RATED_JOBS) -> None:
        self._rate, self._burst, self._max_jobs = rate, burst, max_jobs
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        with self._lock:
            bucket = self._buckets.pop(key, None) or TokenBucket(self._rate, self._burst)
            self._buckets[key] = bucket
            while len(self._buckets) > self._max_jobs:
                self._buckets.popitem(last=False)
            return bucket.try_take()


def metered(job: Object | None) -> bool:
    """Whether the job's reports are also a metric: per-job series are opt-in, so a cluster of thousands of jobs
    does not get thousands of series it did not ask for."""
    annotations = ((job or {}).get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(ANNOTATION_PROGRESS_METRICS, "")).lower() == "true"


def status_body(refusal: Refusal) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": refusal.message,
            "reason": refusal.reason, "code": refusal.code}


class ProgressHandling:
    """The decisions of one request, apart from HTTP: (code, answer)."""

    def __init__(self, jobs: Jobs, reviewer: TokenReviewer, rates: JobRates,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._jobs, self._reviewer, self._rates, self._now = jobs, reviewer, rates, now

    def handle(self, path: str, authorization: str | None, body: bytes) -> tuple[int, dict[str, Any]]:
        target = target_of(path)
        if target is None:
            return 404, status_body(Refusal(404, "NotFound", f"no such endpoint {path}"))
        token = bearer_token(authorization)
        if token is None:
            return 401, status_body(Refusal(401, "Unauthorized", "send the pod's token as a bearer token"))
        if not self._jobs.leading.is_set():
            return 503, status_body(Refusal(503, "ServiceUnavailable", "this replica does not lead; try again"))
        try:
            caller = self._reviewer.review(token, token_audience(target.namespace, target.name))
        except ReviewError as error:
            log.warning("cannot review a progress report's token", error=str(error), job=target.key)
            return 503, status_body(Refusal(503, "ServiceUnavailable", "the apiserver cannot review the token now"))
        if isinstance(caller, Refusal):
            return self._refused(target.key, caller, None)
        job = self._jobs.cached_job(target.key)
        refusal = authorize(target, caller, self._jobs.cached_pod(caller.namespace, caller.pod_name), job)
        if refusal is not None:
            return self._refused(target.key, refusal, caller)
        if not self._rates.allow(target.key):
            return self._refused(target.key, Refusal(429, "TooManyRequests", f"TFJob {target.key} reports more "
                                                      "often than allowed; report again later"), caller)
        report = read_report(body, self._now(), caller.pod_name)
        if isinstance(report, Refusal):
            return self._refused(target.key, report, caller)
        if report is not None:
            self._jobs.progress.put(target.key, report, time.monotonic(), metered=metered(job))
            self._jobs.progress_reported(target.key)
        return 200, json.loads(body)

    def _refused(self, key: str, refusal: Refusal, caller: Caller | None) -> tuple[int, dict[str, Any]]:
        # A job past its rate is told at debug: a pod reporting too often would otherwise fill the log.
        say = log.debug if refusal.code == 429 else log.info
        say("progress report refused", job=key, code=refusal.code, why=refusal.message,
            pod=f"{caller.namespace}/{caller.pod_name}" if caller else None)
        return refusal.code, status_body(refusal)


DISCARD_AT = 1 << 20  # an oversized body read and dropped so its sender sees the 413; larger ones are cut off
DISCARD_CHUNK = 64 * 1024


def discard(stream: BufferedIOBase, length: int) -> None:
    """Reads `length` bytes of `stream` and drops them, a chunk at a time (the handler's timeout bounds a slow one)."""
    while length > 0:
        chunk = stream.read(min(length, DISCARD_CHUNK))
        if not chunk:
            return
        length -= len(chunk)


class ProgressServer:
    def __init__(self, settings: ProgressSettings, handling: ProgressHandling, contexts: ContextSource) -> None:
        class Handler(BaseHTTPRequestHandler):
            timeout = 10.0  # a reporter that stops mid-request holds a thread no longer

            def do_POST(self) -> None:
                length = self.headers.get("Content-Length")
                if length is None or not length.isdigit():
                    self._send(411, status_body(Refusal(411, "BadRequest", "say the body's Content-Length")))
                    return
                if int(length) > MAX_BODY:
                    # Read past unparsed: closing on a client still sending makes its TLS stack fail on the write
                    # (EOF, reset) before it reads the 413. Beyond DISCARD_AT the refusal is only best effort.
                    self.close_connection = True
                    if int(length) <= DISCARD_AT:
                        discard(self.rfile, int(length))
                    self._send(413, status_body(Refusal(413, "RequestEntityTooLarge",
                                                        f"a report is at most {MAX_BODY} bytes")))
                    return
                body = self.rfile.read(int(length))
                self._send(*handling.handle(self.path, self.headers.get("Authorization"), body))

            def do_GET(self) -> None:
                self._send(405, status_body(Refusal(405, "MethodNotAllowed", "reports are POSTed")))

            def _send(self, code: int, answer: dict[str, Any]) -> None:
                data = json.dumps(answer, separators=(",", ":")).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if code in (429, 503):
                    self.send_header("Retry-After", "5")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._serving = HTTPSServing(settings.address, Handler, contexts, "progress")

    @property
    def address(self) -> str:
        return self._serving.address

    def start(self) -> None:
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()
