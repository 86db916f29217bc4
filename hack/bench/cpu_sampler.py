"""Where a Python process spends its CPU, by the stdlib alone: a sampling profiler weighted by each thread's CPU.

    python -m bench.cpu_sampler OUT.txt [--interval 0.005] -m tfop run ...   (the program after it, as `python`)

Every `interval` a thread of its own reads each thread's CPU time so far (`/proc/self/task/TID/schedstat`, in
nanoseconds) and gives the CPU a thread spent since the last look to the stack it has now
(`sys._current_frames()`). A thread blocked in a read or a lock spends none, so it weighs nothing however long it
waits: unlike a wall-clock sampler, this measures CPU, and unlike cProfile it neither slows every call nor sees
only the main thread. CPU spent in C (json's decoder, ssl) goes to the Python frame that called it. All of the CPU
between two looks goes to the stack of the second: a look made late (a loaded machine) gives the end of a loop to
whatever its thread runs by then, so a stack's share is only as good as the number of looks it is made of.

A thread's count starts at the sampler's first look at it: what it spent before (a thread born while sampling: its
start-up, or the part of a loop the sampler was late for) was not spent in the stack it is found in, so it goes to
no stack, and no thread's share; the report gives it apart, by thread, outside the total ("CPU sampled"). So a
thread that lives for one look only is in that line alone, and one born and ended between two looks in none.

At exit it writes OUT.txt, the report (`report`), and OUT.txt.folded: one line per distinct stack with its CPU
nanoseconds, root first, frames joined by `;` (the format flame graph tools read), which `report` reads again
(`python -m bench.cpu_sampler --report OUT.txt.folded`).
"""

from __future__ import annotations

import argparse
import atexit
import os
import runpy
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from types import CodeType, FrameType

Stack = tuple[str, ...]  # frames as "path:function", root first; a library's path from its package (`_name`)
# Inclusive components: a stack counts for each whose test matches one of its frames (so they overlap).
COMPONENTS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("reconcile (all of a pass)", lambda f: f.endswith("controller/reconciler.py:reconcile")),
    ("  planner (plan_job)", lambda f: "controller/plan/planner.py:plan" in f),
    ("    observed views", lambda f: "controller/plan/observed/" in f),
    ("    job parse", lambda f: "controller/plan/job/parse.py:parse_job" in f),
    ("  applier", lambda f: "controller/apply/" in f),
    ("    child bodies (desired pods, services)", lambda f: "controller/plan/children/" in f),
    ("informers (list, watch, cache)", lambda f: "kube/informer.py" in f),
    ("  cache transforms", lambda f: "controller/cache_transforms.py" in f or "kube/shared_values.py" in f),
    ("  watch stream read and decoded", lambda f: "kube/streams.py" in f),
    ("HTTP requests (client.py)", lambda f: "kube/client.py:" in f),
    ("  urllib3", lambda f: f.startswith("urllib3/")),
    ("    http.client and its email header parser", lambda f: f.startswith(("http/client.py", "email/"))),
    ("  ssl and sockets", lambda f: f.startswith(("ssl.py", "socket.py")) or "/ssl.py" in f or "/socket.py" in f),
    ("json encode", lambda f: "json/encoder.py" in f or f.endswith("json/__init__.py:dumps")),
    ("json decode", lambda f: "json/decoder.py" in f or f.endswith("json/__init__.py:loads")),
    ("copy.deepcopy", lambda f: f.endswith("copy.py:deepcopy")),
    ("logging (structlog, logging)", lambda f: f.startswith(("structlog/", "logging/"))),
    ("metrics (prometheus_client)", lambda f: f.startswith("prometheus_client/")),
    ("work queue and lanes", lambda f: "kube/workqueue.py" in f or "kube/lanes.py" in f),
    ("creator pool (fair_pool.py)", lambda f: "kube/fair_pool.py" in f),
    ("dataclass __init__ (generated)", lambda f: f.endswith(":__init__") and f.startswith("<string>")),
)


