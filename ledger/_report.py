"""Usage totals grouped by key, model, day or deployment: one way for every store.

SQL stores may group in the database; their results must equal these (a test
holds them to it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from ._records import UsageRecord
from ._store import Grouping

__all__ = ["totals"]

_SUMMED = (
    "input_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
)


def _group(record: UsageRecord, by: Grouping) -> object:
    if by == "key":
        return record.key_id
    if by == "model":
        return record.model
    if by == "deployment":
        return record.deployment
    return dt.datetime.fromtimestamp(record.at, dt.UTC).date().isoformat()


def totals(records: Iterable[UsageRecord], by: Sequence[Grouping]) -> list[dict[str, object]]:
    """One row per group: the grouping values, ``requests``, each token kind, ``cost``
    (priced requests only) and ``errors`` (outcomes other than ``ok``), sorted by group."""
    counts: dict[tuple[object, ...], list[int]] = {}
    costs: dict[tuple[object, ...], float] = {}
    for record in records:
        group = tuple(_group(record, field) for field in by)
        row = counts.setdefault(group, [0] * (len(_SUMMED) + 2))
        row[0] += 1
        for i, field in enumerate(_SUMMED, 1):
            row[i] += getattr(record, field)
        row[-1] += record.outcome != "ok"
        costs[group] = costs.get(group, 0.0) + (record.cost or 0.0)
    return [
        {
            **dict(zip(by, group, strict=True)),
            "requests": counts[group][0],
            **dict(zip(_SUMMED, counts[group][1:-1], strict=True)),
            "cost": costs[group],
            "errors": counts[group][-1],
        }
        for group in sorted(counts, key=lambda g: tuple(str(v) for v in g))
    ]
