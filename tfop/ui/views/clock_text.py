"""Times as the page writes them: ages as kubectl prints them, moments in UTC."""

from __future__ import annotations

from datetime import datetime

from tfop.api.timestamps import format_time


def age_text(seconds: float) -> str:
    """kubectl's style, two units at most: 45s, 5m3s, 2h5m, 3d4h."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def moment_text(moment: datetime | None) -> str:
    return format_time(moment) if moment is not None else ""
