"""Opening a store: the URL forms, the default location, errors that name the fix, no password shown."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from streamfn.ledger import (
    Admitted,
    PostgresStore,
    SQLiteStore,
    StoreError,
    UsageRecord,
    default_store_url,
    open_store,
)

NOW = 1_800_000_000.0


def test_default_location_is_the_variable_else_the_state_folder() -> None:
    assert default_store_url({"STREAMFN_STORE": "postgresql://h/db"}) == "postgresql://h/db"
    assert default_store_url({"XDG_STATE_HOME": "/srv/state"}) == (
        "sqlite:///srv/state/streamfn/gateway.db"
    )
    home = os.path.expanduser("~")
    assert default_store_url({}) == f"sqlite://{home}/.local/state/streamfn/gateway.db"


def test_url_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_url = open_store(f"sqlite://{tmp_path}/a/one.db")
    by_path = open_store(str(tmp_path / "two.db"))
    monkeypatch.setenv("STREAMFN_STORE", str(tmp_path / "three.db"))
    by_default = open_store()
    for store, name in [(by_url, "a/one.db"), (by_path, "two.db"), (by_default, "three.db")]:
        assert isinstance(store, SQLiteStore) and store.path == tmp_path / name
        store.close()
    with pytest.raises(StoreError, match="three slashes"):
        open_store("sqlite://relative.db")
    with pytest.raises(StoreError, match=r"redis://u:\*\*\*@h.*postgresql://") as caught:
        open_store("redis://u:hunter2@h/0")
    assert "hunter2" not in str(caught.value)


def test_the_file_is_its_owners_and_in_wal_mode_and_survives_a_restart(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "state" / "gateway.db")
    key, secret = store.create_key("ci", now=NOW)
    store.close()
    assert stat.S_IMODE(os.stat(tmp_path / "state" / "gateway.db").st_mode) == 0o600
    again = SQLiteStore(tmp_path / "state" / "gateway.db")
    assert again.key_for_secret(secret) == key
    again.close()
    with sqlite3.connect(tmp_path / "state" / "gateway.db") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("SELECT version FROM ledger_schema").fetchall() == [(4,)]
    raw.close()


def test_a_store_from_a_newer_streamfn_is_refused(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "g.db").close()
    with sqlite3.connect(tmp_path / "g.db") as raw:
        raw.execute("UPDATE ledger_schema SET version = 99")
    raw.close()
    with pytest.raises(StoreError, match=r"schema version 99.*upgrade streamfn"):
        SQLiteStore(tmp_path / "g.db")


def test_an_unusable_path_names_itself_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "not-a-db").write_bytes(b"this is no database file, just text" * 100)
    with pytest.raises(StoreError, match=r"not-a-db.*STREAMFN_STORE"):
        SQLiteStore(tmp_path / "not-a-db")
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match=r"file/below.db.*--store"):
        SQLiteStore(tmp_path / "file" / "below.db")


def test_threads_get_their_own_connection_and_close_ends_them(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db")
    key, _ = store.create_key("ci", now=NOW, budget=8.0)
    verdicts: list[object] = []

    def admit() -> None:
        verdicts.append(store.admit(key, "m", now=NOW, estimate=1.0))

    threads = [threading.Thread(target=admit) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(isinstance(v, Admitted) for v in verdicts) == 8
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_keys()


def test_no_password_in_an_unreachable_postgres_error_or_repr(tmp_path: Path) -> None:
    url = f"postgresql://ops:s3cr%40t-pw@/ledger?host={tmp_path}&port=1"
    with pytest.raises(StoreError) as caught:
        open_store(url)
    message = str(caught.value)
    assert "cannot reach the PostgreSQL store" in message and "check that the server" in message
    assert "s3cr" not in message and "ops:***@" in message


def test_postgres_repr_redacts(fresh_url: Callable[[str], str]) -> None:
    url = fresh_url("postgresql")
    with_password = url.replace("streamfn@", "streamfn:hunter2@")  # trust auth ignores it
    store = PostgresStore(with_password)
    assert "hunter2" not in repr(store) and "streamfn:***@" in repr(store)
    store.close()


def test_a_store_busy_past_its_timeout_is_a_store_error_and_recovers(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "g.db", busy_timeout=0.05)
    key, _ = store.create_key("ci", now=NOW)
    holder = sqlite3.connect(tmp_path / "g.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another worker holds the write lock
    with pytest.raises(StoreError, match=r"g\.db failed: database is locked"):
        store.admit(key, "m", now=NOW, estimate=None)
    holder.execute("ROLLBACK")
    holder.close()
    assert isinstance(store.admit(key, "m", now=NOW, estimate=None), Admitted)
    store.close()


def test_a_lost_postgres_connection_is_a_store_error_then_replaced(
    fresh_url: Callable[[str], str],
) -> None:
    import psycopg

    url = fresh_url("postgresql")
    store = PostgresStore(url.replace("streamfn@", "streamfn:hunter2@"))
    key, _ = store.create_key("ci", now=NOW)
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    with pytest.raises(StoreError, match="failed: ") as caught:
        store.admit(key, "m", now=NOW, estimate=None)
    assert "hunter2" not in str(caught.value) and "\n" not in str(caught.value)
    assert isinstance(store.admit(key, "m", now=NOW, estimate=None), Admitted)
    store.close()


def test_hostile_client_text_is_stored_safely(url: str) -> None:
    """A client's model name with a NUL, a lone surrogate (valid in JSON) or a megabyte
    of text is recorded, never an error that loses the record."""
    store = open_store(url)
    key, _ = store.create_key("a\x00b", now=NOW)
    for model in ["x\x00y", "z\ud800", "m" * 1_000_000, "'; DROP TABLE ledger_usage; --"]:
        store.settle(None, UsageRecord(at=NOW, key_id=key.id, route="/v1/\x00", model=model))
    kept = store.records(since=NOW, until=NOW + 1)
    assert sorted(r.model for r in kept) == sorted(
        ["x\ufffdy", "z?", "m" * 511 + "…", "'; DROP TABLE ledger_usage; --"]
    )
    assert {r.route for r in kept} == {"/v1/\ufffd"}
    assert store.list_keys()[0].name == "a\ufffdb"
    store.close()


@pytest.mark.parametrize(
    ("url", "shown", "password"),
    [
        ("postgresql://ops:pw-1@db:5432/ledger", "postgresql://ops:***@db:5432/ledger", "pw-1"),
        ("postgresql://ops:p%40w@db/ledger", "postgresql://ops:***@db/ledger", "p@w"),
        ("postgresql://db/ledger?password=pw-1&sslmode=require", "postgresql://db/ledger?password=***&sslmode=require", "pw-1"),
        ("host=db password='pw-1 x' dbname=ledger", "host=db password=*** dbname=ledger", "pw-1 x"),
        ("postgresql://ops:pw-1@[db/ledger", "postgresql://***", "pw-1"),
        ("postgresql://ops@db/ledger", "postgresql://ops@db/ledger", None),
    ],
)  # fmt: skip
def test_redacted_forms(url: str, shown: str, password: str | None) -> None:
    from streamfn.ledger._redact import redact, without_password

    assert redact(url) == shown
    said = without_password(f"failed for {url}\n  the server said: {password}", url)
    assert "\n" not in said
    assert password is None or password not in said


def test_a_forked_child_connects_afresh(tmp_path: Path) -> None:
    """A store opened before a fork (a server forking its workers) must not share the
    parent's connection with the child: SQLite forbids it, PostgreSQL would mix replies."""
    store = SQLiteStore(tmp_path / "g.db")
    key, _ = store.create_key("ci", now=NOW)
    parent = store._conn()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether it got a connection of its own, then leave
        ok = store._conn() is not parent and store.list_keys() == [key]
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.close(read)
    os.waitpid(pid, 0)
    assert store._conn() is parent and store.list_keys() == [key]
    store.close()


