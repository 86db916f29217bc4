"""How many heaps the C allocator keeps, set before the operator starts its threads.

glibc gives a thread that allocates while another holds the main heap a heap (arena) of its own, up to eight per
core, and memory freed in an arena stays with it. The operator's threads (workers, informers, the request pool,
the endpoints) all decode API answers, whose bodies and large dicts come from malloc rather than Python's own small
object allocator, so each arena ends up holding its share of freed pages. Two arenas keep the lock contention
low for a process whose threads mostly wait on the network, and return that memory (docs/benchmarks/index.md,
"Memory"). `MALLOC_ARENA_MAX` in the environment, if set, wins; other C libraries are left alone.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8  # glibc's malloc.h
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Caps glibc's arenas at `arenas`; returns whether it did (False: set by the environment, or not glibc)."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter itself is linked with
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))
