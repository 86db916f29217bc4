"""HTTP(S) GETs to the endpoints a process serves (/metrics, /healthz, /readyz)."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request


def http_get(url: str, timeout: float = 5.0, token: str | None = None,
             context: ssl.SSLContext | None = None) -> tuple[int, str]:
    """(status, body), for error statuses too; connection failures raise OSError. An https URL is not verified
    unless `context` says how: tfop's own /metrics certificate is self-signed, made at its start."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if url.startswith("https:") and context is None:
        context = ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout,
                                    context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
