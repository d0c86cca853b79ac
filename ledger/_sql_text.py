"""The ledger's SQL as text and its rows as values: the statements every engine runs,
and the conversions between a row and a `ClientKey` or `UsageRecord`.

Each statement is a constant (client text travels only as parameters), written
once with ``?`` markers for the `Dialect` to respell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ._records import ClientKey, UsageRecord

__all__ = [
    "ADMISSION",
    "GROUPS",
    "INSERT_USAGE",
    "KEY_COLUMNS",
    "TEXT_LIMIT",
    "USAGE_COLUMNS",
    "in_range",
    "key_of",
    "record_of",
    "stored_text",
    "usage_row",
]

KEY_COLUMNS = "id, name, created_at, models, budget, period, rpm, tpm, expires_at, revoked_at"
USAGE_COLUMNS = (
    "at",
    "key_id",
    "route",
    "model",
    "deployment",
    "input_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost",
    "latency",
    "first_token",
    "outcome",
    "estimated",
    "attempts",
    "tried",
)
#: a key, the money its requests in flight hold, and its spend in the period that
#: began at a given second (parameters: id, now, id, period's start, id)
ADMISSION = (
    f"SELECT {KEY_COLUMNS},"
    " (SELECT SUM(reserved) FROM ledger_leases"
    "  WHERE key_id = ? AND settled = 0 AND expires_at > ?),"
    " (SELECT spent FROM ledger_spend WHERE key_id = ? AND since = ?)"
    " FROM ledger_keys WHERE id = ?"
)
INSERT_USAGE = (
    f"INSERT INTO ledger_usage ({', '.join(USAGE_COLUMNS)}, ended)"
    f" VALUES ({', '.join('?' for _ in USAGE_COLUMNS)}, ?)"
)
#: the most characters of client text (a model name, a route) a usage record keeps
TEXT_LIMIT = 512
#: the grouping columns `report` may use: constants, never client text
GROUPS: dict[str, str] = {"key": "key_id", "model": "model", "deployment": "deployment"}


def stored_text(text: str) -> str:
    """``text`` as a column can hold it, whoever wrote it (a client names the model):
    no NUL (PostgreSQL refuses it), no lone surrogate (no encoding has it), and at
    most `TEXT_LIMIT` characters, a cut one ending in ``…``."""
    text = text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


def usage_row(record: UsageRecord) -> tuple[object, ...]:
    """``record``'s values for `INSERT_USAGE`: its text as a column holds it (a flag as
    0 or 1, the deployments tried as a JSON list), and when it ended (its tokens count
    against tokens per minute from then)."""
    return (
        *(_column(getattr(record, name)) for name in USAGE_COLUMNS),
        record.at + record.latency,
    )


def _column(value: object) -> object:
    if isinstance(value, str):
        return stored_text(value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, tuple):
        return msgspec.json.encode([stored_text(str(item)) for item in value]).decode()
    return value


def record_of(row: Sequence[Any]) -> UsageRecord:
    """The `UsageRecord` of a row of `USAGE_COLUMNS`."""
    fields = dict(zip(USAGE_COLUMNS, row, strict=True))
    fields["estimated"] = bool(fields["estimated"])
    fields["tried"] = tuple(msgspec.json.decode(fields["tried"]))
    return UsageRecord(**fields)


def in_range(since: float, until: float, key_id: str | None) -> tuple[str, tuple[object, ...]]:
    """The usage rows in ``[since, until)`` (of ``key_id`` only, if given): a condition
    and its parameters."""
    if key_id is None:
        return "at >= ? AND at < ?", (since, until)
    return "at >= ? AND at < ? AND key_id = ?", (since, until, key_id)


def key_of(row: Sequence[Any]) -> ClientKey:
    key_id, name, created_at, models, budget, period, rpm, tpm, expires_at, revoked_at = row
    return ClientKey(
        id=key_id,
        name=name,
        created_at=created_at,
        models=tuple(msgspec.json.decode(models)),
        budget=budget,
        period=period,
        rpm=rpm,
        tpm=tpm,
        expires_at=expires_at,
        revoked_at=revoked_at,
    )
