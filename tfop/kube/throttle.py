"""When the next request may go: the client-side token bucket, jittered backoff, and the retry policy.

Everything here is pure or takes its clock and randomness as arguments, so the decisions are unit-tested without
a server.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tfop.kube.clock import SYSTEM_CLOCK, Clock
from tfop.kube.ratelimit import TokenBucket

# JSON patch is the one patch type whose replay is not harmless ("add" to a list appends again); merge, strategic
# and apply patches set fields to the values given, so sending one twice gives the same object.
NON_IDEMPOTENT_CONTENT_TYPES = frozenset({"application/json-patch+json"})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def jittered(seconds: float, fraction: float, rnd: float) -> float:
    """`seconds` stretched by up to `fraction` of itself; `rnd` in [0, 1) picks how much.

    Jitter keeps many clients that failed together (an apiserver restart) from retrying in lockstep.
    """
    return seconds * (1.0 + fraction * rnd)


def backoff_delay(attempt: int, initial: float, cap: float, rnd: float, jitter: float = 1.0) -> float:
    """Delay before retry number `attempt` (0-based): initial * 2**attempt, jittered, never above `cap`."""
    base = initial * (2.0 ** min(attempt, 62))
    return min(cap, jittered(min(base, cap), jitter, rnd))


class ExponentialBackoff:
    """Stateful backoff for a loop that keeps failing (a reflector, an elector); `reset()` after a success.

    With `reset_after`, a delay asked for more than that many seconds after the previous delay ended starts from
    `initial` again: so long without a failure means the trouble that made the delays grow is over (client-go's
    reflector backoff manager does the same, with a two-minute window). The window counts from the end of the
    previous delay, not its start: time spent waiting out a delay is not time without a failure, and a delay longer
    than the window must not reset the backoff it came from. A loop whose successes it cannot see, such as a watch
    that served events and then broke, is thus not punished for every outage it has ever lived through.
    """

    def __init__(self, initial: float, cap: float, *, jitter: float = 1.0,
                 rng: Callable[[], float] = random.random, reset_after: float | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.initial = initial
        self.cap = cap
        self.jitter = jitter
        self.reset_after = reset_after
        self._rng = rng
        self._clock = clock
        self._attempt = 0
        self._previous_ended: float | None = None

    def next(self) -> float:
        now = self._clock.now()
        if (self.reset_after is not None and self._previous_ended is not None
                and now - self._previous_ended > self.reset_after):
            self._attempt = 0
        delay = backoff_delay(self._attempt, self.initial, self.cap, self._rng(), self.jitter)
        self._previous_ended = now + delay
        self._attempt += 1
        return delay

    def reset(self) -> None:
        self._attempt = 0


def is_idempotent(method: str, content_type: str = "application/json") -> bool:
    """Whether sending this request twice leaves the server as sending it once would."""
    method = method.upper()
    if method in IDEMPOTENT_METHODS:
        return True
    return method == "PATCH" and content_type not in NON_IDEMPOTENT_CONTENT_TYPES


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if absent or unreadable.

    `now` is the wall-clock time in seconds since the epoch, used only for the HTTP-date form.
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - now
        return max(0.0, seconds)
    if seconds != seconds or seconds < 0:  # NaN or negative
        return None
    return seconds


@dataclass(frozen=True)
class RetryPolicy:
    """Which failed requests are sent again and after how long.

    Retried: 429 for any request (the server turned it away before handling it); 5xx except 501 and responses
    lost in transit only for idempotent requests; connection failures that surely did not reach the server
    (refused, DNS, connect timeout) for any request.

    A POST (create) is never retried once it may have reached the server. The alternative, retrying and treating
    AlreadyExists as success, only works for creates with a fixed name: a generateName create would be duplicated
    silently, and this client is generic. Callers that create by fixed name already treat AlreadyExists as success
    and are requeued on failure, so a level-triggered reconcile heals a lost create on its next pass.
    """

    max_retries: int = 5
    initial_delay: float = 0.25
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, method: str, content_type: str, *, status: int | None, reached_server: bool,
              retry_after: float | None, rnd: float) -> float | None:
        """Seconds to wait before retry number `attempt` (0-based), or None if the failure is final.

        `status` is the HTTP status, or None when no response came back; `reached_server` says whether the
        request may have been received (False only for failures before the request was sent).
        """
        if attempt >= self.max_retries:
            return None
        if status is None:
            retryable = not reached_server or is_idempotent(method, content_type)
        elif status == 429:
            retryable = True
        elif 500 <= status <= 599 and status != 501:
            retryable = is_idempotent(method, content_type)
        else:
            retryable = False
        if not retryable:
            return None
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return backoff_delay(attempt, self.initial_delay, self.max_delay, rnd)


class RequestThrottle:
    """Client-side QPS limit: `burst` requests at once, then `qps` per second on average; qps <= 0 disables it.

    The work queue's token bucket with a lock and a sleep around it: tokens are reserved, so concurrent callers
    queue up fairly (the n-th waiter sleeps n/qps) and nobody busy-waits.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = SYSTEM_CLOCK,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._bucket = TokenBucket(qps, max(1, burst), clock) if qps > 0 else None
        self._sleep = sleep
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token; return how long the caller must wait before using it."""
        if self._bucket is None:
            return 0.0
        with self._lock:
            return self._bucket.reserve()

    def acquire(self) -> float:
        """Block until a request may go; return the time waited."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait
