"""Plain HTTP GETs to the endpoints a process serves (/metrics, /healthz, /readyz)."""

from __future__ import annotations

import urllib.error
import urllib.request


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    """(status, body), for error statuses too; connection failures raise OSError."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
