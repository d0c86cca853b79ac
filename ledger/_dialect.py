"""What differs between the SQL engines the ledger runs on: a small table, not two stores.

Every query is written once, in the SQL both SQLite and PostgreSQL speak, with
``?`` for each parameter; a `Dialect` says how the engine spells what they do not
share (its parameter marker, a write transaction, the per-key lock, a float
column, a row counter, a UTC day). Its entries are constants: client text never
reaches them, it travels only as parameters.
"""

from __future__ import annotations

import msgspec

__all__ = ["POSTGRES", "SQLITE", "Dialect"]


class Dialect(msgspec.Struct, frozen=True, kw_only=True):
    """How one engine spells the few things the ledger's SQL cannot share."""

    name: str
    #: the driver's parameter marker, put where the shared SQL has ``?``
    marker: str
    #: opens a transaction that writes (SQLite takes its write lock here)
    begin_write: str
    #: serialises admissions of one key (its id the parameter); None: ``begin_write``
    #: already serialises every writer
    lock_key: str | None
    #: the column type of Unix seconds and dollars
    float_type: str
    #: an increasing row number, the table's primary key
    serial: str
    #: the UTC calendar day (``YYYY-MM-DD``) of the Unix seconds in ``at``
    day: str

    def sql(self, text: str) -> str:
        """``text`` with this engine's parameter marker."""
        return text if self.marker == "?" else text.replace("?", self.marker)


SQLITE = Dialect(
    name="sqlite",
    marker="?",
    begin_write="BEGIN IMMEDIATE",
    lock_key=None,
    float_type="REAL",
    serial="INTEGER PRIMARY KEY",
    day="date(at, 'unixepoch')",
)

POSTGRES = Dialect(
    name="postgresql",
    marker="%s",
    begin_write="BEGIN",
    # held until the transaction ends: two hosts admitting for one key take turns
    lock_key="SELECT pg_advisory_xact_lock(hashtextextended(?, 7321))",
    float_type="DOUBLE PRECISION",
    serial="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    day="to_char(to_timestamp(at) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
)
