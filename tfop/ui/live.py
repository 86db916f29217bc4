"""Server-sent events: a page's live part is rendered again when the caches change (DEBOUNCE_SECONDS after the
change, so that a burst of events is one render; every change anywhere counts, since the caches do not say which
view it touches) and at least every REFRESH_SECONDS so that ages move, and sent whole as one `update` event.
Each render authorizes again (the access verdicts are cached briefly), and a denial ends the stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import anyio.to_thread

from tfop.ui.cache import ChangeFeed

DEBOUNCE_SECONDS = 1.0
REFRESH_SECONDS = 30.0


def sse_message(event: str, data: str) -> str:
    """One event; every line of `data` its own data field, as the format requires."""
    lines = data.splitlines() or [""]
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


async def live_updates(changes: ChangeFeed, render: Callable[[], str | None], first: str,
                       generation: int) -> AsyncIterator[str]:
    """`first` (rendered at `generation` of the caches), then `render` again as the caches change. `render` runs on
    a worker thread (it asks the apiserver and reads the caches) and returns None when the user may no longer see
    it."""
    html: str | None = first
    while True:
        if html is None:
            yield sse_message("denied", "")
            return
        yield sse_message("update", html)
        moved = await changes.wait_past(generation, REFRESH_SECONDS)
        if moved != generation:
            await asyncio.sleep(DEBOUNCE_SECONDS)
        generation = changes.generation
        html = await anyio.to_thread.run_sync(render)
