"""A response's header block parsed without the email package: http.client hands every response's headers to
`email.parser`, whose feed parser takes some 80 microseconds of CPU for the apiserver's seven header lines; split
at the colon they take under ten, and a request costs the client a sixth less (`python -m bench.client_bench`,
medians of three runs side by side: 312 against 270 microseconds a request).

The apiserver's headers are plain `Name: value` lines. A block with anything else (a folded line, a line without a
colon) goes to the email parser as before, so what a caller reads is the same either way.
"""

from __future__ import annotations

import email.parser
import http.client
import re
import types
from typing import Any

# A header line as the email parser reads one: a name of printable characters but the colon, then the colon.
_PLAIN = re.compile(r"[\041-\071\073-\176]+:")


def parse_headers(fp: Any, _class: type[http.client.HTTPMessage] = http.client.HTTPMessage) -> http.client.HTTPMessage:
    """http.client.parse_headers's answer, from the same lines read within the same limits."""
    lines = http.client._read_headers(fp)  # type: ignore[attr-defined]  # the stdlib's own reader and its limits
    message = _class()
    for raw in lines[:-1]:  # the last is the blank line (or end of stream) that ended the block
        line = raw.decode("iso-8859-1")
        plain = _PLAIN.match(line)
        if plain is None:  # folded, or not a header line: the email parser says what it means
            return email.parser.Parser(_class=_class).parsestr(b"".join(lines).decode("iso-8859-1"))
        message.set_raw(line[:plain.end() - 1], line[plain.end():].lstrip(" \t").rstrip("\r\n"))
    return message


class FastHeadersResponse(http.client.HTTPResponse):
    """http.client's response, its header block read by `parse_headers` above. `begin` is the stdlib's own code,
    run with that one name bound to this module's function (no copy of it, and http.client itself unchanged)."""

    begin = types.FunctionType(http.client.HTTPResponse.begin.__code__,
                               {**vars(http.client), "parse_headers": parse_headers}, "begin")
