"""The default store: one SQLite file on this host, shared by every worker, kept across restarts.

WAL mode lets readers (``streamfn usage``, the dashboard) read while a worker
writes; a busy timeout makes a worker wait its turn for the write lock instead
of failing; ``BEGIN IMMEDIATE`` takes that lock before an admission reads, so
two workers never both see the last dollar. The file is made readable by its
owner only: it holds the keys' hashes and the record of use.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from ._dialect import SQLITE
from ._sql import Connection, SqlStore, StoreError
from ._store import DEFAULT_LEASE_TTL

__all__ = ["SQLiteStore"]

#: seconds a writer waits for another worker's write lock before giving up
BUSY_TIMEOUT = 30.0


class SQLiteStore(SqlStore):
    """`Store` in the SQLite file ``path`` (made, with its folder, if missing).

    With ``create=False`` a missing file is a `StoreError` instead: a command that
    only reads (or changes existing keys) and was pointed at a mistyped path, or at
    another user's default, says so rather than answer from a new, empty store.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        busy_timeout: float = BUSY_TIMEOUT,
        create: bool = True,
    ) -> None:
        self.path = Path(path).expanduser().absolute()
        self._busy_timeout = busy_timeout
        if not create and not (self.path.is_file() and self.path.stat().st_size > 0):
            raise StoreError(
                f"there is no usage store at {self.path} (nothing was made there): name "
                "the store the server uses (--store, or STREAMFN_STORE; `streamfn serve` "
                "prints it when it starts), or make this one with `streamfn keys create`"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        except OSError as exc:
            raise StoreError(
                f"cannot open the usage store {self.path}: {exc.strerror or exc}; give a "
                "path this user may write (--store, or STREAMFN_STORE)"
            ) from None
        super().__init__(
            self._open,
            SQLITE,
            label=str(self.path),
            failures=(sqlite3.OperationalError,),  # locked past the timeout, disk full ...
            lease_ttl=lease_ttl,
        )

    def _open(self) -> Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                isolation_level=None,  # transactions are the store's own BEGIN/COMMIT
                check_same_thread=False,  # each thread has its own; close() ends them all
            )
            self._wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")  # durable at each WAL checkpoint
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open the usage store {self.path}: {exc}; is it a streamfn store? "
                "Give another path (--store, or STREAMFN_STORE)"
            ) from None
        return conn

    def _wal(self, conn: Connection) -> None:
        """Switch to WAL. Workers opening a new store at once race for this switch, and
        SQLite answers the losers "database is locked" at once, without its busy
        handler: so the switch is tried again until the busy timeout."""
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)
