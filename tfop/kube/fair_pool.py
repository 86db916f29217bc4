"""A thread pool shared by several flows (a controller's keys) that shares its threads out between them, not first
come first served.

A controller's workers hand their writes to one pool of request threads, so that the apiserver sees a bounded
number of requests in flight. In a single FIFO a key that sends a large batch (one job's slow-start batch of
2,048 pod creates) is ahead of every request sent after it: the other keys' few creates wait for the whole batch,
each of their slow-start rounds again. And a pool that gives every idle thread to whoever has work lets that key
fill the apiserver with its requests whenever the others are between two of theirs, so theirs are slow too.
Here each flow has its own FIFO; a free thread takes the next task of the next flow in turn (round-robin over
the flows with tasks waiting) that holds less than its share of the threads: all of them for a flow alone, half
of them while another flow sends too. So beside a flow that sends thousands, half the threads stay for the
others, and the apiserver is never full of that flow's requests while others wait for theirs. A flow whose
requests each cost the apiserver as much as several others (a pod of a 2,000-replica job carries a 130 KB
TF_CONFIG) has a weight, and its half is divided by it. This is the apiserver's own answer to the same problem
(API Priority and Fairness queues requests per flow, serves the queues in turn, bounds the seats each may hold
and counts a costly request as several seats), applied before the requests leave.

What callers may rely on:
- Within a flow, tasks start in the order they were submitted.
- A flow alone gets every thread; while another flow sends (has a task waiting or running), a flow holds at
  most half of them divided by its weight (rounded down, at least one), even if the others leave theirs idle
  for a moment.
- A task waits at most for one task of each other flow with tasks waiting before it, per task of its own flow
  ahead of it: no flow is starved, however many tasks another submits.
- No more than `threads` tasks run at once; the threads start on first use and stay.
- `flow(key)` is a `concurrent.futures.Executor`: `submit` and `map` return and raise as a ThreadPoolExecutor's.
  Its `shutdown` does nothing: the pool is shut down as a whole.
- `shutdown(wait=True)` runs what was submitted, `cancel_futures=True` cancels what has not started; a submit
  after shutdown raises RuntimeError.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future
from typing import Any, Generic, ParamSpec, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
P = ParamSpec("P")


class RoundRobin(Generic[K, T]):
    """The waiting tasks of every flow, handed out one flow at a time in turn, each flow within its share of
    `threads` (None: no share, plain round-robin). `popleft` counts a task as running until `finished(flow)`.
    Not thread-safe."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads
        self._waiting: dict[K, deque[T]] = {}
        self._turns: deque[K] = deque()  # the flows with tasks waiting, each once, the next to serve first
        self._running: dict[K, int] = {}  # flows with tasks taken and not finished -> how many
        self._weights: dict[K, int] = {}  # flows sending with a weight over 1 -> that weight

    def append(self, flow: K, task: T, weight: int = 1) -> None:
        """Queue `task` of `flow`; `weight`: how many ordinary tasks one of its tasks costs (the flow's latest)."""
        if weight > 1:
            self._weights[flow] = weight
        else:
            self._weights.pop(flow, None)
        tasks = self._waiting.get(flow)
        if tasks is None:
            tasks = self._waiting[flow] = deque()
            self._turns.append(flow)  # a flow with nothing waiting joins at the end of the round
        tasks.append(task)

    def share(self, flow: K) -> int | None:
        """How many tasks `flow` may have running now: every thread for a flow alone, half divided by its weight
        while others send."""
        if self.threads is None:
            return None
        sending = len(self._running.keys() | self._waiting.keys())
        if sending <= 1:
            return self.threads
        return max(1, self.threads // 2 // self._weights.get(flow, 1))

    def _next_flow(self) -> K | None:
        for flow in self._turns:
            share = self.share(flow)
            if share is None or self._running.get(flow, 0) < share:
                return flow
        return None

    def ready(self) -> bool:
        """Whether a task may be taken now: one waits whose flow is within its share."""
        return self._next_flow() is not None

    def popleft(self) -> T:
        """The next flow's oldest task; that flow goes to the end of the round, flows over their share keep their
        place. IndexError when no task may be taken (see `ready`)."""
        flow = self._next_flow()
        if flow is None:
            raise IndexError("no task may be taken")
        self._turns.remove(flow)
        tasks = self._waiting[flow]
        task = tasks.popleft()
        if tasks:
            self._turns.append(flow)
        else:
            del self._waiting[flow]
        self._running[flow] = self._running.get(flow, 0) + 1
        return task

    def finished(self, flow: K) -> None:
        """A task of `flow` taken by `popleft` has ended."""
        left = self._running.get(flow, 0) - 1
        if left > 0:
            self._running[flow] = left
        else:
            self._running.pop(flow, None)
            if flow not in self._waiting:
                self._weights.pop(flow, None)  # no longer sending

    def drain(self) -> list[T]:
        """Every waiting task, removed (in no particular order)."""
        tasks = [task for waiting in self._waiting.values() for task in waiting]
        self._waiting.clear()
        self._turns.clear()
        self._weights = {flow: weight for flow, weight in self._weights.items() if flow in self._running}
        return tasks

    def flows(self) -> int:
        """Flows with tasks waiting."""
        return len(self._turns)

    def __len__(self) -> int:
        return sum(len(tasks) for tasks in self._waiting.values())

    def __bool__(self) -> bool:
        return bool(self._turns)


class _Task(Generic[K]):
    __slots__ = ("call", "flow", "future")

    def __init__(self, flow: K, future: Future[Any], call: Callable[[], Any]) -> None:
        self.flow = flow
        self.future = future
        self.call = call

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            result = self.call()
        except BaseException as error:  # noqa: BLE001 - handed to whoever waits on the future, as an executor does
            self.future.set_exception(error)
        else:
            self.future.set_result(result)


class FairPool(Generic[K]):
    """`threads` threads running the tasks of many flows, the flows in turn."""

    def __init__(self, threads: int, *, name: str = "fair-pool") -> None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.threads = threads
        self._name = name
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queue: RoundRobin[K, _Task[K]] = RoundRobin(threads)
        self._workers: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a task
        self._woken = 0  # of those, told to look again and not yet back: each notify must wake a thread of its own
        self._shut_down = False

    def flow(self, key: K, weight: int = 1) -> Executor:
        """An executor whose tasks are `key`'s flow, each costing as much as `weight` ordinary ones."""
        return _FlowExecutor(self, key, weight)

    def submit(self, key: K, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return self.submit_weighted(key, 1, lambda: fn(*args, **kwargs))

    def submit_weighted(self, key: K, weight: int, call: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._shut_down:
                raise RuntimeError("cannot submit to a pool that is shut down")
            self._queue.append(key, _Task(key, future, call), weight)
            self._another_hand()
        return future

    def _another_hand(self) -> None:
        """If a task may be taken, a thread for it: an idle one not woken yet, else a new one while there are fewer
        than `threads`. (Otherwise a running thread takes it when its task ends.)"""
        if not self._queue.ready():
            return
        if self._idle > self._woken:
            self._woken += 1
            self._ready.notify()
        elif len(self._workers) < self.threads:
            worker = threading.Thread(target=self._work, name=f"{self._name}-{len(self._workers)}", daemon=True)
            self._workers.append(worker)
            worker.start()

    def waiting(self) -> int:
        """Tasks submitted and not yet started."""
        with self._lock:
            return len(self._queue)

    def shutdown(self, *, wait: bool = True, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut_down = True
            self._queue.threads = None  # what is left runs, shares or not
            cancelled = self._queue.drain() if cancel_futures else []
            self._ready.notify_all()
            workers = list(self._workers)
        for task in cancelled:
            task.future.cancel()
        if wait:
            for worker in workers:
                worker.join()

    def _work(self) -> None:
        task: _Task[K] | None = None
        while True:
            with self._lock:
                if task is not None:
                    self._queue.finished(task.flow)
                while not self._queue.ready():
                    if self._shut_down and not self._queue:
                        return  # shut down, and nothing is left to run
                    self._idle += 1
                    self._ready.wait()
                    self._idle -= 1
                    self._woken = max(0, self._woken - 1)
                task = self._queue.popleft()
                self._another_hand()  # more may be taken (a share grew: the other flows stopped sending)
            task.run()


class _FlowExecutor(Executor, Generic[K]):
    def __init__(self, pool: FairPool[K], key: K, weight: int) -> None:
        self._pool = pool
        self._key = key
        self._weight = weight

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return self._pool.submit_weighted(self._key, self._weight, lambda: fn(*args, **kwargs))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing: the pool is shared, and shut down as a whole."""
