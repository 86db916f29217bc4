"""Live updates send only what changed: the patch between two renders of a view's pieces, written out as rows,
and the stream of events a view's renders make (everything first, then differences, a comment when nothing
changed, and why it ended)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from tfop.ui import live
from tfop.ui.cache import ChangeFeed
from tfop.ui.live_patch import Patch, Piece, patch

COUNT = Piece("", "job-count", "<p id=job-count>3 jobs</p>")
A, B, C = (Piece("job-rows", f"job:{name}", f"<tr id=job:{name}>{name}</tr>") for name in "abc")
B2 = Piece("job-rows", "job:b", "<tr id=job:b>b, Running</tr>")


@pytest.mark.parametrize(("before", "after", "expected"), [
    # The first render: everything, and each container's order.
    ((), (COUNT, A, B), Patch((COUNT, A, B), (), {"job-rows": ("job:a", "job:b")})),
    ((COUNT, A, B), (COUNT, A, B), Patch()),
    # One row changed: that row alone; the order is the same, so it is not sent.
    ((COUNT, A, B, C), (COUNT, A, B2, C), Patch((B2,), (), {})),
    # A row gone: its id, and the new order.
    ((COUNT, A, B, C), (COUNT, A, C), Patch((), ("job:b",), {"job-rows": ("job:a", "job:c")})),
    # A new row on top: it, and the new order.
    ((COUNT, A, B), (COUNT, C, A, B), Patch((C,), (), {"job-rows": ("job:c", "job:a", "job:b")})),
    # Rows that moved: only the order.
    ((A, B, C), (C, B, A), Patch((), (), {"job-rows": ("job:c", "job:b", "job:a")})),
    # A fixed piece changed.
    ((COUNT, A), (Piece("", "job-count", "<p id=job-count>1 job</p>"), A),
     Patch((Piece("", "job-count", "<p id=job-count>1 job</p>"),), (), {})),
])
def test_a_patch_holds_only_what_changed(before: Sequence[Piece], after: Sequence[Piece], expected: Patch) -> None:
    assert patch(before, after) == expected
    assert bool(patch(before, after)) is bool(expected.changed or expected.removed or expected.order)


def test_a_patch_as_the_browser_reads_it() -> None:
    assert json.loads(Patch((B2,), ("job:c",), {"job-rows": ("job:a", "job:b")}).json("2026-03-01T12:00:00Z")) == {
        "now": "2026-03-01T12:00:00Z", "set": [["job-rows", "job:b", "<tr id=job:b>b, Running</tr>"]],
        "remove": ["job:c"], "order": {"job-rows": ["job:a", "job:b"]}}


def test_a_stream_sends_everything_then_differences_then_why_it_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "DEBOUNCE_SECONDS", 0.0)
    renders: list[Sequence[Piece] | str] = [(COUNT, A, B), (COUNT, A, B), (COUNT, A, B2), live.DELETED]

    async def run() -> list[str]:
        changes = ChangeFeed()

        def render() -> Sequence[Piece] | str:
            changes.bump()  # the next render waits for a change: there is one
            return renders.pop(0)

        changes.bump()
        stream = live.live_updates(changes, render, (COUNT, A), 0, lambda: "2026-03-01T12:00:00Z")
        return [message async for message in stream]

    messages = asyncio.run(run())
    assert [message.split("\n")[0] for message in messages] == [
        "event: patch", "event: patch", ": nothing changed", "event: patch", "event: gone"]
    first, added = (json.loads(messages[i].split("\n")[1].removeprefix("data: ")) for i in (0, 1))
    assert [key for _, key, _ in first["set"]] == ["job-count", "job:a"]
    assert (added["set"], added["order"]) == ([["job-rows", "job:b", B.html]], {"job-rows": ["job:a", "job:b"]})
    changed = json.loads(messages[3].split("\n")[1].removeprefix("data: "))
    assert (changed["set"], changed["remove"], changed["order"]) == ([["job-rows", "job:b", B2.html]], [], {})
    assert messages[-1] == "event: gone\ndata: deleted\n\n"