def test_settling_many_keeps_all_or_none(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "gateway.db")
    key, _ = store.create_key("ci", now=NOW, budget=1.0)
    lease = store.admit(key, "m", now=NOW, estimate=0.5)
    assert isinstance(lease, Admitted)
    good = UsageRecord(at=NOW, key_id=key.id, route="/v1/chat/completions", model="m", cost=0.25)
    bad = msgspec.structs.replace(good, outcome=None)  # type: ignore[arg-type]
    with pytest.raises(sqlite3.IntegrityError):
        store.settle_many([(lease.lease, good), (None, bad)])
    assert store.records(since=0, until=NOW + 1) == [] and store.spent(key.id, now=NOW) == 0.0
    store.close()


class CountingSQLite(SQLiteStore):
    """Counts the SQLite virtual machine's steps (in hundreds): work, not time."""

    steps = 0

    def _open(self) -> Any:
        conn = super()._open()
        conn.set_progress_handler(self._step, 100)  # type: ignore[attr-defined]
        return conn

    def _step(self) -> int:
        self.steps += 1
        return 0  # go on


def test_admission_costs_the_same_however_many_requests_the_minute_held(tmp_path: Path) -> None:
    store = CountingSQLite(tmp_path / "gateway.db")
    key, _ = store.create_key("ci", now=NOW, budget=1e6)

    def admit_and_settle(n: int, at: float) -> int:
        """Steps of the last of ``n`` admissions (each settled) at ``at``."""
        for _ in range(n):
            store.steps = 0
            verdict = store.admit(key, "m", now=at, estimate=0.001)
            assert isinstance(verdict, Admitted)
            used = UsageRecord(at=at, key_id=key.id, route="r", model="m", cost=0.001)
            store.settle(verdict.lease, used)
        return store.steps

    few = admit_and_settle(10, NOW)
    many = admit_and_settle(3000, NOW + 1)
    assert many <= 2 * few + 2  # reading every lease of the minute: hundreds of times more
    store.close()


