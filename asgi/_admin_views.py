"""What the dashboard shows, as JSON: streams in flight, usage over time, deployment
health and recent errors.

Each view is a plain function of what the App holds (its flights, its store, its
backend) and the time the caller passes in, so it reads no clock of its own. A view
never holds a secret: flights and usage records name a client key by its public id
and name only. The usage views call the store, which may be a database: the App
runs them on a worker thread.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal

import msgspec

from streamfn.core.serve import HTTPError
from streamfn.ledger import Store, UsageRecord

from ._board import Snapshot
from ._observe import Flight

__all__ = [
    "MAX_BUCKETS",
    "MAX_RECORDS",
    "Bucket",
    "RecentErrors",
    "deployments_view",
    "flights_view",
    "merged_deployments",
    "merged_flights",
    "stored_errors",
    "usage_view",
]

log = logging.getLogger("streamfn")

Bucket = Literal["hour", "day"]
_SECONDS: Final[dict[str, int]] = {"hour": 3600, "day": 86400}
#: the most columns a chart draws (a month by the hour); more is a 400 naming the fix
MAX_BUCKETS: Final = 24 * 32
#: the most records read for an hourly chart; past it the answer says it is partial
MAX_RECORDS: Final = 100_000
#: a field of a deployment's report never shown, whatever the backend put in it
_SECRET_FIELD: Final = re.compile(r"(^|_)(key|secret|token|password|authorization)$", re.I)
#: how much of a client-facing error message the errors panel keeps
MESSAGE_CHARS: Final = 300


def flights_view(flights: Iterable[Flight], now: float) -> list[dict[str, Any]]:
    """The requests running now, oldest first. ``now`` is the runtime's clock.

    ``deltas_per_second`` (events of the answer per second since its first output) is
    the proxy for tokens per second while the final usage is not yet known."""
    rows = []
    for flight in sorted(flights, key=lambda f: f.started):
        streaming = None if flight.first_output is None else now - flight.first_output
        rows.append(
            {
                "id": flight.id,
                "route": flight.route,
                "model": flight.model,
                "stream": flight.stream,
                "key_id": flight.key_id,
                "key_name": flight.key_name,
                "deployment": flight.deployment,
                "age": now - flight.started,
                "first_token": flight.time_to_first_output,
                "deltas": flight.deltas,
                "deltas_per_second": flight.deltas / streaming if streaming else None,
                "usage": flight.usage,
            }
        )
    return rows


class RecentErrors:
    """An observer keeping the last ``keep`` requests that did not end ``ok``.

    Each is kept as it closed (a row, not the flight), its message cut to
    `MESSAGE_CHARS`: an upstream's long error text costs no more memory than a short one.
    """

    def __init__(self, keep: int = 100) -> None:
        self.keep = keep
        self._kept: deque[dict[str, Any]] = deque(maxlen=keep)

    def opened(self, flight: Flight) -> None:
        pass

    def closed(self, flight: Flight) -> None:
        if flight.outcome == "ok":
            return
        message = flight.error or ""
        if len(message) > MESSAGE_CHARS:
            message = message[:MESSAGE_CHARS] + "… (cut)"
        self._kept.append(
            {
                "at": flight.arrived,
                "id": flight.id,
                "route": flight.route,
                "model": flight.model,
                "key_id": flight.key_id,
                "key_name": flight.key_name,
                "outcome": flight.outcome,
                "message": message,
            }
        )

    def rows(self) -> list[dict[str, Any]]:
        """The kept errors, newest first."""
        return list(reversed(self._kept))


def merged_flights(own: Snapshot, others: list[Snapshot], workers: int) -> dict[str, Any]:
    """Every worker's streams in flight, oldest first, each row naming its ``worker``
    (its process id). ``own`` is the answering worker's, taken now; another's age
    counts the time since it wrote its snapshot. ``whole`` is false while fewer than
    ``workers`` snapshots were found (a worker just woken, or gone); ``answered_by``
    names the worker that answered."""
    rows = []
    for snapshot in [own, *others]:
        late = max(0.0, own.written - snapshot.written)
        rows += [
            {**row, "age": _number(row.get("age")) + late, "worker": snapshot.pid}
            for row in snapshot.flights
        ]
    rows.sort(key=lambda row: -row["age"])
    seen = 1 + len(others)
    return {
        "flights": rows,
        "not_shown": sum(s.not_shown for s in (own, *others)),
        "workers": seen,
        "whole": seen >= workers,
        "answered_by": own.pid,
    }


#: the counts of a deployment's report added up across workers
_SUMMED: Final = ("in_flight", "requests", "failures")


def merged_deployments(own: Snapshot, others: list[Snapshot]) -> dict[str, Any]:
    """Each deployment once, its counts added up over the workers, its rest the longest
    any worker gives it, and ``resting_in``: the workers (process ids) resting it."""
    merged: dict[str, dict[str, Any]] = {}
    for snapshot in [own, *others]:
        for row in snapshot.deployments.get("deployments", []):
            name = msgspec.json.encode([row.get("name"), row.get("deployment")]).decode()
            into = merged.get(name)
            if into is None:
                into = merged[name] = {**row}
                if "cooling_for" in row:
                    into["resting_in"] = []
            else:
                for field in _SUMMED:
                    if isinstance(into.get(field), int) and isinstance(row.get(field), int):
                        into[field] += row[field]
            resting = row.get("cooling_for")
            if isinstance(resting, int | float) and resting > 0:
                into["cooling_for"] = max(_number(into.get("cooling_for")), resting)
                into.setdefault("resting_in", []).append(snapshot.pid)
                into["last_error"] = row.get("last_error", into.get("last_error"))
    return {**own.deployments, "deployments": list(merged.values()), "workers": 1 + len(others)}


def stored_errors(
    records: Iterable[UsageRecord], names: dict[str, str], seen: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The store's newest records not ``ok`` as the errors panel's rows, newest first.
    The store keeps no message: a row this worker saw itself (``seen``, its
    `RecentErrors`) carries its request id and message, any other has None."""
    here = {(r["at"], r["route"], r["model"], r["key_id"], r["outcome"]): r for r in seen}
    rows = []
    for r in records:
        own = here.get((r.at, r.route, r.model, r.key_id, r.outcome), {})
        rows.append(
            {
                "at": r.at,
                "id": own.get("id"),
                "route": r.route,
                "model": r.model,
                "key_id": r.key_id,
                "key_name": names.get(r.key_id) if r.key_id else None,
                "deployment": r.deployment,
                "outcome": r.outcome,
                "message": own.get("message"),
            }
        )
    return rows


