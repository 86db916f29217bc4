"""Rate limiters that say how long to wait before an item is retried; the work queue turns that into a delay.

The default for controllers is the maximum of a per-item exponential backoff (5 ms doubling up to 1000 s) and an
overall token bucket (10 per second, burst 100), the same numbers as client-go's default controller limiter: a
failing item backs off on its own, and a storm of failing items cannot retry faster than 10 per second overall.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Protocol

from tfop.kube.clock import SYSTEM_CLOCK, Clock


class RateLimiter(Protocol):
    """Decides retry delays per item and remembers failures until told to forget."""

    def when(self, item: Hashable) -> float:
        """Seconds to wait before `item` may be processed again; counts as one more failure of it."""
        ...

    def forget(self, item: Hashable) -> None:
        """The item succeeded: clear its failure history."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of `item` are remembered."""
        ...


class TokenBucket:
    """`burst` tokens refilled at `rate` per second. Not thread-safe: owners serialise access.

    `reserve` always succeeds and may put the bucket into debt: the n-th caller beyond the burst is told to wait
    n/rate seconds, so callers that honour the answer are paced exactly at `rate`. `try_take` never borrows.
    """

    def __init__(self, rate: float, burst: int, clock: Clock = SYSTEM_CLOCK) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst >= 1, got rate={rate} burst={burst}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.now()

    def _refill(self) -> None:
        now = self._clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now

    def reserve(self) -> float:
        """Take one token, borrowing if none is left; return the seconds until the token is really ours."""
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    def try_take(self) -> bool:
        """Take one token if one is available now."""
        self._refill()
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


class OverallTokenBucket:
    """One token bucket shared by all items: bounds the total retry rate, whatever the items."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock = SYSTEM_CLOCK) -> None:
        self._lock = threading.Lock()
        self._bucket = TokenBucket(qps, burst, clock)

    def when(self, item: Hashable) -> float:
        with self._lock:
            return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        """Tokens are not per item: nothing to forget."""

    def num_requeues(self, item: Hashable) -> int:
        return 0


class PerItemExponentialBackoff:
    """base_delay * 2**failures for each item, capped at max_delay."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay < 0 or max_delay < base_delay:
            raise ValueError(f"need 0 <= base_delay <= max_delay, got {base_delay} and {max_delay}")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            failures = self._failures.get(item, 0)
            self._failures[item] = failures + 1
        # Float overflow gives inf, never an exception, so an item failing for days stays at max_delay; the
        # exponent is clamped only to keep 2.0 ** n representable.
        return min(self.base_delay * 2.0 ** min(failures, 1023), self.max_delay)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class MaxOf:
    """The longest delay any of the limiters asks for; every limiter sees every failure."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOf needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock = SYSTEM_CLOCK) -> RateLimiter:
    """Per-item backoff 5 ms .. 1000 s, and at most 10 retries per second overall after a burst of 100."""
    return MaxOf(PerItemExponentialBackoff(0.005, 1000.0), OverallTokenBucket(10.0, 100, clock))
