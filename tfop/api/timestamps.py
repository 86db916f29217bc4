"""Timestamps as Kubernetes writes them: RFC3339, UTC, seconds precision, trailing Z."""

from __future__ import annotations

from datetime import UTC, datetime

_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def as_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    return as_utc(moment).strftime(_FORMAT)


def parse_time(value: object) -> datetime | None:
    """An aware UTC datetime, or None for anything that is not an RFC3339 timestamp."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return as_utc(parsed)
