"""The job list's rows, rendered once per version of their job: a list of 2,000 jobs is sent again on every
change anywhere (live.py), and escaping its strings was most of its time. A row is HTML in two parts around its
times (created, started, finished, duration), the cells that move without the job changing, so a cached row stays
right as time passes.

Callers may rely on: `row(job)` is the row of exactly that resourceVersion of the job (a job without one is
rendered each time); entries are dropped with `forget` when a job is deleted, so the cache holds at most one row
per job the informer has; it is safe to use from several threads (live streams render on worker threads)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup

from tfop.objects import Object
from tfop.ui.views.clock_text import duration_html, time_html
from tfop.ui.views.job_list import JobRow, job_row


@dataclass(frozen=True)
class RenderedRow:
    row: JobRow
    head: Markup  # the cells before the times
    tail: Markup  # the cells after them

    def html(self, now: datetime | None) -> Markup:
        """The row with its relative times as at `now`; None leaves them for the browser to write (live.js), so
        that the row's HTML changes only with its job."""
        row = self.row
        times = "".join(f'<td class="time col-{name}">{cell}</td>' for name, cell in (
            ("created", time_html(row.created, now)), ("started", time_html(row.started, now)),
            ("finished", time_html(row.finished, now)),
            ("duration", duration_html(row.started, row.finished, now))))
        return Markup(f"{self.head}{times}{self.tail}")


RenderRow = Callable[[JobRow], tuple[Markup, Markup]]


class RowCache:
    def __init__(self, render: RenderRow) -> None:
        self._render = render
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], tuple[str, RenderedRow]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def row(self, job: Object) -> RenderedRow:
        meta = job.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        version = str(meta.get("resourceVersion") or "")
        with self._lock:
            cached = self._rows.get(key)
        if cached is not None and version and cached[0] == version:
            return cached[1]
        row = job_row(job)
        head, tail = self._render(row)
        rendered = RenderedRow(row, head, tail)
        if version:
            with self._lock:
                self._rows[key] = (version, rendered)
        return rendered

    def forget(self, job: Object, _stale: bool = False) -> None:
        meta = job.get("metadata") or {}
        with self._lock:
            self._rows.pop((str(meta.get("namespace", "")), str(meta.get("name", ""))), None)