def deployments_view(backend: object) -> dict[str, Any]:
    """Each deployment's health as the backend reports it (``deployments()``), or
    ``available: false`` for a backend with no deployment pools."""
    report = getattr(backend, "deployments", None)
    if report is None:
        return {"available": False, "deployments": []}
    try:
        rows = msgspec.to_builtins(list(report() if callable(report) else report))
        shown = [
            {k: v for k, v in row.items() if not _SECRET_FIELD.search(str(k))}
            for row in rows
            if isinstance(row, dict)
        ]
        return {"available": True, "deployments": shown}
    except Exception:
        log.exception("the backend's deployment report failed")
        return {"available": True, "deployments": [], "error": "the deployment report failed"}


def usage_view(store: Store | None, *, now: float, since: float, bucket: Bucket) -> dict[str, Any]:
    """Spend and tokens per key and per model in ``bucket``-long columns from ``since``
    (rounded down to a whole bucket, UTC) to ``now``, and ``estimated_cost``: how much
    of that spend is the gateway's estimate (answers whose upstream reported no usage).

    Daily columns come from `Store.report` (grouped by the store, complete); hourly ones
    from `Store.records`, at most `MAX_RECORDS` of them: past that ``partial`` is true
    and the oldest hours are short."""
    if store is None:
        return {
            "store": False,
            "message": "this server keeps no usage record (it runs without a usage store)",
        }
    size = _SECONDS[bucket]
    finite = math.isfinite(since) and since < now
    start = math.floor(since / size) * size if finite else now
    count = max(1, math.ceil((now - start) / size))
    if not finite or count > MAX_BUCKETS:
        raise HTTPError(
            400,
            "invalid_request",
            f"since must be a Unix time in the past and at most {MAX_BUCKETS} {bucket}s "
            "ago (use bucket=day for a longer window)",
        )
    names = {key.id: key.name for key in store.list_keys()}
    partial = False
    if bucket == "day":
        cells = _report_cells(store, start, now, size)
    else:
        records = store.records(since=start, until=now + 1, limit=MAX_RECORDS)
        partial = len(records) >= MAX_RECORDS
        cells = _record_cells(records, start, size)
    by_key = _series(cells, "key", count, lambda k: names.get(k, k) if k else "(no key)")
    return {
        "store": True,
        "bucket": bucket,
        "starts": [start + i * size for i in range(count)],
        "labels": [_label(start + i * size, bucket) for i in range(count)],
        "partial": partial,
        "by_key": by_key,
        "by_model": _series(cells, "model", count, str),
        "estimated_cost": sum(sum(series["estimated"]) for series in by_key),
    }