class Sampler(threading.Thread):
    def __init__(self, interval: float, cpu_ns: Callable[[int], int | None] | None = None) -> None:
        """`cpu_ns`: a thread's CPU nanoseconds so far by its native id, None once it ended (its schedstat unless
        given: a test gives made-up readings)."""
        super().__init__(name="cpu-sampler", daemon=True)
        self.interval = interval
        self._cpu_ns: Callable[[int], int | None] = cpu_ns or self._schedstat_ns
        self.stacks: Counter[tuple[CodeType, ...]] = Counter()
        self.by_thread: Counter[str] = Counter()
        self.before_first_look: Counter[str] = Counter()  # by thread, CPU ns in no stack (the module's docstring)
        self.stopped = threading.Event()
        self._files: dict[int, int] = {}  # native thread id -> open schedstat
        self._seen: dict[int, int] = {}  # native thread id -> its CPU ns at the last look
        self.looks = 0  # samples taken so far
        self.looked = threading.Condition()  # notified after each sample

    def _schedstat_ns(self, native: int) -> int | None:
        fd = self._files.get(native)
        try:
            if fd is None:
                fd = self._files[native] = os.open(f"/proc/self/task/{native}/schedstat", os.O_RDONLY)
            return int(os.pread(fd, 64, 0).split()[0])
        except OSError:  # the thread ended
            if fd is not None:
                os.close(self._files.pop(native))
            return None

    def start(self) -> None:
        # What the threads alive now spent before sampling is nobody's, not even before_first_look's.
        for thread in threading.enumerate():
            if thread.native_id is not None:
                spent = self._cpu_ns(thread.native_id)
                if spent is not None:
                    self._seen[thread.native_id] = spent
        super().start()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.sample()
            with self.looked:
                self.looks += 1
                self.looked.notify_all()

    def sample(self) -> None:
        threads = {thread.ident: thread for thread in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            thread = threads.get(ident)
            if thread is None or thread is self or thread.native_id is None:
                continue
            spent = self._cpu_ns(thread.native_id)
            if spent is None:
                self._seen.pop(thread.native_id, None)  # a thread given its id later is another
                continue
            before = self._seen.get(thread.native_id)
            self._seen[thread.native_id] = spent
            if before is None:
                self.before_first_look[_group(thread.name)] += spent
                continue
            if spent <= before:
                continue
            self.stacks[_codes(frame)] += spent - before
            self.by_thread[_group(thread.name)] += spent - before

    def own_cpu_ns(self) -> int:
        return self._cpu_ns(self.native_id or 0) or 0

    def folded(self) -> Counter[Stack]:
        out: Counter[Stack] = Counter()
        for codes, spent in self.stacks.items():
            out[tuple(_name(code) for code in codes)] += spent
        return out


def _codes(frame: FrameType | None) -> tuple[CodeType, ...]:
    codes: list[CodeType] = []
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    codes.reverse()
    return tuple(codes)


def _name(code: CodeType) -> str:
    path = code.co_filename
    for marker in ("/site-packages/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/lib/python3.":
                path = path.split("/", 1)[1] if "/" in path else path
            break
    else:
        if "/tfop/" in path:
            path = "tfop/" + path.rsplit("/tfop/", 1)[1]
    return f"{path}:{code.co_name}"


def _group(thread_name: str) -> str:
    """Thread names without their numbers: `worker-3` and `worker-7` are one group."""
    return thread_name.rstrip("0123456789").rstrip("-_ ") or thread_name


def report(stacks: Counter[Stack], by_thread: Counter[str] | None = None, extra: Iterable[str] = (),
           before_first_look: Counter[str] | None = None) -> str:
    total = sum(stacks.values()) or 1
    lines = [*extra, f"CPU sampled: {total / 1e9:.2f} s", ""]
    if before_first_look:
        unseen = sum(before_first_look.values()) / 1e9
        lines += [(f"not in it: {unseen:.2f} s a thread spent before the sampler's first look at it (its start-up; "
                   "all of a thread seen once), in no stack"), *(
            f"  {spent / 1e9:8.2f} s  {name}" for name, spent in before_first_look.most_common())]
        lines.append("")
    if by_thread:
        lines += ["by thread (names without their numbers)", *(
            f"  {spent / 1e9:8.2f} s {100 * spent / total:5.1f}%  {name}" for name, spent in by_thread.most_common())]
        lines.append("")
    lines.append("by component, inclusive (a stack counts for every component on it, so these overlap)")
    for label, test in COMPONENTS:
        spent = sum(ns for stack, ns in stacks.items() if any(test(frame) for frame in stack))
        lines.append(f"  {spent / 1e9:8.2f} s {100 * spent / total:5.1f}%  {label}")
    own: Counter[str] = Counter()  # self time
    inclusive: Counter[str] = Counter()
    module: Counter[str] = Counter()  # the innermost tfop frame's module: which of our code the CPU is for
    for stack, spent in stacks.items():
        own[stack[-1]] += spent
        for frame in set(stack):
            inclusive[frame] += spent
        mine = next((frame for frame in reversed(stack) if frame.startswith("tfop/")), "(no tfop frame)")
        module[mine.rsplit(":", 1)[0]] += spent
    lines += ["", "by the innermost tfop module on the stack (additive)", *(
        f"  {spent / 1e9:8.2f} s {100 * spent / total:5.1f}%  {name}" for name, spent in module.most_common(30))]
    lines += ["", "functions by self time", *(
        f"  {spent / 1e9:8.2f} s {100 * spent / total:5.1f}%  {name}" for name, spent in own.most_common(45))]
    lines += ["", "functions by inclusive time", *(
        f"  {spent / 1e9:8.2f} s {100 * spent / total:5.1f}%  {name}" for name, spent in inclusive.most_common(60))]
    return "\n".join(lines) + "\n"


def read_folded(path: Path) -> Counter[Stack]:
    stacks: Counter[Stack] = Counter()
    for line in path.read_text().splitlines():
        frames, _, spent = line.rpartition(" ")
        stacks[tuple(frames.split(";"))] += int(spent)
    return stacks


def _write(sampler: Sampler, out: Path) -> None:
    own = sampler.own_cpu_ns()  # while its thread is there to be read
    sampler.stopped.set()
    sampler.join(timeout=2 * sampler.interval + 1)
    stacks = sampler.folded()
    out.with_name(out.name + ".folded").write_text(
        "".join(f"{';'.join(stack)} {spent}\n" for stack, spent in stacks.most_common()))
    process = os.times()
    extra = [(f"process CPU (user + system, all threads): {process.user + process.system:.2f} s; "
              f"the sampler's own: {own / 1e9:.2f} s; interval {sampler.interval * 1000:.1f} ms")]
    out.write_text(report(stacks, sampler.by_thread, extra, sampler.before_first_look))


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.cpu_sampler", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--interval", type=float, default=0.005)
    parser.add_argument("--report", type=Path, help="print the report of a .folded file written before, and exit")
    parser.add_argument("-m", dest="module", help="the module to run, with the rest of the arguments")
    args, rest = parser.parse_known_args()
    if args.report:
        print(report(read_folded(args.report)), end="")
        return
    if args.out is None or args.module is None:
        parser.error("OUT and -m MODULE are needed")
    sampler = Sampler(args.interval)
    sampler.start()
    atexit.register(_write, sampler, args.out)
    sys.argv = [args.module, *rest]
    try:
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    finally:
        _write(sampler, args.out)
        atexit.unregister(_write)


if __name__ == "__main__":
    main()
