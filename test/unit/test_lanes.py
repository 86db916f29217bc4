"""The work queue's two lanes: table rows of what callers do and the order items come out, written out.

A script is a list of steps: `!a` says a's next pass is short (set_lane PRIORITY), `-a` says it is not (NORMAL),
`+a` queues a, `.` takes the next item, `~a` releases a (its worker is done), `?` notes whether an item may be
taken now. The expected column is what the `.` and `?` steps gave, in order."""

from __future__ import annotations

import threading
from typing import cast

import pytest

from support.waiting import wait_for
from tfop.kube.client import KubeClient
from tfop.kube.clock import FakeClock
from tfop.kube.lanes import Lane, Lanes
from tfop.kube.ratelimit import PerItemExponentialBackoff, default_controller_rate_limiter
from tfop.kube.runtime import ControllerRuntime, FailedPassError, Result
from tfop.kube.workqueue import RateLimitingQueue


def run(script: str, lanes: Lanes[str]) -> list[str]:
    taken: list[str] = []
    for step in script.split():
        if step == ".":
            taken.append(lanes.popleft())
        elif step == "?":
            taken.append("(ready)" if lanes.ready() else "(blocked)")
        elif step[0] == "~":
            lanes.release(step[1:])
        elif step[0] == "!":
            lanes.set_lane(step[1:], Lane.PRIORITY)
        elif step[0] == "-":
            lanes.set_lane(step[1:], Lane.NORMAL)
        else:
            assert step[0] == "+", step
            lanes.append(step[1:])
    return taken


ROWS = [
    # name, max_streak, script, taken
    ("nothing said: one FIFO",
     32, "+a +b +c . . .", ["a", "b", "c"]),
    ("a priority item goes ahead of normal ones queued before it",
     32, "!p +a +b +p . . .", ["p", "a", "b"]),
    ("priority items keep their order among themselves",
     32, "!p !q +a +q +p . . .", ["q", "p", "a"]),
    ("said NORMAL again: back in the normal lane",
     32, "!p -p +a +p . .", ["a", "p"]),
    ("saying it does not move an item already waiting",
     32, "+a +p !p . .", ["a", "p"]),
    ("...but its next enqueue goes to the priority lane",
     32, "+a +p !p . . +b +p . .", ["a", "p", "p", "b"]),
    ("a streak of 2: the normal lane gets every third turn while priority items wait",
     2, "!p1 !p2 !p3 !p4 !p5 +a +b +p1 +p2 +p3 +p4 +p5 . . . . . . .", ["p1", "p2", "a", "p3", "p4", "b", "p5"]),
    ("a streak counts only while a normal item waits",
     2, "!p1 !p2 !p3 +p1 +p2 +p3 . . +a . .", ["p1", "p2", "p3", "a"]),
    ("a normal item taken ends the streak",
     2, "!p1 !p2 !p3 !p4 +a +b +p1 +p2 . . . +p3 +p4 . . .", ["p1", "p2", "a", "p3", "p4", "b"]),
    ("an empty priority lane: the normal one, in order",
     1, "!p +a +b . +p . .", ["a", "p", "b"]),
    ("a streak of 1 alternates",
     1, "!p !q !r +a +b +p +q +r . . . . .", ["p", "a", "q", "b", "r"]),
]


