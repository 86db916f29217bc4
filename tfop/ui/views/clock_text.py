"""Times as the page writes them: ages as kubectl prints them, moments relative to now ("5m ago", "in 3m") with
the moment itself in UTC on hover. live.js writes the relative texts again in the browser as time passes, with
the same rules (age_text), so that a live update need not resend a row only because its age moved."""

from __future__ import annotations

from datetime import datetime

from markupsafe import Markup, escape

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


def relative_text(moment: datetime, now: datetime) -> str:
    seconds = (now - moment).total_seconds()
    return f"{age_text(seconds)} ago" if seconds >= 0 else f"in {age_text(-seconds)}"


def time_html(moment: datetime | None, now: datetime | None) -> Markup:
    """A <time> the browser keeps relative (data-rel); its text as at `now`, or empty for live.js to write."""
    if moment is None:
        return Markup("")
    absolute = escape(format_time(moment))
    text = relative_text(moment, now) if now is not None else ""
    return Markup(f'<time datetime="{absolute}" title="{absolute}" data-rel>{escape(text)}</time>')


def duration_html(started: datetime | None, finished: datetime | None, now: datetime | None) -> Markup:
    """How long it ran: fixed once finished; while it runs, a span live.js keeps growing (data-since)."""
    if started is None:
        return Markup("")
    if finished is not None:
        return Markup(escape(age_text((finished - started).total_seconds())))
    text = age_text((now - started).total_seconds()) if now is not None else ""
    return Markup(f'<span data-since="{escape(format_time(started))}">{escape(text)}</span>')
