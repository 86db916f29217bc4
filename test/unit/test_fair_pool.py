"""The fair pool (tfop/kube/fair_pool.py): the order flows' tasks are handed out in, as table rows written out, and
the pool's threads keeping it.

A script is a list of steps: `a1` queues task 1 of flow a (`a1*3`: with weight 3, costing three ordinary
tasks), `.` takes the next task (`(none)`: none may be taken now), `~a` says a task of a has ended. The expected
column is what the `.` steps gave, in order; `threads` is what the flows share (None: no shares, round-robin
only)."""

from __future__ import annotations

import threading

import pytest

from support.waiting import wait_for
from tfop.kube.fair_pool import FairPool, RoundRobin


def run(script: str, threads: int | None) -> list[str]:
    queue: RoundRobin[str, str] = RoundRobin(threads)
    taken: list[str] = []
    for step in script.split():
        if step == ".":
            taken.append(queue.popleft() if queue.ready() else "(none)")
        elif step[0] == "~":
            queue.finished(step[1:])
        else:
            name, _, weight = step.partition("*")
            queue.append(step[0], name, int(weight or 1))
    return taken


ROWS = [
    # name, script, threads, expected
    ("one flow: first in, first out", "a1 a2 a3 . . .", None, ["a1", "a2", "a3"]),
    ("a big batch first, then two small flows: they go second and third, not after the batch",
     "a1 a2 a3 a4 a5 b1 b2 c1 . . . . . . . .", None, ["a1", "b1", "c1", "a2", "b2", "a3", "a4", "a5"]),
    ("a flow that joins mid-round waits for the flows already waiting, once each",
     "a1 a2 b1 b2 . c1 . . . .", None, ["a1", "b1", "a2", "c1", "b2"]),
    ("a flow whose tasks ran out joins at the end of the round when it sends again",
     "a1 b1 b2 . . a2 . .", None, ["a1", "b1", "b2", "a2"]),
    ("order within each flow is kept", "b1 a1 b2 a2 b3 . . . . .", None, ["b1", "a1", "b2", "a2", "b3"]),
    ("a flow served last round, sending again while others wait, goes after them",
     "a1 b1 . a2 . .", None, ["a1", "b1", "a2"]),
    # With shares: a flow alone holds every thread, and half of them while another flow sends.
    ("alone, a flow gets every thread", "a1 a2 a3 a4 a5 . . . . .", 4, ["a1", "a2", "a3", "a4", "(none)"]),
    ("two flows sending share the threads half and half", "a1 a2 a3 a4 b1 b2 b3 b4 . . . . .", 4,
     ["a1", "b1", "a2", "b2", "(none)"]),
    ("a flow holding every thread gets no more until it is within its share again",
     "a1 a2 a3 a4 a5 a6 . . . . b1 ~a . ~a . ~a .", 4, ["a1", "a2", "a3", "a4", "b1", "(none)", "a5"]),
    ("a flow whose tasks have all ended gives its share back", "a1 a2 a3 a4 b1 b2 . . . . . ~b ~b . .", 4,
     ["a1", "b1", "a2", "b2", "(none)", "a3", "a4"]),
    ("a flow over its share keeps its turn: it goes first once within it",
     "a1 a2 a3 . . b1 b2 c1 c2 . ~a . . .", 4, ["a1", "a2", "b1", "a3", "c1", "b2"]),
    ("however many flows send, each may hold half the threads", "a1 a2 a3 b1 b2 b3 c1 . . . . . . .", 4,
     ["a1", "b1", "c1", "a2", "b2", "(none)", "(none)"]),
    ("one thread: each flow may still hold it", "a1 a2 b1 . ~a . ~b .", 1, ["a1", "b1", "a2"]),
    # Weights: beside others, a flow's half is divided by its weight; alone, it still gets every thread.
    ("a flow of weight 2 beside an ordinary one holds a quarter of the threads, the other its half",
     "a1*2 a2*2 a3*2 b1 b2 b3 b4 b5 . . . . . . .", 8, ["a1", "b1", "a2", "b2", "b3", "b4", "(none)"]),
    ("alone, a heavy flow gets every thread", "a1*4 a2*4 a3*4 . . .", 2, ["a1", "a2", "(none)"]),
    ("a flow heavier than half the threads still holds one", "a1*5 a2*5 b1 b2 b3 . . . .", 4,
     ["a1", "b1", "b2", "(none)"]),
    ("once the others stop, a heavy flow takes every thread again",
     "a1*9 a2*9 a3*9 b1 . . . ~b . .", 4, ["a1", "b1", "(none)", "a2", "a3"]),
]


