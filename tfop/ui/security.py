"""Headers every answer of the page carries, and the login cookie's attributes.

The Content-Security-Policy allows scripts, styles and connections from the page's own origin only: no inline
script or style, no other origin, no framing. The templates keep to it (live.js is a file, the SVG is styled by
classes). Answers are not cached: they are one user's view of the cluster.

An answer the page passes through from elsewhere (a job's TensorBoard: tensorboard_proxy.py) names the policy
that confines it in the CONFINED header instead: that policy is enforced beside the answer's own, in place of the
page's, and it may be framed by the page's own origin (TensorBoard frames its plugins)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                           "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    # Not no-referrer: under it a browser sends `Origin: null` on the page's own form post, which same_origin
    # then refuses. same-origin sends no referrer to other sites all the same.
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
)
CONFINED = b"x-tfop-confined-by"  # never sent: the policy of a passed-through answer
PASSED_THROUGH = (*((name, value) for name, value in HEADERS
                     if name not in (b"content-security-policy", b"x-frame-options")),
                  (b"x-frame-options", b"SAMEORIGIN"))
# A login lasts this long at most; the token's own expiry may end it first (the next TokenReview refuses it).
COOKIE_SECONDS = 8 * 3600


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                confined = [value for name, value in headers if name.lower() == CONFINED]
                ours = (*PASSED_THROUGH, *((b"content-security-policy", value) for value in confined)) if confined \
                    else HEADERS
                names = {name for name, _ in HEADERS} | {CONFINED}
                if confined:  # the answer's own policy stays, enforced beside the confining one
                    names.discard(b"content-security-policy")
                message["headers"] = [*(h for h in headers if h[0].lower() not in names), *ours]
            await send(message)

        await self.app(scope, receive, with_headers)


def same_origin(origin: str | None, scheme: str, host: str | None) -> bool:
    """A form post is taken only from the page itself: a browser sends Origin on every POST."""
    return origin is not None and host is not None and origin == f"{scheme}://{host}"
