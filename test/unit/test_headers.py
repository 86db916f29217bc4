"""A response's headers read without the email package (tfop/kube/headers.py) are what http.client's own parser
reads: each row's items are written out, and both parsers must give them."""

from __future__ import annotations

import http.client
import io

import pytest

from tfop.kube.headers import parse_headers

ROWS: list[tuple[str, bytes, list[tuple[str, str]]]] = [
    ("the apiserver's answer to a create",
     (b"Audit-Id: 7c1b6c7e\r\nCache-Control: no-cache, private\r\nContent-Type: application/json\r\n"
      b"Date: Mon, 07 Dec 2026 15:00:00 GMT\r\nContent-Length: 4321\r\n\r\n"),
     [("Audit-Id", "7c1b6c7e"), ("Cache-Control", "no-cache, private"), ("Content-Type", "application/json"),
      ("Date", "Mon, 07 Dec 2026 15:00:00 GMT"), ("Content-Length", "4321")]),
    ("a name twice keeps both, in order",
     b"Warning: 299 - \"a\"\r\nWarning: 299 - \"b\"\r\n\r\n",
     [("Warning", '299 - "a"'), ("Warning", '299 - "b"')]),
    ("an empty value, a value's trailing blanks, no blank after the colon",
     b"X-Empty:\r\nX-Padded: v  \r\nX-Tight:v\r\n\r\n",
     [("X-Empty", ""), ("X-Padded", "v  "), ("X-Tight", "v")]),
    ("lines ended by a bare newline",
     b"A: 1\nB: 2\n\n",
     [("A", "1"), ("B", "2")]),
    ("a folded line: the email parser's reading",
     b"A: 1\r\n 2\r\nB: 3\r\n\r\n",
     [("A", "1\r\n 2"), ("B", "3")]),
    ("a line without a colon ends the headers, as the email parser reads it",
     b"A: 1\r\nnot a header\r\nB: 2\r\n\r\n",
     [("A", "1")]),
    ("a name with a blank in it is no header either",
     b"A: 1\r\nBad Name: 2\r\n\r\n",
     [("A", "1")]),
]


@pytest.mark.parametrize(("block", "items"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_the_items_read(block: bytes, items: list[tuple[str, str]]) -> None:
    assert list(http.client.parse_headers(io.BytesIO(block)).items()) == items
    message = parse_headers(io.BytesIO(block + b"the body"))
    assert list(message.items()) == items
    assert isinstance(message, http.client.HTTPMessage)


def test_the_body_after_the_headers_is_left_to_read() -> None:
    stream = io.BytesIO(b"A: 1\r\n\r\n{}")
    parse_headers(stream)
    assert stream.read() == b"{}"


def test_more_than_a_hundred_headers_are_refused_as_by_http_client() -> None:
    with pytest.raises(http.client.HTTPException, match="got more than 100 headers"):
        parse_headers(io.BytesIO(b"A: 1\r\n" * 101 + b"\r\n"))
