"""The RuntimeId of a TFJob and the names of its children.

The RuntimeId is derived from metadata.uid, so it needs no storage, is the same after an operator restart, and
differs when a job is deleted and created again under the same name: the new job's children never collide with
the old job's pods that are still terminating.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from typing import Final

RUNTIME_ID_LENGTH: Final = 4


@functools.lru_cache(maxsize=4096)  # a pure function of the uid, asked for several times in every pass
def runtime_id(uid: str) -> str:
    """Lowercase base32 (a-z, 2-7) of the uid's SHA-256: safe inside a DNS-1035 label."""
    digest = hashlib.sha256(uid.encode("utf-8")).digest()
    return base64.b32encode(digest).decode("ascii").lower()[:RUNTIME_ID_LENGTH]


def child_name(job_name: str, replica_type: str, runtime_id: str, index: int) -> str:
    """Name of the Pod and of the Service for one replica, e.g. `mnist-worker-x7k2-0`."""
    return f"{job_name}-{replica_type.lower()}-{runtime_id}-{index}"
