"""What a route raises when it will not show what was asked: the app answers it with the login form (401) or
an error page that says why (400, 403, 404, 502)."""

from __future__ import annotations


class PageError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
