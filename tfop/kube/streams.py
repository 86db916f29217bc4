"""Answers the apiserver keeps sending: a watch's events, a followed log's lines, read as they arrive."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import urllib3

from tfop.kube.errors import TransportError


class LineStream(Iterator[bytes]):
    """The lines of a streamed answer as they arrive, without their newline (a last one without it too).

    `close()` may be called from any thread: it shuts the socket down so a reader blocked in another thread
    wakes at once and the iteration ends. `max_line` bounds the memory a line without a newline takes: it is cut
    into pieces of that many bytes.
    """

    def __init__(self, response: urllib3.BaseHTTPResponse, max_line: int | None = None) -> None:
        self._response = response
        self._chunks = response.stream(64 * 1024)
        self._buffer = bytearray()
        self._max_line = max_line
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False

    def __iter__(self) -> LineStream:
        return self

    def __enter__(self) -> LineStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __next__(self) -> bytes:
        with self._lock:
            if self._closed:
                raise StopIteration
            self._reading = True
        finished = False
        try:
            while True:
                end = self._buffer.find(b"\n")
                if self._max_line is not None and (end > self._max_line or (
                        end < 0 and len(self._buffer) >= self._max_line)):
                    line = bytes(self._buffer[:self._max_line])
                    del self._buffer[:self._max_line]
                    return line
                if end >= 0:
                    line = bytes(self._buffer[:end])
                    del self._buffer[:end + 1]
                    return line
                try:
                    chunk = next(self._chunks, None)
                except (urllib3.exceptions.HTTPError, OSError) as exc:
                    finished = True
                    if self._closed:
                        raise StopIteration from None
                    raise TransportError(f"stream broken: {exc}") from exc
                if chunk is None:
                    finished = True
                    if self._buffer and not self._closed:  # a last line without its newline (closed: a fragment)
                        line = bytes(self._buffer)
                        self._buffer.clear()
                        return line
                    raise StopIteration
                self._buffer += chunk
        finally:
            with self._lock:
                self._reading = False
                closed = self._closed
                self._closed = closed or finished
            if closed or finished:
                self._response.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
        if reading:
            with contextlib.suppress(ValueError, RuntimeError, OSError):
                self._response.shutdown()  # the reader wakes, sees _closed and closes the response
        else:
            self._response.close()


class WatchStream(Iterator[dict[str, Any]]):
    """The events of one open watch, parsed line by line as they arrive; `close()` as LineStream's."""

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._lines = LineStream(response)

    def __iter__(self) -> WatchStream:
        return self

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __next__(self) -> dict[str, Any]:
        while True:
            line = next(self._lines)
            if line.strip():
                try:
                    event: dict[str, Any] = json.loads(line)
                except ValueError as exc:  # the apiserver ends every event with a newline: this one was cut short
                    raise TransportError(f"stream broken: an event cut short after {len(line)} bytes") from exc
                return event

    def close(self) -> None:
        self._lines.close()
