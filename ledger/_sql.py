"""The store on a SQL engine: every query once, for SQLite and PostgreSQL alike.

`SqlStore` holds one connection per thread (the gateway calls the store from a
thread pool; neither driver shares a connection between threads safely), and
runs each admission as one write transaction: it gathers the key's `Window`,
asks `decide`, and writes the lease before committing. On SQLite the write
transaction itself excludes every other writer; on PostgreSQL a lock on the key
makes admissions of one key take turns while other keys go on. What the engines
spell differently is in the `Dialect`; every value is a parameter.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from typing import Any, Protocol, cast

import msgspec

from ._admission import WINDOW, Window, decide
from ._dialect import Dialect
from ._key_making import KeyMaking
from ._periods import period_start
from ._records import Admitted, ClientKey, Period, Refused, UsageRecord
from ._report import ESTIMATED_TOKENS, SUMMED, with_failovers
from ._schema import MIGRATIONS, SCHEMA_TABLE, migration
from ._secrets import hash_secret, new_secret
from ._sql_text import (
    ADMISSION,
    GROUPS,
    INSERT_USAGE,
    KEY_COLUMNS,
    USAGE_COLUMNS,
    in_range,
    key_of,
    record_of,
    stored_text,
    usage_row,
)
from ._store import DEFAULT_LEASE_TTL, Grouping

__all__ = ["Connection", "SqlStore", "StoreError"]


class StoreError(Exception):
    """The usage store cannot be opened or reached; the message names the cause and the
    fix, and never a password."""


class Cursor(Protocol):
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What the store needs of a DB-API connection in autocommit mode."""

    def execute(self, sql: Any, params: Sequence[object] = ..., /) -> Cursor: ...
    def cursor(self) -> Any: ...
    def close(self) -> None: ...


