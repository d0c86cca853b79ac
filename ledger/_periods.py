"""When a budget's period began, in UTC: the day, the ISO week (Monday) or the month."""

from __future__ import annotations

import datetime as dt

from ._records import Period

__all__ = ["period_start"]


def period_start(period: Period, now: float) -> float:
    """Unix seconds at which the period holding ``now`` began (0 for ``total``)."""
    if period == "total":
        return 0.0
    day = dt.datetime.fromtimestamp(now, dt.UTC).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    if period == "week":
        day -= dt.timedelta(days=day.weekday())
    elif period == "month":
        day = day.replace(day=1)
    return day.timestamp()
