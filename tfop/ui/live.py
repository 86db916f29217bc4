"""Server-sent events: a page's live part is rendered again as pieces (live_patch.py) when the caches change
(DEBOUNCE_SECONDS after the change, so that a burst of events is one render; every change anywhere counts, since
the caches do not say which view it touches) and at least every REFRESH_SECONDS, and only what changed is sent,
as one `patch` event: first every piece, then the difference from the last render. A render that changed nothing
sends a comment line, which keeps proxies from closing the idle stream. Each render authorizes again (the access
verdicts are cached briefly); when the user may no longer see the view, or it is gone, a `gone` event says which
("denied" or "deleted") and the stream ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence

import anyio.to_thread

from tfop.ui.cache import ChangeFeed
from tfop.ui.live_patch import Piece, patch

DEBOUNCE_SECONDS = 1.0
REFRESH_SECONDS = 30.0
DELETED = "deleted"
DENIED = "denied"
KEEP_ALIVE = ": nothing changed\n\n"


def sse_message(event: str, data: str) -> str:
    """One event; every line of `data` its own data field, as the format requires."""
    lines = data.splitlines() or [""]
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


async def live_updates(changes: ChangeFeed, render: Callable[[], Sequence[Piece] | str], first: Sequence[Piece],
                       generation: int, clock: Callable[[], str]) -> AsyncIterator[str]:
    """`first` (rendered at `generation` of the caches), then what changed as the caches change. `render` runs on a
    worker thread (it asks the apiserver and reads the caches) and returns DELETED or DENIED when the view is gone
    or the user may no longer see it; `clock` gives the server's time for the browser's relative times."""
    shown: Sequence[Piece] = ()
    rendered: Sequence[Piece] | str = first
    while True:
        if isinstance(rendered, str):
            yield sse_message("gone", rendered)
            return
        change = patch(shown, rendered)
        yield sse_message("patch", change.json(clock())) if change else KEEP_ALIVE
        shown = rendered
        moved = await changes.wait_past(generation, REFRESH_SECONDS)
        if moved != generation:
            await asyncio.sleep(DEBOUNCE_SECONDS)
        generation = changes.generation
        rendered = await anyio.to_thread.run_sync(render)