def test_a_store_made_before_estimates_and_failovers_were_recorded_opens_and_keeps_its_rows(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database of the schema before the ``estimated``, ``attempts`` and ``tried``
    columns (made here by the migrations of then) is migrated when opened: its rows
    read as they were (one attempt, reported usage), and new rows keep the new fields."""
    from streamfn.ledger import _schema, _sql

    monkeypatch.setattr(_sql, "MIGRATIONS", _schema.MIGRATIONS[:2])
    old = open_store(url)
    with old._write() as conn:  # type: ignore[attr-defined]
        old._run(  # type: ignore[attr-defined]
            conn,
            "INSERT INTO ledger_usage (at, key_id, route, model, deployment, input_tokens,"
            " cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens, cost,"
            " latency, first_token, outcome, ended) VALUES (?, NULL, '/r', 'm', 'east', 3, 0,"
            " 0, 4, 0, 0.5, 1.0, NULL, 'ok', ?)",
            (NOW, NOW + 1),
        )
    old.close()
    monkeypatch.setattr(_sql, "MIGRATIONS", _schema.MIGRATIONS)
    store = open_store(url)
    new = UsageRecord(
        at=NOW + 5, key_id=None, route="/r", model="m", deployment="west", cost=0.25,
        estimated=True, attempts=2, tried=("east",),
    )  # fmt: skip
    store.settle(None, new)
    [kept, before] = store.records(since=0, until=NOW + 60)
    assert kept == new
    assert (before.estimated, before.attempts, before.tried, before.input_tokens) == (
        False, 1, (), 3,
    )  # fmt: skip
    [row] = store.report([], since=0, until=NOW + 60)
    assert (row["requests"], row["estimated"], row["estimated_cost"], row["failovers"]) == (
        2, 1, 0.25, 1,
    )  # fmt: skip
    store.close()


def test_recent_failures_come_from_one_index(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "gateway.db").close()
    with sqlite3.connect(tmp_path / "gateway.db") as raw:
        plan = raw.execute(
            "EXPLAIN QUERY PLAN SELECT at FROM ledger_usage"
            " WHERE outcome <> 'ok' ORDER BY at DESC, seq LIMIT 100"
        ).fetchall()
    raw.close()
    assert any("ledger_usage_failed_at" in str(step) for step in plan), plan