@pytest.mark.parametrize(("max_streak", "script", "taken"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_order_items_come_out_in(max_streak: int, script: str, taken: list[str]) -> None:
    lanes: Lanes[str] = Lanes(max_streak)
    assert run(script, lanes) == taken
    assert not lanes


SLOT_ROWS = [
    # name, max_streak, normal_slots, script, what . and ? gave
    ("one normal slot: a second normal item waits for the first to be released",
     32, 1, "+a +b . ? ~a ? .", ["a", "(blocked)", "(ready)", "b"]),
    ("a priority item passes a normal one that must wait",
     32, 1, "!p +a +b . +p . ?", ["a", "p", "(blocked)"]),
    ("a priority item released frees no normal slot",
     32, 1, "!p +p +a +b . . ~p ?", ["p", "a", "(blocked)"]),
    ("the streak gives way only to a normal item that may be taken",
     1, 1, "!p !q +a +b +p +q . . . ~a .", ["p", "a", "q", "b"]),
    ("two slots: two normal items out at once",
     32, 2, "+a +b +c . . ? ~b .", ["a", "b", "(blocked)", "c"]),
]


@pytest.mark.parametrize(("max_streak", "slots", "script", "taken"), [row[1:] for row in SLOT_ROWS],
                         ids=[row[0] for row in SLOT_ROWS])
def test_normal_slots(max_streak: int, slots: int, script: str, taken: list[str]) -> None:
    assert run(script, Lanes(max_streak, slots)) == taken


def test_only_priority_items_are_remembered() -> None:
    lanes: Lanes[str] = Lanes()
    run("!a !b -b -c", lanes)
    assert (lanes.lane_of("a"), lanes.lane_of("b"), lanes.lane_of("c")) == (Lane.PRIORITY, Lane.NORMAL, Lane.NORMAL)
    assert lanes.remembered() == 1


def test_waiting_per_lane_and_empty() -> None:
    lanes: Lanes[str] = Lanes()
    run("!p +p +a +b", lanes)
    assert (lanes.waiting(Lane.PRIORITY), lanes.waiting(Lane.NORMAL), len(lanes)) == (1, 2, 3)
    run(". . .", lanes)
    with pytest.raises(IndexError):
        lanes.popleft()


def test_a_streak_or_slots_under_one_are_refused() -> None:
    with pytest.raises(ValueError, match="max_streak"):
        Lanes(0)
    with pytest.raises(ValueError, match="normal_slots"):
        Lanes(1, 0)


# --- the lanes inside the work queue ----------------------------------------------------------------------------

def make_queue(clock: FakeClock) -> RateLimitingQueue[str]:
    return RateLimitingQueue("lanes-test", default_controller_rate_limiter(clock), clock=clock)


def test_a_key_added_while_processing_goes_to_the_lane_set_before_done() -> None:
    queue = make_queue(FakeClock())
    for key in ("job", "a", "b"):
        queue.add(key)
    assert queue.get() == ("job", False)
    queue.add("job")  # an event while its pass runs: queued by done()
    queue.set_lane("job", Lane.PRIORITY)
    queue.done("job")
    assert [queue.get()[0] for _ in range(3)] == ["job", "a", "b"]


def test_one_worker_per_key_in_the_priority_lane_too() -> None:
    queue = make_queue(FakeClock())
    queue.set_lane("job", Lane.PRIORITY)
    queue.add("a")
    queue.add("job")
    assert queue.get() == ("job", False)
    queue.add("job")
    assert queue.get(timeout=0) == ("a", False)
    assert queue.get(timeout=0) == (None, False)  # "job" is held: not handed out again before done
    queue.done("job")
    assert queue.get(timeout=0) == ("job", False)


def test_a_worker_kept_for_the_priority_lane() -> None:
    """Two workers, one normal slot: while one worker holds a long normal pass and another normal key waits, the
    other worker is not given it, and takes the next priority key at once."""
    queue: RateLimitingQueue[str] = RateLimitingQueue("lanes-test", normal_slots=1)
    queue.set_lane("observing", Lane.PRIORITY)
    queue.add("creating-a")
    queue.add("creating-b")
    assert queue.get(timeout=0) == ("creating-a", False)
    assert queue.get(timeout=0) == (None, False)  # creating-b waits for the normal slot
    queue.add("observing")
    assert queue.get(timeout=0) == ("observing", False)
    queue.done("observing")
    queue.done("creating-a")
    assert queue.get(timeout=0) == ("creating-b", False)


def test_a_getter_waiting_for_a_normal_slot_is_woken_when_one_frees() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue("lanes-test", normal_slots=1)
    queue.add("a")
    queue.add("b")
    assert queue.get(timeout=0) == ("a", False)
    taken: list[tuple[str | None, bool]] = []
    waiter = threading.Thread(target=lambda: taken.append(queue.get(timeout=60)))
    waiter.start()
    wait_for(lambda: queue._idle_getters == 1, 60, "the getter to wait for a normal slot")
    queue.done("a")
    waiter.join(60)
    assert taken == [("b", False)]


def test_shutdown_hands_out_normal_items_whatever_is_out() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue("lanes-test", normal_slots=1)
    queue.add("a")
    queue.add("b")
    assert queue.get(timeout=0) == ("a", False)
    queue.shutdown()
    assert queue.get(timeout=0) == ("b", False)
    assert queue.get(timeout=0) == (None, True)


def test_delayed_and_rate_limited_adds_land_in_the_items_lane() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.set_lane("late", Lane.PRIORITY)
    queue.add("a")
    queue.add_after("late", 1.0)
    queue.add_rate_limited("retry")  # 5 ms of backoff, normal lane
    assert clock.wait_for_waiters(1)  # the delay thread is waiting
    clock.step(2.0)
    assert [queue.get(timeout=0)[0] for _ in range(3)] == ["late", "a", "retry"]
    queue.shutdown()


# --- the runtime places each key's next pass as its reconcile said ----------------------------------------------

def test_the_runtime_queues_a_key_in_the_lane_its_last_pass_named() -> None:
    order: list[str] = []
    release = threading.Event()
    said = {"observing": Result(lane=Lane.PRIORITY), "creating": None, "failing": Result(lane=Lane.PRIORITY)}

    def reconcile(key: str) -> Result | float | None:
        order.append(key)
        if key == "gate":
            assert release.wait(60)
        if key == "failing" and order.count("failing") > 1:
            raise RuntimeError("what a failed pass left to do is not known")
        return said.get(key)

    # Retries after 100 s: none comes back during the test.
    runtime = ControllerRuntime(cast(KubeClient, None), "lanes-test", reconcile, [], threads=1,
                                rate_limiter=PerItemExponentialBackoff(100.0, 1000.0))
    queue = runtime.queue
    runtime.start_workers()
    for key in ("observing", "creating", "failing"):
        queue.add(key)
    wait_for(lambda: len(order) == 3, 60, "the first three passes")
    queue.add("failing")  # fails this time: its next pass goes back to the normal lane
    wait_for(lambda: len(order) == 4, 60, "the failing pass")
    queue.add("gate")  # holds the one worker while the others are queued, in the order of their events
    wait_for(lambda: order[-1] == "gate", 60, "the gate to hold the worker")
    for key in ("creating", "failing", "observing"):
        queue.add(key)
    release.set()
    wait_for(lambda: len(order) == 8, 60, "the three queued behind the gate")
    assert order == ["observing", "creating", "failing", "failing", "gate", "observing", "creating", "failing"]
    runtime.stop_workers(1.0)


def test_a_failed_pass_with_a_deadline_is_retried_by_it_however_long_the_backoff() -> None:
    """A job whose creates are refused (backoff) while a grace of its own ends (the deadline) is looked at when
    the grace ends, not only when the backoff, which may have grown to many minutes, is over."""
    order: list[str] = []

    def reconcile(key: str) -> Result | float | None:
        order.append(key)
        if len(order) == 1:
            raise FailedPassError(RuntimeError("the apiserver refused a create"), 0.05)
        return None

    # A retry by backoff comes after 100 s: none does during the test.
    runtime = ControllerRuntime(cast(KubeClient, None), "lanes-test", reconcile, [], threads=1,
                                rate_limiter=PerItemExponentialBackoff(100.0, 1000.0))
    runtime.start_workers()
    runtime.queue.add("refused")
    wait_for(lambda: len(order) == 2, 60, "the pass at the deadline")
    assert order == ["refused", "refused"]
    runtime.stop_workers(1.0)
