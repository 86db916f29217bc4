"""API calls that outlast the faults: a call made while the apiserver is down is retried until it is back."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from tfop.kube.errors import ApiError, TransportError

T = TypeVar("T")
OUTAGE_LIMIT = 180.0  # longer than any fault's hold plus the apiserver's start on a loaded machine


def retrying(call: Callable[[], T], limit: float = OUTAGE_LIMIT) -> T:
    """`call()`, again after a transport error or a 5xx/429 answer, until `limit` seconds have passed."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return call()
        except ApiError as error:
            transient = isinstance(error, TransportError) or error.status in (429, 500, 502, 503, 504)
            if not transient or time.monotonic() > deadline:
                raise
        time.sleep(0.5)
