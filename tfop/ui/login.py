"""The login form, which keeps a token the apiserver accepts in a cookie (HttpOnly, SameSite=Strict, Secure
over HTTPS) for COOKIE_SECONDS, the time its words promise; and Log out, which removes it."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qs

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from tfop.kube.resource_access import User
from tfop.ui.page_error import PageError
from tfop.ui.security import COOKIE_SECONDS, same_origin
from tfop.ui.viewer import TOKEN_COOKIE

MAX_LOGIN_BODY = 16384


class Login:
    def __init__(self, render: Callable[..., HTMLResponse], authenticate: Callable[[str], User | None]) -> None:
        self._render = render
        self._authenticate = authenticate  # raises PageError when the apiserver cannot be asked

    def form(self, request: Request) -> Response:
        return self._render("login.html")

    async def log_in(self, request: Request) -> Response:
        if not same_origin(request.headers.get("origin"), request.url.scheme, request.headers.get("host")):
            raise PageError(403, "A login is taken only from this page's own form.")
        body = await request.body()
        if len(body) > MAX_LOGIN_BODY:
            raise PageError(400, "That is not a token.")
        token = (parse_qs(body.decode("utf-8", errors="replace")).get("token") or [""])[0].strip()
        user: User | None = None
        if token and " " not in token:
            user = await anyio.to_thread.run_sync(lambda: self._authenticate(token))
        if user is None:
            return self._render("login.html", 401, message="The apiserver does not accept this token.")
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(TOKEN_COOKIE, token, max_age=COOKIE_SECONDS, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https", path="/")
        return response

    def log_out(self, request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(TOKEN_COOKIE, path="/", httponly=True, samesite="strict")
        return response