class SqlStore(KeyMaking):
    """`Store` on a SQL engine; `SQLiteStore` and `PostgresStore` give it a connection."""

    def __init__(
        self,
        connect: Callable[[], Connection],
        dialect: Dialect,
        *,
        label: str,
        failures: tuple[type[Exception], ...],
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> None:
        self._connect = connect
        self._failures = failures  # the driver's errors of the engine, not of the SQL
        self._dialect = dialect
        self._label = label  # what repr and errors show: the location, password redacted
        self.lease_ttl = lease_ttl
        self._pid = os.getpid()
        self._local = threading.local()
        self._lock = threading.Lock()
        #: this process's writers take turns here when the engine lets one write at a
        #: time (SQLite): a thread waits on a lock, not in the driver's sleeping retries
        self._writing = threading.Lock() if dialect.lock_key is None else None
        self._connections: list[Connection] = []
        self._closed = False
        self._migrate()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._label!r})"

    # -- keys

    def _add_key(self, key: ClientKey, secret_hash: str) -> None:
        with self._write() as conn:
            self._run(
                conn,
                "INSERT INTO ledger_keys (id, name, secret_hash, created_at, models, budget,"
                " period, rpm, tpm, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key.id,
                    stored_text(key.name),
                    secret_hash,
                    key.created_at,
                    msgspec.json.encode(list(key.models)).decode(),
                    key.budget,
                    key.period,
                    key.rpm,
                    key.tpm,
                    key.expires_at,
                ),
            )

    def rotate_key(self, key_id: str, *, now: float) -> str:
        secret = new_secret()
        with self._write() as conn:
            self._existing(conn, key_id)
            self._run(
                conn,
                "UPDATE ledger_keys SET secret_hash = ? WHERE id = ?",
                (hash_secret(secret), key_id),
            )
        return secret

    def revoke_key(self, key_id: str, *, now: float) -> None:
        with self._write() as conn:
            self._existing(conn, key_id)
            self._run(conn, "UPDATE ledger_keys SET revoked_at = ? WHERE id = ?", (now, key_id))

    def list_keys(self) -> list[ClientKey]:
        rows = self._query(f"SELECT {KEY_COLUMNS} FROM ledger_keys ORDER BY created_at, seq")
        return [key_of(row) for row in rows]

    def key_for_secret(self, secret: str) -> ClientKey | None:
        # looked up by hash through the index: timing reveals at most how a hash of the
        # caller's own guess compares, nothing about a stored secret
        wanted = hash_secret(secret)
        rows = self._query(
            f"SELECT {KEY_COLUMNS}, secret_hash FROM ledger_keys WHERE secret_hash = ?",
            (wanted,),
        )
        for row in rows:
            if hmac.compare_digest(row[-1], wanted):
                return key_of(row[:-1])
        return None

    # -- admission and usage

    def admit(
        self, key: ClientKey, model: str, *, now: float, estimate: float | None
    ) -> Admitted | Refused:
        lease = "l" + secrets.token_hex(8)
        since = now - WINDOW
        start = period_start(key.period, now)
        with self._write(lock=key.id) as conn:
            # the key as it is now (a revocation since the caller looked), what its
            # requests in flight hold and its period's spend: one round trip
            row = self._run(conn, ADMISSION, (key.id, now, key.id, start, key.id)).fetchone()
            if row is None:  # a key this store does not hold: as the caller saw it
                current, reserved, spent = key, self._reserved(conn, key.id, now), None
            else:
                current, reserved, spent = key_of(row[:-2]), float(row[-2] or 0.0), row[-1]
            if spent is None or current.period != key.period:
                spent = self._spent(conn, key.id, period_start(current.period, now))
            window = Window(
                requests=self._arrivals(conn, current, since),
                tokens=self._tokens(conn, current, since),
                spent=float(spent),
                reserved=reserved,
            )
            verdict = decide(current, model, window, now=now, estimate=estimate, lease=lease)
            if isinstance(verdict, Admitted):
                self._run(
                    conn,
                    "INSERT INTO ledger_leases (lease, key_id, at, reserved, expires_at,"
                    " settled) VALUES (?, ?, ?, ?, ?, 0)",
                    (lease, key.id, now, verdict.cap or 0.0, now + self.lease_ttl),
                )
        return verdict

    def settle(self, lease: str | None, record: UsageRecord) -> None:
        self.settle_many([(lease, record)])

    def settle_many(self, settled: Sequence[tuple[str | None, UsageRecord]]) -> None:
        # one transaction for them all: a busy gateway's records cost one commit a batch
        if not settled:
            return
        periods: dict[str, Period | None] = {}  # key id -> its budget's period (None: unknown)
        spend: dict[tuple[str, float], float] = {}  # (key id, period's start) -> cost
        with self._write() as conn:
            for _, record in settled:
                if record.key_id is not None and record.cost:
                    if record.key_id not in periods:
                        periods[record.key_id] = self._period(conn, record.key_id)
                    period = periods[record.key_id]
                    if period is not None:  # a key this store does not hold: no budget
                        counted = (record.key_id, period_start(period, record.at))
                        spend[counted] = spend.get(counted, 0.0) + record.cost
            leases = [(lease,) for lease, _ in settled if lease is not None]
            self._run_many(conn, "UPDATE ledger_leases SET settled = 1 WHERE lease = ?", leases)
            self._run_many(
                conn,
                "INSERT INTO ledger_spend (key_id, since, spent) VALUES (?, ?, ?)"
                " ON CONFLICT (key_id, since) DO UPDATE SET spent = ledger_spend.spent + ?",
                [(key_id, since, cost, cost) for (key_id, since), cost in spend.items()],
            )
            self._run_many(conn, INSERT_USAGE, [usage_row(record) for _, record in settled])
            # housekeeping: the leases admission no longer reads (settled ones past the
            # requests-per-minute window, expired ones), as of the batch's latest end a
            # window ago, so a host whose clock runs ahead takes nothing still counted
            past = max(record.at + record.latency for _, record in settled) - WINDOW
            self._run(
                conn,
                "DELETE FROM ledger_leases WHERE at <= ? AND (settled = 1 OR expires_at <= ?)",
                (past, past),
            )

    def spent(self, key_id: str, *, now: float) -> float:
        conn = self._conn()
        rows = self._run(conn, "SELECT period FROM ledger_keys WHERE id = ?", (key_id,)).fetchall()
        if not rows:
            raise LookupError(f"no client key has the id {key_id!r}")
        return self._spent(conn, key_id, period_start(rows[0][0], now))

    def records(
        self, *, since: float, until: float, key_id: str | None = None, limit: int = 1000
    ) -> list[UsageRecord]:
        where, params = in_range(since, until, key_id)
        rows = self._query(
            f"SELECT {', '.join(USAGE_COLUMNS)} FROM ledger_usage"
            f" WHERE {where} ORDER BY at DESC, seq LIMIT ?",
            (*params, limit),
        )
        return [record_of(row) for row in rows]

    def failures(self, *, limit: int = 100) -> list[UsageRecord]:
        rows = self._query(  # the partial index ledger_usage_failed_at
            f"SELECT {', '.join(USAGE_COLUMNS)} FROM ledger_usage"
            " WHERE outcome <> 'ok' ORDER BY at DESC, seq LIMIT ?",
            (limit,),
        )
        return [record_of(row) for row in rows]

    def report(
        self,
        by: Sequence[Grouping],
        *,
        since: float,
        until: float,
        key_id: str | None = None,
    ) -> list[dict[str, object]]:
        groups = [self._dialect.day if field == "day" else GROUPS[field] for field in by]
        sums = ", ".join(f"CAST(SUM({name}) AS BIGINT)" for name in SUMMED)
        guessed = " + ".join(ESTIMATED_TOKENS)
        where, params = in_range(since, until, key_id)
        grouped = f" GROUP BY {', '.join(groups)}" if groups else ""
        rows = self._query(
            f"SELECT {''.join(g + ', ' for g in groups)}COUNT(*), {sums},"
            " SUM(COALESCE(cost, 0.0)),"
            " CAST(SUM(CASE WHEN outcome = 'ok' THEN 0 ELSE 1 END) AS BIGINT),"
            " CAST(SUM(CASE WHEN cost IS NULL THEN 1 ELSE 0 END) AS BIGINT),"
            " CAST(SUM(estimated) AS BIGINT),"
            f" CAST(SUM(CASE WHEN estimated = 1 THEN {guessed} ELSE 0 END) AS BIGINT),"
            " SUM(CASE WHEN estimated = 1 THEN COALESCE(cost, 0.0) ELSE 0.0 END)"
            f" FROM ledger_usage WHERE {where}{grouped}",
            params,
        )
        n = len(by)
        found: list[dict[str, object]] = [
            {
                **dict(zip(by, row[:n], strict=True)),
                "requests": row[n],
                **dict(zip(SUMMED, row[n + 1 : n + 1 + len(SUMMED)], strict=True)),
                "cost": float(row[-6]),
                "errors": row[-5],
                "unpriced": row[-4],
                "estimated": row[-3],
                "estimated_tokens": row[-2],
                "estimated_cost": float(row[-1]),
            }
            for row in rows
            if row[n]  # no group: an empty range still yields one all-NULL row
        ]
        # the requests that failed over, by the deployments that failed, counted there
        failed = self._query(
            f"SELECT {''.join(g + ', ' for g in groups)}tried, COUNT(*) FROM ledger_usage"
            f" WHERE {where} AND tried <> '[]' GROUP BY {''.join(g + ', ' for g in groups)}tried",
            params,
        )
        return with_failovers(
            found,
            by,
            ((tuple(row[:n]), msgspec.json.decode(row[n]), row[n + 1]) for row in failed),
        )

    def prune(self, *, before: float) -> int:
        with self._write() as conn:
            gone = self._run(
                conn, "SELECT COUNT(*) FROM ledger_usage WHERE at < ?", (before,)
            ).fetchone()
            self._run(conn, "DELETE FROM ledger_usage WHERE at < ?", (before,))
            self._run(
                conn,
                "DELETE FROM ledger_leases WHERE at < ? AND (settled = 1 OR expires_at <= ?)",
                (before, before),
            )
        return int(gone[0])

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for conn in connections:
            with suppress(Exception):
                conn.close()

    # -- the engine

    def _conn(self) -> Connection:
        if self._closed:
            raise StoreError(f"the usage store {self._label} is closed")
        if self._pid != os.getpid():  # forked (a worker): the parent's connections stay its own
            self._pid, self._local, self._connections = os.getpid(), threading.local(), []
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            with self._lock:
                if self._closed:  # closed while this thread connected
                    conn.close()
                    raise StoreError(f"the usage store {self._label} is closed")
                self._connections.append(conn)
            self._local.conn = conn
        return conn

    def _run(self, conn: Connection, sql: str, params: Sequence[object] = ()) -> Cursor:
        """Execute ``sql``; the engine failing (unreachable, busy past the timeout) is a
        `StoreError`, and this thread connects afresh on its next call."""
        try:
            return conn.execute(self._dialect.sql(sql), params)
        except self._failures as exc:
            self._forget(conn)
            raise StoreError(
                f"the usage store {self._label} failed: {self._explain(exc)}"
            ) from None

    def _run_many(self, conn: Connection, sql: str, params: Sequence[Sequence[object]]) -> None:
        """`_run` ``sql`` once per parameter row, in as few round trips as the driver
        makes (psycopg pipelines them)."""
        if not params:
            return
        try:
            conn.cursor().executemany(self._dialect.sql(sql), params)
        except self._failures as exc:
            self._forget(conn)
            raise StoreError(
                f"the usage store {self._label} failed: {self._explain(exc)}"
            ) from None

    def _forget(self, conn: Connection) -> None:
        """Drop this thread's broken connection: its next call connects afresh."""
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
            with self._lock:
                if conn in self._connections:
                    self._connections.remove(conn)
            with suppress(Exception):
                conn.close()

    def _explain(self, exc: BaseException) -> str:
        """What the driver said, fit to show (a subclass removes what must not be)."""
        return " ".join(str(exc).split())

    def _query(self, sql: str, params: Sequence[object] = ()) -> list[Any]:
        return self._run(self._conn(), sql, params).fetchall()

    @contextmanager
    def _write(self, lock: str | None = None) -> Iterator[Connection]:
        """One write transaction (admissions of the key ``lock`` take turns in it)."""
        with self._writing or nullcontext():
            conn = self._conn()
            yield from self._transaction(conn, lock)

    def _transaction(self, conn: Connection, lock: str | None) -> Iterator[Connection]:
        self._run(conn, self._dialect.begin_write)
        try:
            if lock is not None and self._dialect.lock_key is not None:
                self._run(conn, self._dialect.lock_key, (lock,))
            yield conn
        except BaseException:
            with suppress(Exception):
                conn.execute("ROLLBACK")
            raise
        self._run(conn, "COMMIT")

    # Admission reads aggregates, not the window's rows: a key serving hundreds of
    # requests a second would otherwise read every lease and record of the last
    # minute on each admission. What `decide` needs is kept exactly.

    def _arrivals(self, conn: Connection, key: ClientKey, since: float) -> list[float]:
        """The newest ``key.rpm`` arrivals in the window (none without a limit): enough
        for `decide` to count the limit and find when the oldest of them leaves."""
        if key.rpm is None:
            return []
        rows = self._run(
            conn,
            "SELECT at FROM ledger_leases WHERE key_id = ? AND at > ? ORDER BY at DESC LIMIT ?",
            (key.id, since, key.rpm),
        ).fetchall()
        return [at for (at,) in rows]

    def _tokens(self, conn: Connection, key: ClientKey, since: float) -> list[tuple[float, int]]:
        """The (end, tokens) of the window's settled requests (none without a limit)."""
        if key.tpm is None:
            return []
        rows = self._run(
            conn,
            "SELECT ended, input_tokens + cached_tokens + output_tokens FROM ledger_usage"
            " WHERE key_id = ? AND ended > ?",
            (key.id, since),
        ).fetchall()
        return [(at, n) for at, n in rows]

    def _reserved(self, conn: Connection, key_id: str, now: float) -> float:
        """The money the key's requests in flight hold (their leases unsettled, unexpired);
        ``settled = 0`` as the open-leases index is written, so the engine uses it."""
        row = self._run(
            conn,
            "SELECT SUM(reserved) FROM ledger_leases"
            " WHERE key_id = ? AND settled = 0 AND expires_at > ?",
            (key_id, now),
        ).fetchone()
        return float(row[0] or 0.0)

    def _existing(self, conn: Connection, key_id: str) -> None:
        if not self._run(conn, "SELECT 1 FROM ledger_keys WHERE id = ?", (key_id,)).fetchall():
            raise LookupError(f"no client key has the id {key_id!r}")

    def _spent(self, conn: Connection, key_id: str, since: float) -> float:
        """The key's spend in the period that began at ``since``: one row, not a sum over
        the period's records, so admission costs the same on the last day of a month."""
        row = self._run(
            conn,
            "SELECT spent FROM ledger_spend WHERE key_id = ? AND since = ?",
            (key_id, since),
        ).fetchone()
        return float(row[0]) if row else 0.0

    def _period(self, conn: Connection, key_id: str) -> Period | None:
        """The period of the key's budget (None: a key this store does not hold)."""
        rows = self._run(conn, "SELECT period FROM ledger_keys WHERE id = ?", (key_id,)).fetchall()
        return cast("Period", rows[0][0]) if rows else None

    def _migrate(self) -> None:
        with self._write(lock="ledger_schema") as conn:
            self._run(conn, SCHEMA_TABLE)
            row = self._run(conn, "SELECT MAX(version) FROM ledger_schema").fetchone()
            version = int(row[0] or 0)
            if version > len(MIGRATIONS):
                raise StoreError(
                    f"the usage store {self._label} has schema version {version}, newer than "
                    f"this streamfn knows ({len(MIGRATIONS)}): upgrade streamfn, or use "
                    "another store"
                )
            for step in MIGRATIONS[version:]:
                for statement in migration(step, self._dialect):
                    self._run(conn, statement)
            if version < len(MIGRATIONS):
                self._run(conn, "DELETE FROM ledger_schema")
                self._run(
                    conn, "INSERT INTO ledger_schema (version) VALUES (?)", (len(MIGRATIONS),)
                )
