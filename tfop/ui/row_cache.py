"""The job list's rows, rendered once per version of their job: a list of 2,000 jobs is sent again on every
change anywhere (live.py), and escaping its strings was most of its time. A row is HTML in two parts around its
age, the one cell that moves without the job changing, so a cached row stays right as time passes.

Callers may rely on: `row(job)` is the row of exactly that resourceVersion of the job (a job without one is
rendered each time); entries are dropped with `forget` when a job is deleted, so the cache holds at most one row
per job the informer has; it is safe to use from several threads (live streams render on worker threads)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

from tfop.api.timestamps import parse_time
from tfop.objects import Object
from tfop.ui.views.clock_text import age_text
from tfop.ui.views.job_list import JobRow, job_row


@dataclass(frozen=True)
class RenderedRow:
    row: JobRow  # its age is as when it was rendered: `html` writes the age at the moment asked
    created: datetime | None
    head: Markup  # the cells before the age
    tail: Markup  # the cells after it

    def html(self, now: datetime) -> Markup:
        age = age_text((now - self.created).total_seconds()) if self.created else ""
        return Markup(f"{self.head}<td>{escape(age)}</td>{self.tail}")


RenderRow = Callable[[JobRow], tuple[Markup, Markup]]


class RowCache:
    def __init__(self, render: RenderRow) -> None:
        self._render = render
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], tuple[str, RenderedRow]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def row(self, job: Object, now: datetime) -> RenderedRow:
        meta = job.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        version = str(meta.get("resourceVersion") or "")
        with self._lock:
            cached = self._rows.get(key)
        if cached is not None and version and cached[0] == version:
            return cached[1]
        row = job_row(job, now)
        head, tail = self._render(row)
        rendered = RenderedRow(row, parse_time(meta.get("creationTimestamp")), head, tail)
        if version:
            with self._lock:
                self._rows[key] = (version, rendered)
        return rendered

    def forget(self, job: Object, _stale: bool = False) -> None:
        meta = job.get("metadata") or {}
        with self._lock:
            self._rows.pop((str(meta.get("namespace", "")), str(meta.get("name", ""))), None)
