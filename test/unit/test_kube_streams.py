"""Streamed answers read line by line: a followed log's lines, cut when a line outgrows the bound, and a watch's
events; from a urllib3 response over bytes, as the client gets them."""

from __future__ import annotations

import io
from collections.abc import Generator

import pytest
import urllib3

from tfop.kube.errors import TransportError
from tfop.kube.streams import LineStream, WatchStream


def response(body: bytes) -> urllib3.HTTPResponse:
    return urllib3.HTTPResponse(body=io.BytesIO(body), preload_content=False)


def test_lines_keep_empty_ones_and_a_last_one_without_its_newline() -> None:
    assert list(LineStream(response(b"one\n\ntwo\nthree"))) == [b"one", b"", b"two", b"three"]


def test_a_line_longer_than_the_bound_comes_in_pieces() -> None:
    assert list(LineStream(response(b"abcdefgh\nxy\n"), max_line=3)) == [b"abc", b"def", b"gh", b"xy"]


def test_a_closed_stream_gives_nothing_more() -> None:
    lines = LineStream(response(b"one\ntwo\n"))
    assert next(lines) == b"one"
    lines.close()
    assert list(lines) == []


def test_a_watch_gives_events_and_skips_blank_lines() -> None:
    body = b'{"type": "ADDED", "object": {}}\n\n{"type": "DELETED", "object": {}}'
    assert [event["type"] for event in WatchStream(response(body))] == ["ADDED", "DELETED"]


def test_a_watch_event_cut_short_is_a_broken_stream_not_a_decoding_error() -> None:
    events = WatchStream(response(b'{"type": "ADDED", "object": {}}\n{"type": "MODIFIED", "obj'))
    assert next(events)["type"] == "ADDED"
    with pytest.raises(TransportError, match="an event cut short after 25 bytes"):
        next(events)


class ClosedWhileReading(urllib3.HTTPResponse):
    """A stream another thread closes while its reader waits for the rest of a line (an operator stopping)."""

    lines: LineStream

    def stream(self, amt: int | None = 2**16, decode_content: bool | None = None) -> Generator[bytes]:
        yield b'{"type": "ADDED", "object": {}}\n{"type": "MOD'
        self.lines.close()  # the socket shut down: its end comes next


def test_a_stream_closed_while_a_line_is_read_gives_no_fragment() -> None:
    answer = ClosedWhileReading(body=io.BytesIO(b""), preload_content=False)
    answer.lines = LineStream(answer)
    assert list(answer.lines) == [b'{"type": "ADDED", "object": {}}']
