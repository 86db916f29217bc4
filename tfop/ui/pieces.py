"""The pieces of the page's live parts (live_patch.py), each rendered by its template macro: the list's count,
pager and rows; a job's state, links, summary, conditions, timeline, and its replicas' and events' rows. The ids
are those the templates give the same elements, so that live.js finds what a patch sets."""

from __future__ import annotations

from typing import Any

from tfop.ui.live_patch import Piece
from tfop.ui.views.list_query import ListQuery

# The list's columns: (the ?sort= key, or None for one it does not sort by; header; CSS class of its cells).
COLUMNS = (("namespace", "Namespace", "namespace"), ("name", "Name", "name"), ("state", "State", "state"),
           ("created", "Created", "created"), ("started", "Started", "started"), ("finished", "Finished", "finished"),
           ("duration", "Duration", "duration"), (None, "Replicas (active / succeeded / failed)", "replicas"),
           ("restarts", "Restarts", "restarts"), (None, "Queue / gang", "queue"), (None, "Why", "why"))


def list_pieces(macros: Any, context: dict[str, Any], query: ListQuery) -> list[Piece]:
    """`macros`: _job_table_pieces.html's; `context`: the list's, its rows rendered without their times."""
    rows = [Piece("job-rows", key, str(html)) for key, html in zip(context["keys"], context["rows"], strict=True)]
    return [Piece("", "job-count", str(macros.count(context["page"]))),
            Piece("", "pager", str(macros.pager(query, context["page"]))),
            *(rows or [Piece("job-rows", "job-none", str(macros.none_row(COLUMNS, context["empty"])))])]


def job_pieces(macros: Any, context: dict[str, Any], namespace: str) -> list[Piece]:
    """`macros`: _job_live_pieces.html's; `context`: the job page's."""
    replicas = [Piece("replica-rows", f"replica:{row.pod}", str(macros.replica_row(row, context["pod_url"])))
                for row in context["replicas"] or []]
    events = [Piece("event-rows", f"event:{row.key}", str(macros.event_row(row))) for row in context["events"] or []]
    return [Piece("", "job-state-line", str(macros.state_line(context["state"]))),
            Piece("", "job-tensorboard", str(macros.tensorboard_link(context["tensorboard_url"]))),
            Piece("", "job-links", str(macros.links_list(context["links"]))),
            Piece("", "job-summary", str(macros.summary_part(context["summary"], context["replicas"]))),
            Piece("", "conditions", str(macros.conditions_table(context["conditions"]))),
            *(replicas or [Piece("replica-rows", "replicas-none",
                                 str(macros.replicas_none(context["replicas"], namespace)))]),
            Piece("", "timeline-part", str(macros.timeline_part(context["timeline"], context["happenings"]))),
            *(events or [Piece("event-rows", "events-none", str(macros.events_none(context["events"], namespace)))])]
