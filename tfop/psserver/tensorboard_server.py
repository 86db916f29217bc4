"""TensorBoard as tfop serves it for a job: TensorBoard's own server and plugins, its answers passed through one
filter. tfop runs this file's text with the TensorBoard image's `python -c` (tfop/controller/plan/children/
tensorboard.py), followed by TensorBoard's own flags, so an image needs TensorBoard and nothing else.

The filter: TensorBoard answers its index page with `Content-Encoding: identity` (it keeps that page out of
compression to write a preamble before it), a value HTTP reserves for Accept-Encoding. The page reaches a job's
TensorBoard through the apiserver's Service proxy, which rewrites the links of HTML answers; for a content
encoding it does not know it closes the answer's body and still passes on its headers (k8s.io/apimachinery
util/proxy/transport.go, rewriteResponse, in v1.37.2). The index arrived as headers promising 205,748 bytes with
none of them, and the page answered 502. Without the header the index is plain HTML, which the proxy reads whole.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

Headers = list[tuple[str, str]]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def is_identity_encoding(name: str, value: str) -> bool:
    return name.lower() == "content-encoding" and value.strip().lower() == "identity"


def without_identity_encoding(app: WsgiApp) -> WsgiApp:
    """`app` whose answers name no `identity` content encoding: saying nothing means the same, and passes."""
    def filtered(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        def start(status: str, headers: Headers, *exc_info: Any) -> Any:
            return start_response(status, [(n, v) for n, v in headers if not is_identity_encoding(n, v)], *exc_info)
        return app(environ, start)
    return filtered


def main() -> None:
    """TensorBoard's own main (tensorboard.main.run_main), with the filter around its WSGI application."""
    from absl import app as absl_app
    from tensorboard import default, main_lib, program

    def server(wsgi_app: WsgiApp, flags: Any) -> Any:
        return program.create_port_scanning_werkzeug_server(without_identity_encoding(wsgi_app), flags)

    main_lib.global_init()
    board = program.TensorBoard(plugins=default.get_plugins(), server_class=server)
    absl_app.run(board.main, flags_parser=board.configure, argv=sys.argv)


if __name__ == "__main__":
    main()
