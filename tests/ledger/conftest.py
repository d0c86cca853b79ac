"""The stores under test: memory (the reference), SQLite and a real PostgreSQL server.

``make_store`` opens a fresh, empty store of the parametrized kind (more than one
handle on it by passing the URL it returned); PostgreSQL runs once per session.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from postgres_server import Postgres, postgres_server

from streamfn.ledger import MemoryStore, PostgresStore, SQLiteStore, Store

KINDS = ["memory", "sqlite", "postgresql"]

#: a fresh store: (store, the URL another process opens it by; None for memory)
MakeStore = Callable[..., tuple[Store, str | None]]


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    with postgres_server() as server:
        yield server


@pytest.fixture
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """The URL of a new empty store of ``kind`` (sqlite or postgresql)."""

    def make(kind: str) -> str:
        if kind == "sqlite":
            return f"sqlite://{tmp_path / (secrets.token_hex(4) + '.db')}"
        server: Postgres = request.getfixturevalue("postgres")
        return server.fresh_database()

    return make


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, fresh_url: Callable[[str], str]) -> str:
    """The URL of a new empty SQL store, each kind in turn."""
    return fresh_url(request.param)


@pytest.fixture(params=KINDS)
def make_store(
    request: pytest.FixtureRequest, fresh_url: Callable[[str], str]
) -> Iterator[MakeStore]:
    kind: str = request.param
    opened: list[Store] = []

    def make(**options: float) -> tuple[Store, str | None]:
        store: Store
        if kind == "memory":
            store, url = MemoryStore(**options), None
        else:
            url = fresh_url(kind)
            store = (
                SQLiteStore(url.removeprefix("sqlite://"), **options)
                if kind == "sqlite"
                else PostgresStore(url, **options)
            )
        opened.append(store)
        return store, url

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: MakeStore) -> Store:
    return make_store()[0]
