"""The store several hosts share: one PostgreSQL database holds keys, counters and the record.

PostgreSQL rather than Redis: one engine keeps both the durable record of use and
the counters admission checks, in the same transaction, so a budget's spend and
the reservations in flight can never disagree; and ``streamfn usage`` is a SQL
query, not a scan. Admissions of one key take turns under a transaction-level
advisory lock on the key (other keys go on at once); the lock ends with the
transaction, so a host that dies holds nothing.
"""

from __future__ import annotations

from typing import Any

from streamfn._extras import extra_hint

from ._dialect import POSTGRES
from ._redact import redact, without_password
from ._sql import Connection, SqlStore, StoreError
from ._store import DEFAULT_LEASE_TTL

__all__ = ["PostgresStore"]

#: seconds to wait for the server before saying it is unreachable
CONNECT_TIMEOUT = 10


class PostgresStore(SqlStore):
    """`Store` in the PostgreSQL database ``url`` names (``postgresql://…``); needs the
    ``team`` extra (psycopg)."""

    def __init__(self, url: str, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self._url = url
        psycopg = _driver()
        super().__init__(
            self._open,
            POSTGRES,
            label=redact(url),
            # the server or the network failing; a broken connection is replaced
            failures=(psycopg.OperationalError, psycopg.InterfaceError),
            lease_ttl=lease_ttl,
        )

    def _explain(self, exc: BaseException) -> str:
        return without_password(str(exc), self._url)

    def _open(self) -> Connection:
        psycopg = _driver()
        try:
            conn: Connection = psycopg.connect(
                self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot reach the PostgreSQL store {redact(self._url)}: "
                f"{self._explain(exc)}; check that the server runs and the URL's "
                "host, port, user and database (--store, or STREAMFN_STORE)"
            ) from None
        return conn


def _driver() -> Any:
    """psycopg, or a `StoreError` naming the extra that brings it."""
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            f"a PostgreSQL store needs psycopg, which is not installed; {extra_hint('team')}"
        ) from None
    return psycopg
