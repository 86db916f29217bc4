"""tfop run caps glibc's malloc arenas (tfop/malloc_arenas.py): threads that allocate at once share two heaps.
Counted by glibc itself (malloc_info lists one <heap> per arena), in fresh interpreters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Eight threads allocate malloc-sized buffers (over Python's 512-byte small object limit) at the same time; then
# glibc describes its arenas.
PROGRAM = textwrap.dedent("""
    import ctypes, json, sys, tempfile, threading
    from tfop.malloc_arenas import limit_malloc_arenas
    limited = limit_malloc_arenas() if sys.argv[1] == "limit" else None
    start = threading.Barrier(8)

    def allocate():
        start.wait()
        kept = [bytearray(4096) for _ in range(2000)]
        start.wait()  # every thread holds its buffers until all have allocated
        del kept

    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
    libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
    libc.fclose.argtypes = (ctypes.c_void_p,)
    with tempfile.NamedTemporaryFile(suffix=".xml") as out:
        stream = libc.fopen(out.name.encode(), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        heaps = open(out.name).read().count("<heap nr=")
    print(json.dumps({"limited": limited, "heaps": heaps}))
    """)


def arenas(mode: str, **env: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=120,
                          check=False, env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", ""), **env})
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_allocating_threads_share_two_arenas_once_limited() -> None:
    unlimited = arenas("leave")
    limited = arenas("limit")
    assert limited == {"limited": True, "heaps": 2}
    assert isinstance(unlimited["heaps"], int) and unlimited["heaps"] > 2, unlimited  # what the cap prevents


def test_an_arena_count_in_the_environment_wins() -> None:
    assert arenas("limit", MALLOC_ARENA_MAX="3")["limited"] is False
