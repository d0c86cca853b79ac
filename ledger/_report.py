"""Usage totals grouped by key, model, day or deployment: one way for every store.

SQL stores may group in the database; their results must equal these (a test
holds them to it). Failed attempts are counted where they failed: grouped by
deployment, an attempt that failed over counts on the deployment that failed
(``failovers``), even when no request ended there (a row of its own, with no
requests); grouped otherwise, on the request's group.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from ._records import UsageRecord
from ._store import Grouping

__all__ = ["ESTIMATED_TOKENS", "SUMMED", "Failed", "totals", "with_failovers"]

#: the token counts a report sums, in the order its rows list them
SUMMED = (
    "input_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
)
#: the token counts of an estimated record (``estimated_tokens`` sums them)
ESTIMATED_TOKENS = ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")

#: requests that failed over: (their group's values, the deployments that failed, how many)
Failed = tuple[tuple[object, ...], Sequence[str], int]


def _group(record: UsageRecord, by: Grouping) -> object:
    if by == "key":
        return record.key_id
    if by == "model":
        return record.model
    if by == "deployment":
        return record.deployment
    return dt.datetime.fromtimestamp(record.at, dt.UTC).date().isoformat()


def _sort_key(row: dict[str, object], by: Sequence[Grouping]) -> tuple[str, ...]:
    return tuple(str(row[field]) for field in by)


def totals(records: Iterable[UsageRecord], by: Sequence[Grouping]) -> list[dict[str, object]]:
    """One row per group: the grouping values, ``requests``, each token kind, ``cost``
    (priced requests only), ``errors`` (outcomes other than ``ok``), ``unpriced``
    (requests whose cost is unknown, so ``cost`` is a lower bound), how much of it is
    the gateway's estimate (``estimated`` requests, ``estimated_tokens``,
    ``estimated_cost``) and ``failovers`` (attempts that failed over), sorted by group."""
    counts: dict[tuple[object, ...], list[int]] = {}
    costs: dict[tuple[object, ...], list[float]] = {}
    failed: list[Failed] = []
    for record in records:
        group = tuple(_group(record, field) for field in by)
        row = counts.setdefault(group, [0] * (len(SUMMED) + 5))
        row[0] += 1
        for i, field in enumerate(SUMMED, 1):
            row[i] += getattr(record, field)
        row[-4] += record.outcome != "ok"
        row[-3] += record.cost is None
        money = costs.setdefault(group, [0.0, 0.0])
        money[0] += record.cost or 0.0
        if record.estimated:
            row[-2] += 1
            row[-1] += sum(getattr(record, field) for field in ESTIMATED_TOKENS)
            money[1] += record.cost or 0.0
        if record.tried:
            failed.append((group, record.tried, 1))
    rows: list[dict[str, object]] = [
        {
            **dict(zip(by, group, strict=True)),
            "requests": counts[group][0],
            **dict(zip(SUMMED, counts[group][1 : 1 + len(SUMMED)], strict=True)),
            "cost": costs[group][0],
            "errors": counts[group][-4],
            "unpriced": counts[group][-3],
            "estimated": counts[group][-2],
            "estimated_tokens": counts[group][-1],
            "estimated_cost": costs[group][1],
        }
        for group in counts
    ]
    return with_failovers(rows, by, failed)


def with_failovers(
    rows: list[dict[str, object]], by: Sequence[Grouping], failed: Iterable[Failed]
) -> list[dict[str, object]]:
    """``rows`` (each with its group's values) with ``failovers`` counted from
    ``failed``, a row of its own for a deployment that only failed, sorted by group."""
    place = by.index("deployment") if "deployment" in by else None
    counted: dict[tuple[object, ...], int] = {}
    for group, tried, n in failed:
        if place is None:
            counted[group] = counted.get(group, 0) + len(tried) * n
            continue
        for deployment in tried:
            where = (*group[:place], deployment, *group[place + 1 :])
            counted[where] = counted.get(where, 0) + n
    found = {tuple(row[field] for field in by): row for row in rows}
    for group in counted.keys() - found.keys():
        found[group] = {**dict(zip(by, group, strict=True)), **_EMPTY}
    for group, row in found.items():
        row["failovers"] = counted.get(group, 0)
    return sorted(found.values(), key=lambda row: _sort_key(row, by))


#: the numbers of a group no request ended in (a deployment that only failed over)
_EMPTY: dict[str, object] = {
    "requests": 0,
    **dict.fromkeys(SUMMED, 0),
    "cost": 0.0,
    "errors": 0,
    "unpriced": 0,
    "estimated": 0,
    "estimated_tokens": 0,
    "estimated_cost": 0.0,
}
