"""Typed API errors built from the apiserver's Status answers, so callers branch on a class, not on numbers."""

from __future__ import annotations

import json
import ssl
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


class TooLarge(ApiError):
    """The object is larger than the server stores: 413, or the 500 the apiserver passes on from etcd ("etcdserver:
    request is too large", or its gRPC client's "message larger than max"). The same body is refused every time."""


# What etcd and the apiserver's gRPC client say about an object over their size limits; both reach the client as
# a 500 InternalError, told apart from a server failing only by the message.
_TOO_LARGE_MESSAGES = ("request is too large", "message larger than max")


class TransportError(ApiError):
    """No HTTP answer at all (connection refused, reset, timeout) after the client's retries; status 0."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "TransportError", message)


class TLSVerificationError(TransportError):
    """The apiserver's certificate did not verify against the CA we were given: a wrong CA, server address or
    clock. Sending the request again gives the same answer, so it is never retried."""


def is_tls_verification_failure(error: BaseException | None) -> bool:
    """Whether `error`, or anything it was raised from or wraps, is a failed certificate check."""
    return any(isinstance(e, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(e)
               for e in _chain(error))


def tls_failure_text(error: BaseException) -> str:
    """The certificate check's own words on one line, e.g. `certificate verify failed: unable to get local
    issuer certificate`, rather than the transport's wrappers around them."""
    for inner in _chain(error):
        if isinstance(inner, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {inner.verify_message}"
    return " ".join(str(error).split())


def _chain(error: BaseException | None) -> list[BaseException]:
    """`error` and what it wraps or was raised from, outermost first."""
    seen: list[BaseException] = []
    while error is not None and all(error is not e for e in seen):
        seen.append(error)
        wrapped = getattr(error, "reason", None)
        error = (wrapped if isinstance(wrapped, BaseException) else None) or error.__cause__ or error.__context__ or (
            error.args[0] if error.args and isinstance(error.args[0], BaseException) else None)
    return seen


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
    elif code == 413 or (code == 500 and any(text in message for text in _TOO_LARGE_MESSAGES)):
        cls = TooLarge
    return cls(code, reason, message, status)


def error_from_watch_status(status: dict[str, Any]) -> ApiError:
    """The typed error for the Status object carried by a watch ERROR event (410 there means re-list)."""
    code = status.get("code")
    return error_from_status(code if isinstance(code, int) else 500, status)
