"""The keep-alive pool's bookkeeping, shared by every shell: which idle connection to
try, which to keep, which to close. Pure: the shell does the I/O (a readiness check
before reuse, the close) and says what it found.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from streamfn.core.http import Exchange, PoolKey

__all__ = ["Pool", "PoolKey", "PooledConnection"]


class PooledConnection:
    """A shell's socket wrapper: what the pool needs to know about it."""

    __slots__ = ("key", "last")

    def __init__(self, key: PoolKey) -> None:
        self.key = key
        #: the exchange it last carried, handed to the next one on reuse
        self.last: Exchange | None = None

    @property
    def reusable(self) -> bool:
        """Whether its last exchange ended cleanly with nothing unread (see `Exchange.reusable`)."""
        return self.last is not None and self.last.reusable


ConnT = TypeVar("ConnT", bound=PooledConnection)


class Pool(Generic[ConnT]):
    """Idle connections per `PoolKey`, at most ``max_idle_per_host`` each.

    Checkout: `candidates` hands out idle connections newest first; the shell
    takes the first that is `PooledConnection.reusable`, usable by its own
    rules and silent (nothing arrived on it since it was pooled), and closes
    the others, as httpcore and urllib3 check readability before reuse. A
    server may write after a response (a second response, a ``408`` and a
    close, a TLS alert) or close the socket while it sits in the pool; those
    bytes would otherwise be read as the next request's answer.
    """

    def __init__(self, max_idle_per_host: int) -> None:
        self.max_idle_per_host = max_idle_per_host
        self._idle: dict[PoolKey, list[ConnT]] = {}

    def __len__(self) -> int:
        return sum(len(c) for c in self._idle.values())

    def candidates(self, key: PoolKey) -> Iterator[ConnT]:
        """Idle connections for ``key``, each removed from the pool as it is handed out."""
        conns = self._idle.get(key)
        while conns:
            yield conns.pop()

    def put(self, conn: ConnT, keep: Exchange | None) -> bool:
        """Pool ``conn`` after a complete exchange (``keep``); False: close it now."""
        conns = self._idle.setdefault(conn.key, [])
        if keep is None or len(conns) >= self.max_idle_per_host:
            return False
        conn.last = keep
        conns.append(conn)
        return True

    def drain(self) -> list[ConnT]:
        """Every idle connection, removed from the pool (to close them all)."""
        idle, self._idle = self._idle, {}
        return [conn for conns in idle.values() for conn in conns]
