"""Typed API errors built from the apiserver's Status answers, so callers branch on a class, not on numbers."""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """A failed API call; `body` is the server's Status object when it sent one."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body


class BadRequest(ApiError):
    """400: the server could not decode or accept the request body (e.g. a malformed quantity)."""


class NotFound(ApiError):
    """404: the object (or its namespace) does not exist."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: a create met an object of the same name."""


class Conflict(ApiError):
    """409 Conflict: a precondition (resourceVersion, uid) did not hold; someone else wrote first."""


class Gone(ApiError):
    """410: a resourceVersion or continue token is older than what the server keeps; list again."""


class Invalid(ApiError):
    """422: the server rejected the object; the message names the fields."""


class TransportError(ApiError):
    """No HTTP answer at all (connection refused, reset, timeout) after the client's retries; status 0."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "TransportError", message)


def error_from_status(code: int, body: bytes | dict[str, Any] | None, http_reason: str = "") -> ApiError:
    """The typed error for an HTTP status code and the response body (a Status object, or anything else)."""
    status: dict[str, Any] | None = None
    text = ""
    if isinstance(body, dict):
        status = body
    elif body:
        try:
            parsed = json.loads(body)
        except ValueError:
            text = body.decode("utf-8", "replace")[:1024]
        else:
            status = parsed if isinstance(parsed, dict) else None
    reason = http_reason
    message = text
    if status is not None:
        reason = str(status.get("reason") or http_reason)
        message = str(status.get("message") or text)
    cls: type[ApiError] = ApiError
    if code == 400:
        cls = BadRequest
    elif code == 404:
        cls = NotFound
    elif code == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif code == 410:
        cls = Gone
    elif code == 422:
        cls = Invalid
    return cls(code, reason, message, status)


def error_from_watch_status(status: dict[str, Any]) -> ApiError:
    """The typed error for the Status object carried by a watch ERROR event (410 there means re-list)."""
    code = status.get("code")
    return error_from_status(code if isinstance(code, int) else 500, status)
