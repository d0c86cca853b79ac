"""Where the store is: one URL names it, for the CLI and the server alike.

``sqlite:///abs/path.db`` or a bare path is a SQLite file on this host;
``postgresql://…`` a PostgreSQL database several hosts share. With none given,
``$STREAMFN_STORE``, else ``$XDG_STATE_HOME/streamfn/gateway.db`` (state, not
cache: deleting it loses keys and the record of use). A URL's password never
appears in an error or a repr: they show it redacted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ._postgres import PostgresStore
from ._redact import redact
from ._sql import SqlStore, StoreError
from ._sqlite import SQLiteStore

__all__ = ["ENV_STORE", "default_store_url", "open_store"]

#: the variable naming the store when no ``--store`` is given
ENV_STORE = "STREAMFN_STORE"

_POSTGRES = ("postgresql://", "postgres://")


def default_store_url(environ: Mapping[str, str] = os.environ) -> str:
    """``$STREAMFN_STORE``, else the SQLite file in this user's state folder."""
    named = environ.get(ENV_STORE, "").strip()
    if named:
        return named
    state = environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return "sqlite://" + os.path.join(os.path.abspath(state), "streamfn", "gateway.db")


def open_store(url: str | None = None, *, create: bool = True) -> SqlStore:
    """The store ``url`` names (None: `default_store_url`); `StoreError` names what is
    wrong with it and how to fix it, its password redacted. ``create=False``: a SQLite
    file that does not exist is that error, not a new empty store (a PostgreSQL
    store's tables are made on first use either way: its database must exist)."""
    url = default_store_url() if url is None else url
    if url.startswith(_POSTGRES):
        return PostgresStore(url)
    if url.startswith("sqlite://"):
        path = url.removeprefix("sqlite://")
        if not path.startswith("/"):
            raise StoreError(
                f"the store URL {redact(url)!r} has no absolute path: write "
                "sqlite:///absolute/path.db (three slashes), or give a bare path"
            )
        return SQLiteStore(path, create=create)
    if "://" in url:
        raise StoreError(
            f"the store URL {redact(url)!r} names no store streamfn knows: give "
            "sqlite:///path.db, a path, or postgresql://user@host/database"
        )
    return SQLiteStore(url, create=create)
