"""The apiserver's view of the requests the operator under test made, from the audit log.

apiserver_request_total has no user or user-agent label, so the bench gives the contender its own client
certificate (user bench-operator) and the audit policy logs that user's requests, one line per stage. It also
logs the cluster admin's writes to batch Jobs and Pods: the Job controller (in the controller-manager, which runs as
the admin) creates the pods of tfop's Jobs backend, and its user agent ends in "/job-controller". A run owns the
lines written between two offsets of the file: contenders run one at a time.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench.cluster import ADMIN_USER, OPERATOR_USER

JOB_CONTROLLER_AGENT = "/job-controller"  # the controller-manager appends each controller's name


@dataclass(frozen=True)
class Request:
    what: str  # verb and resource, e.g. "create pods", "update tfjobs/status"
    code: int
    received: float  # epoch seconds


class AuditLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def offset(self) -> int:
        """Where the next request's lines will start (after the last complete line)."""
        try:
            with self.path.open("rb") as log:
                size = log.seek(0, 2)
                tail_start = max(0, size - 65536)
                log.seek(tail_start)
                return tail_start + log.read().rfind(b"\n") + 1
        except FileNotFoundError:
            return 0

    def requests(self, start: int, end: int | None = None, job_controller: bool = False) -> list[Request]:
        """The operator user's requests (or the Job controller's) logged between two offsets; a long request (a
        watch) logs two stages and counts once."""
        try:
            with self.path.open("rb") as log:
                log.seek(start)
                data = log.read() if end is None else log.read(end - start)
        except FileNotFoundError:
            return []
        data = data[:data.rfind(b"\n") + 1]  # a line still being written belongs to a later read
        seen: set[str] = set()
        found: list[Request] = []
        for line in data.splitlines():
            event = json.loads(line)
            user = event.get("user", {}).get("username")
            mine = (user == ADMIN_USER and event.get("userAgent", "").endswith(JOB_CONTROLLER_AGENT)
                    if job_controller else user == OPERATOR_USER)
            if not mine or event["auditID"] in seen:
                continue
            seen.add(event["auditID"])
            ref = event.get("objectRef") or {}
            resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
            found.append(Request(f"{event['verb']} {resource}".strip(),
                                 int((event.get("responseStatus") or {}).get("code", 0)),
                                 datetime.fromisoformat(event["requestReceivedTimestamp"]).timestamp()))
        return found


def by_kind(requests: Iterable[Request], until: float | None = None) -> dict[str, int]:
    """Counts by verb and resource, most frequent first, of the requests received up to `until` (epoch)."""
    counts = Counter(r.what for r in requests if until is None or r.received <= until)
    return dict(counts.most_common())


def failed(requests: Iterable[Request]) -> dict[str, int]:
    """Counts of requests answered with an error, by verb, resource and code (e.g. 409 conflicts)."""
    counts = Counter(f"{r.what} {r.code}" for r in requests if r.code >= 400)
    return dict(counts.most_common())
