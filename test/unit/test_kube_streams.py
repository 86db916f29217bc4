"""Streamed answers read line by line: a followed log's lines, cut when a line outgrows the bound, and a watch's
events; from a urllib3 response over bytes, as the client gets them."""

from __future__ import annotations

import io

import urllib3

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
