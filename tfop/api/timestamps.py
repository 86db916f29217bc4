"""Timestamps as Kubernetes writes them: RFC3339, UTC, seconds precision, trailing Z."""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime

_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def as_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


# Both are pure and their values immutable, and a pass reads and writes the same few seconds' timestamps of a job's
# children and conditions over and over: remembered, they cost a dict look-up.
@functools.lru_cache(maxsize=4096)
def format_time(moment: datetime) -> str:
    return as_utc(moment).strftime(_FORMAT)


def parse_time(value: object) -> datetime | None:
    """An aware UTC datetime, or None for anything that is not an RFC3339 timestamp."""
    if not isinstance(value, str):
        return None
    return _parse_text(value)


@functools.lru_cache(maxsize=8192)
def _parse_text(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return as_utc(parsed)


def parse_moment(value: str) -> datetime | None:
    """A time a program wrote: RFC3339 (with an offset or Z), or seconds since 1970 (what time.time() gives, as
    text), to the whole second; None for anything else."""
    try:
        seconds = float(value)
    except ValueError:
        parsed = _parse_text(value)
        return None if parsed is None else parsed.replace(microsecond=0)
    if not math.isfinite(seconds) or not 0 <= seconds < 253402300800:  # year 10000
        return None
    return datetime.fromtimestamp(int(seconds), UTC)