#: one total: (column, "key" or "model", the key id or model, cost, tokens, estimated cost)
_Cell = tuple[int, str, "str | None", float, int, float]
_TOKENS: Final = ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")


def _record_cells(records: Iterable[UsageRecord], start: float, size: int) -> list[_Cell]:
    cells: list[_Cell] = []
    for r in records:
        column, cost = int((r.at - start) // size), r.cost or 0.0
        tokens = sum(getattr(r, name) for name in _TOKENS)
        guessed = cost if r.estimated else 0.0
        cells += [
            (column, "key", r.key_id, cost, tokens, guessed),
            (column, "model", r.model, cost, tokens, guessed),
        ]
    return cells


def _report_cells(store: Store, start: float, now: float, size: int) -> list[_Cell]:
    cells: list[_Cell] = []
    for by in ("key", "model"):
        for row in store.report(("day", by), since=start, until=now + 1):
            day = dt.datetime.fromisoformat(str(row["day"])).replace(tzinfo=dt.UTC)
            column = int((day.timestamp() - start) // size)
            tokens = sum(_number(row[name]) for name in _TOKENS)
            name = row[by]
            named = None if name is None else str(name)
            guessed = _number(row["estimated_cost"])
            cells.append((column, by, named, _number(row["cost"]), int(tokens), guessed))
    return cells


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _series(
    cells: list[_Cell], by: str, count: int, label: Callable[[Any], str]
) -> list[dict[str, Any]]:
    """One series per key (or model): its cost, tokens and estimated cost in each
    column, largest spender first."""
    series: dict[object, dict[str, Any]] = {}
    for column, kind, name, cost, tokens, guessed in cells:
        if kind != by:
            continue
        row = series.setdefault(
            name,
            {
                "id": name,
                "label": label(name),
                "cost": [0.0] * count,
                "tokens": [0] * count,
                "estimated": [0.0] * count,
            },
        )
        if 0 <= column < count:
            row["cost"][column] += cost
            row["tokens"][column] += tokens
            row["estimated"][column] += guessed
    return sorted(series.values(), key=lambda s: (-sum(s["cost"]), -sum(s["tokens"]), s["label"]))


def _label(at: float, bucket: Bucket) -> str:
    moment = dt.datetime.fromtimestamp(at, dt.UTC)
    return moment.strftime("%Y-%m-%d") if bucket == "day" else moment.strftime("%Y-%m-%d %H:00")
