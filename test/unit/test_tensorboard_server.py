"""The filter tfop's TensorBoard server puts around TensorBoard's WSGI application (tfop/psserver/
tensorboard_server.py): the `identity` content encoding TensorBoard gives its index page is dropped, since the
apiserver's proxy loses the body of an HTML answer that names it; every other header passes as it was."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from tfop.psserver.tensorboard_server import without_identity_encoding

Headers = list[tuple[str, str]]


@pytest.mark.parametrize(("answered", "passed"), [
    # TensorBoard's index page, as 2.21 answers it.
    ([("Content-Length", "205748"), ("Content-Encoding", "identity"), ("Content-Type", "text/html; charset=utf-8")],
     [("Content-Length", "205748"), ("Content-Type", "text/html; charset=utf-8")]),
    # However it is spelt.
    ([("content-encoding", " Identity ")], []),
    # A real encoding is what the proxy decodes to rewrite, and the client decodes: kept.
    ([("Content-Encoding", "gzip"), ("Content-Type", "text/javascript")],
     [("Content-Encoding", "gzip"), ("Content-Type", "text/javascript")]),
    ([("Content-Type", "application/json")], [("Content-Type", "application/json")]),
])
def test_only_an_identity_encoding_is_taken_out(answered: Headers, passed: Headers) -> None:
    seen: list[tuple[str, Headers]] = []

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        start_response("200 OK", answered)
        return [b"body"]

    def start_response(status: str, headers: Headers, *exc_info: Any) -> None:
        seen.append((status, headers))

    assert list(without_identity_encoding(app)({}, start_response)) == [b"body"]
    assert seen == [("200 OK", passed)]


def test_an_error_start_passes_its_exc_info_on() -> None:
    """WSGI's third argument, which lets an app replace headers after an error, reaches the server."""
    seen: list[tuple[Any, ...]] = []
    failure = (ValueError, ValueError("late"), None)

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        start_response("500 Internal Server Error", [("Content-Encoding", "identity")], failure)
        return [b""]

    list(without_identity_encoding(app)({}, lambda *args: seen.append(args)))
    assert seen == [("500 Internal Server Error", [], failure)]
