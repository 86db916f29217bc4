"""The order in which the work queue hands out waiting items: two FIFO lanes, the priority lane first.

A controller's passes are not alike. The first pass over a new object may create hundreds of children and hold
its worker for seconds; a pass that only observes (every child it made is seen, nothing is left to make) reads
the cache and writes at most a status. In one FIFO the short pass waits behind every long one queued before it,
so a status a user waits for (Running) waits for a whole burst of creates. The controller says, after each pass,
which lane the item's next pass belongs in; the queue keeps the lanes.

What callers may rely on:
- Within a lane, items come out in the order they were queued (each item is in at most one lane, once).
- The priority lane goes first, but at most `max_streak` times in a row while a normal item waits: a steady
  stream of priority items slows the normal lane down, never stops it.
- An item goes into the lane last set for it (`set_lane`), the normal lane if none was. Setting it does not move
  an item already waiting: it applies from the item's next enqueue.
- With `normal_slots`, at most that many normal items are out at once (taken, not yet `release`d): the queue
  gives it its workers less one, so a worker is always free for the priority lane and a short pass never waits
  for a long one to end.

Not thread-safe: the work queue calls it under its own lock.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)

# How many priority items may go in a row while a normal one waits. A create burst queues a few priority passes
# per object (its children seen, scheduled, running) for each normal one, so a small number would let the priority
# lane fall behind during the burst; any number keeps the normal lane moving.
DEFAULT_MAX_STREAK = 32


class Lane(enum.Enum):
    PRIORITY = "priority"  # passes that only observe and write a status: short
    NORMAL = "normal"  # everything else, and any item nothing was said of


class Lanes(Generic[T]):
    """The waiting items of a work queue, in two lanes; `append` and `popleft` as on the deque it replaces."""

    def __init__(self, max_streak: int = DEFAULT_MAX_STREAK, normal_slots: int | None = None) -> None:
        if max_streak < 1:
            raise ValueError(f"max_streak must be at least 1, got {max_streak}")
        if normal_slots is not None and normal_slots < 1:
            raise ValueError(f"normal_slots must be at least 1 (or None: no limit), got {normal_slots}")
        self.max_streak = max_streak
        self.normal_slots = normal_slots  # None: as many normal items out as are asked for
        self._normal_out: set[T] = set()  # normal items taken and not yet released
        self._priority: deque[T] = deque()
        self._normal: deque[T] = deque()
        self._prioritized: set[T] = set()  # items whose next enqueue goes to the priority lane
        self._streak = 0  # priority items handed out in a row while a normal item waited

    def set_lane(self, item: T, lane: Lane) -> None:
        """The lane of `item`'s next enqueue. Only priority items are remembered, so forgetting an item is setting
        it back to NORMAL."""
        if lane is Lane.PRIORITY:
            self._prioritized.add(item)
        else:
            self._prioritized.discard(item)

    def lane_of(self, item: T) -> Lane:
        return Lane.PRIORITY if item in self._prioritized else Lane.NORMAL

    def append(self, item: T) -> None:
        (self._priority if item in self._prioritized else self._normal).append(item)

    def _normal_open(self) -> bool:
        return bool(self._normal) and (self.normal_slots is None or len(self._normal_out) < self.normal_slots)

    def ready(self) -> bool:
        """Whether an item may be taken now (one waits, and if only normal ones do, a normal slot is free)."""
        return bool(self._priority) or self._normal_open()

    def popleft(self) -> T:
        """The next item; raises IndexError when none may be taken (see `ready`)."""
        normal_open = self._normal_open()
        if self._priority and not (normal_open and self._streak >= self.max_streak):
            self._streak = self._streak + 1 if self._normal else 0
            return self._priority.popleft()
        if not normal_open:
            raise IndexError("no item may be taken")
        self._streak = 0
        item = self._normal.popleft()
        self._normal_out.add(item)
        return item

    def release(self, item: T) -> bool:
        """`item` is done with; returns whether that freed a slot a waiting normal item can take."""
        if item not in self._normal_out:
            return False
        self._normal_out.discard(item)
        return bool(self._normal)

    def waiting(self, lane: Lane) -> int:
        return len(self._priority if lane is Lane.PRIORITY else self._normal)

    def remembered(self) -> int:
        """How many items have a lane set (the memory `set_lane` holds)."""
        return len(self._prioritized)

    def __len__(self) -> int:
        return len(self._priority) + len(self._normal)

    def __bool__(self) -> bool:
        return bool(self._priority) or bool(self._normal)
