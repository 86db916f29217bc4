"""Following a replica's log as it grows: the apiserver's `pods/log?follow=true`, read by a thread of its own
and sent on as server-sent events, `lines` events whose data is the log's lines (text: the page appends them as
text nodes, never as markup), then one `end` when the log ends (the container stopped) or `denied` when the user
may no longer read it.

What callers may rely on: memory is bounded (BUFFER_LINES lines of at most MAX_LINE bytes wait to be sent; when
the browser reads slower than the log grows, the reader waits and the apiserver's stream with it); the user's
right to read the log is asked again at least every RECHECK_SECONDS (the verdicts are cached 5 s), and the stream
ends once it is gone; when the client goes, or the stream ends for any reason, the apiserver's stream is closed
and its reader thread ends."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Protocol

import anyio.to_thread
import structlog

from tfop.kube.errors import ApiError
from tfop.ui.live import sse_message

log = structlog.get_logger("tfop.ui")
BUFFER_LINES = 256
MAX_LINE = 8192  # bytes: a longer line is sent in pieces
MAX_BATCH = 200  # lines in one event
RECHECK_SECONDS = 5.0
PUT_WAIT = 0.5  # how often a reader waiting for room looks whether it should stop


_END = object()


class Lines(Protocol):
    """A stream of a log's lines (kube/streams.py's LineStream) that another thread may close."""

    def __iter__(self) -> Iterator[bytes]: ...

    def __next__(self) -> bytes: ...

    def close(self) -> None: ...


def _read(lines: Iterator[bytes], into: queue.Queue[object], stop: threading.Event,
          wake: Callable[[], None]) -> None:
    """The reader thread: every line into `into` (waiting for room), then _END or the error that ended it."""
    ending: object = _END
    try:
        for line in lines:
            while not stop.is_set():
                try:
                    into.put(line, timeout=PUT_WAIT)
                    break
                except queue.Full:
                    continue
            if stop.is_set():
                return
            wake()
    except (ApiError, OSError) as error:
        ending = error
    while not stop.is_set():
        try:
            into.put(ending, timeout=PUT_WAIT)
            break
        except queue.Full:
            continue
    wake()


async def follow_log(open_lines: Callable[[], Lines], still_allowed: Callable[[], bool],
                     recheck_seconds: float = RECHECK_SECONDS) -> AsyncGenerator[str, None]:
    """The events of one followed log. `open_lines` opens the apiserver's stream (it may raise ApiError, told as
    an `end` with the reason), `still_allowed` asks again whether the user may read it; both run on worker
    threads."""
    try:
        lines = await anyio.to_thread.run_sync(open_lines)
    except ApiError as error:
        yield sse_message("end", f"The apiserver gave no log: {error}")
        return
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()
    buffered: queue.Queue[object] = queue.Queue(maxsize=BUFFER_LINES)
    stop = threading.Event()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: no one follows any more
            loop.call_soon_threadsafe(ready.set)

    reader = threading.Thread(target=_read, args=(lines, buffered, stop, wake), name="tfop-ui-log", daemon=True)
    reader.start()
    checked = time.monotonic()
    try:
        yield sse_message("started", "")
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ready.wait(), recheck_seconds)
            ready.clear()
            batch: list[str] = []
            ending: object = None
            while len(batch) < MAX_BATCH:
                try:
                    item = buffered.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, bytes):
                    batch.append(item.decode("utf-8", errors="replace"))
                else:
                    ending = item
                    break
            if len(batch) == MAX_BATCH:
                ready.set()  # more may wait
            if batch:
                yield sse_message("lines", "\n".join(batch))
            if ending is not None:
                yield sse_message("end", "" if ending is _END else f"The log stream broke: {ending}")
                return
            if time.monotonic() - checked >= recheck_seconds:
                checked = time.monotonic()
                if not await anyio.to_thread.run_sync(still_allowed):
                    yield sse_message("denied", "")
                    return
    finally:
        stop.set()
        lines.close()


DEFAULT_TAIL = 500
MAX_TAIL = 5000


def tail_lines(text: str | None) -> int:
    """The lines of a log to show (?tail=N): DEFAULT_TAIL unless asked, MAX_TAIL at most."""
    return min(int(text), MAX_TAIL) if text and text.isdigit() and int(text) > 0 else DEFAULT_TAIL