@pytest.mark.parametrize(("script", "threads", "expected"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_order_of_tasks(script: str, threads: int | None, expected: list[str]) -> None:
    assert run(script, threads) == expected


def test_taking_from_an_empty_queue_raises_and_drain_empties_it() -> None:
    queue: RoundRobin[str, str] = RoundRobin()
    with pytest.raises(IndexError):
        queue.popleft()
    for step in ["a1", "a2", "b1"]:
        queue.append(step[0], step)
    assert (len(queue), queue.flows(), bool(queue)) == (3, 2, True)
    assert sorted(queue.drain()) == ["a1", "a2", "b1"]
    assert (len(queue), queue.flows(), bool(queue)) == (0, 0, False)


def test_a_small_flow_waits_for_one_task_of_a_big_one_not_for_all_of_them() -> None:
    """One thread, held by the big flow's first task while the rest of both flows are submitted."""
    pool: FairPool[str] = FairPool(1)
    started = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def first() -> None:
        started.set()
        assert release.wait(60)
        order.append("big0")

    held = pool.submit("big", first)
    assert started.wait(60)
    big = [pool.submit("big", order.append, f"big{i}") for i in range(1, 100)]
    small = [pool.submit("small", order.append, f"small{i}") for i in range(3)]
    release.set()
    for future in [held, *big, *small]:
        future.result(timeout=60)
    assert order[:7] == ["big0", "big1", "small0", "big2", "small1", "big3", "small2"]
    assert order[7:] == [f"big{i}" for i in range(4, 100)]
    pool.shutdown()


def test_a_flows_executor_maps_and_raises_as_an_executor_does() -> None:
    pool: FairPool[str] = FairPool(4)
    executor = pool.flow("a")
    assert list(executor.map(lambda x: x * x, range(10))) == [x * x for x in range(10)]

    def fail() -> None:
        raise KeyError("refused")

    with pytest.raises(KeyError, match="refused"):
        executor.submit(fail).result(timeout=60)
    executor.shutdown()  # the pool is shared: a flow's shutdown leaves it running
    assert pool.submit("b", lambda: "still running").result(timeout=60) == "still running"
    pool.shutdown()


def test_no_more_tasks_run_at_once_than_threads() -> None:
    """The first tasks hold until three run at once, so the pool is seen full whatever the machine's pace; the
    rest then run through, and none ever ran beside three others."""
    pool: FairPool[int] = FairPool(3)
    lock = threading.Lock()
    running, most = 0, 0
    full = threading.Event()
    three = threading.Barrier(3)

    def task() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        if not full.is_set():
            three.wait(60)  # broken (an error) unless three run at once
            full.set()
        with lock:
            running -= 1

    futures = [pool.submit(flow, task) for flow in range(4) for _ in range(5)]
    for future in futures:
        future.result(timeout=60)
    assert full.is_set() and most == 3
    pool.shutdown()


def test_a_pool_with_idle_threads_grows_to_its_threads_for_a_burst() -> None:
    """Two quick submits must not both count on the one idle thread: the second gets a thread of its own."""
    pool: FairPool[str] = FairPool(4)
    pool.submit("a", lambda: None).result(timeout=60)
    wait_for(lambda: pool._idle == 1, 60, "the pool's one thread to wait for a task")
    together = threading.Barrier(5, timeout=60)
    futures = [pool.submit("a", together.wait) for _ in range(4)]
    together.wait()  # broken (an error) unless all four run at once
    for future in futures:
        future.result(timeout=60)
    pool.shutdown()


def test_shutdown_cancels_what_has_not_started_and_refuses_more() -> None:
    pool: FairPool[str] = FairPool(1)
    release = threading.Event()
    started = threading.Event()

    def hold() -> str:
        started.set()
        assert release.wait(60)
        return "done"

    running = pool.submit("a", hold)
    assert started.wait(60)
    waiting = pool.submit("b", lambda: "never")
    assert pool.waiting() == 1
    pool.shutdown(wait=False, cancel_futures=True)
    assert waiting.cancelled()
    release.set()
    assert running.result(timeout=60) == "done"
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit("a", lambda: None)


def test_shutdown_with_wait_runs_what_was_submitted() -> None:
    pool: FairPool[str] = FairPool(2)
    done: list[int] = []
    futures = [pool.submit("a", done.append, i) for i in range(20)]
    pool.shutdown(wait=True)
    assert all(future.done() for future in futures) and sorted(done) == list(range(20))


def test_a_pool_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        FairPool(0)
