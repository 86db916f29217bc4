"""Bytes a live update of the page sends, when one job of 2,000 changes state (the list's first page, 50 rows) and
when one pod of a job of 500 replicas and 1,000 events changes phase: the stream's first event, the patch after
the change (tfop/ui/live_patch.py), and the whole fragment that a stream sending the view again would send each
time, for comparison. Pure rendering from made-up objects, as bench.ui_render; the apiserver is not involved.
Run: PYTHONPATH=hack:. python -m bench.ui_live_bytes"""

from __future__ import annotations

import copy
from typing import Any

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from bench.ui_render import CONDITIONS, NOW, events, jobs, pods
from tfop.ui.app import HERE, job_url
from tfop.ui.live import sse_message
from tfop.ui.live_patch import Piece, patch
from tfop.ui.pieces import COLUMNS
from tfop.ui.row_cache import RowCache
from tfop.ui.views.clock_text import time_html
from tfop.ui.views.job_list import JobRow, page_of, select_rows
from tfop.ui.views.job_page import event_rows, replica_rows
from tfop.ui.views.list_query import ListQuery
from tfop.ui.views.summary import summary
from tfop.ui.views.timeline import layout

SERVER_NOW = "2026-03-01T12:00:00Z"


def main() -> None:
    templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)
    templates.globals.update(job_url=job_url, time_html=lambda moment: time_html(moment, None))
    row_macros: Any = templates.get_template("_job_row.html").module
    list_macros: Any = templates.get_template("_job_table_pieces.html").module
    job_macros: Any = templates.get_template("_job_live_pieces.html").module

    def render_row(row: JobRow) -> tuple[Markup, Markup]:
        return Markup(row_macros.head(row)), Markup(row_macros.tail(row))

    cache = RowCache(render_row)
    query = ListQuery()

    def list_view(listed: list[dict[str, Any]]) -> tuple[list[Piece], str]:
        selected = select_rows([cache.row(job) for job in listed], lambda rendered: rendered.row, NOW)
        page = page_of(len(selected), "1", "")
        shown = selected[page.first:page.last]
        pieces = [Piece("", "job-count", str(list_macros.count(page))), Piece("", "pager", str(list_macros.pager(
            query, page))), *(Piece("job-rows", f"job:{r.row.namespace}/{r.row.name}", str(r.html(None)))
                              for r in shown)]
        whole = templates.get_template("_job_table.html").render(rows=[r.html(NOW) for r in shown], query=query,
                                                                 page=page, columns=COLUMNS, empty="")
        return pieces, whole

    listed = jobs(2000)
    before, whole = list_view(listed)
    moved = copy.deepcopy(listed)
    # The job on top of the page fails.
    top = next(piece.key for piece in before if piece.parent)
    failed = next(job for job in moved if f"job:{job['metadata']['namespace']}/{job['metadata']['name']}" == top)
    failed["metadata"]["resourceVersion"] = "9999"
    failed["status"]["conditions"] = [*CONDITIONS, {"type": "Failed", "status": "True", "message": "exited 1"}]
    after, _ = list_view(moved)
    report("the list (first page of 50 of 2,000 jobs), one job failed", before, after, whole)

    def job_view(replicas: list[dict[str, Any]]) -> tuple[list[Piece], str]:
        rows, recorded = replica_rows(replicas), event_rows(events(1000))
        timeline = layout(replicas, CONDITIONS, NOW)
        pieces = [Piece("replica-rows", f"replica:{row.pod}", str(job_macros.replica_row(row, str)))
                  for row in rows]
        pieces += [Piece("", "job-summary", str(job_macros.summary_part(summary({}, replicas, [], {}), rows))),
                   Piece("", "timeline-part", str(job_macros.timeline_part(timeline, [])))]
        pieces += [Piece("event-rows", f"event:{row.key}", str(job_macros.event_row(row))) for row in recorded]
        whole = templates.get_template("_job_live.html").render(
            namespace="a", name="big", state="Running", conditions=[], links=[], replicas=rows, timeline=timeline,
            happenings=[], events=recorded, pod_url=str, summary=summary({}, replicas, [], {}))
        return pieces, whole

    replicas = pods(500)
    before, whole = job_view(replicas)
    changed = copy.deepcopy(replicas)
    changed[7]["status"]["phase"] = "Failed"
    after, _ = job_view(changed)
    report("a job of 500 replicas and 1,000 events, one pod's phase changed (its timeline unchanged)",
           before, after, whole)


def report(name: str, before: list[Piece], after: list[Piece], whole: str) -> None:
    first = sse_message("patch", patch([], before).json(SERVER_NOW))
    change = patch(before, after)
    assert change, "the change made no difference to the view"
    update = sse_message("patch", change.json(SERVER_NOW))
    again = sse_message("update", whole)
    print(f"{name}: first event {len(first.encode()):,} B; the update {len(update.encode()):,} B "
          f"(the whole fragment again: {len(again.encode()):,} B)")


if __name__ == "__main__":
    main()
