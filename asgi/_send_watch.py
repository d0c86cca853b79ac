"""The send-stall bound: a connection whose client takes no bytes for ``timeout`` is ended.

A client that stops reading fills its TCP receive window; the server's next
write then waits (backpressure) with no end of its own, and the request keeps
its concurrency slot, its connection and its upstream stream. `SendWatch`
bounds that wait for one connection, on any `Runtime`: while a write is in
flight it looks every quarter of ``timeout`` for progress, and when there has
been none for ``timeout`` it calls ``abort`` (the connection layer closes the
socket with a reset; the app sees a disconnect and cancels the upstream call).

Progress is either a write completing (the connection's buffers took it) or
the peer acknowledging more bytes (`streamfn.io_common._sockets.bytes_acked`,
which Linux reports): a client that reads slowly but steadily keeps resetting
the timer, however large one write is. Where the system does not report the
acknowledged bytes only completed writes count. Costs: one watcher task per
connection while writes are in flight, waking four times per ``timeout``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from ._runtime import Flag, Runtime

__all__ = ["SendWatch"]

log = logging.getLogger("streamfn")

#: how often, per ``timeout``, the watcher looks for progress
_LOOKS: Final = 4


class SendWatch:
    """Watches one connection's writes; calls ``abort`` once, after ``timeout`` s without
    progress while a write waits. ``acked`` reads the peer's acknowledged byte count
    (None: not known)."""

    def __init__(
        self,
        runtime: Runtime,
        timeout: float,
        acked: Callable[[], int | None],
        abort: Callable[[], None],
    ) -> None:
        self.runtime = runtime
        self.timeout = timeout
        self.acked = acked
        self.abort = abort
        #: writes waiting now, and writes done so far
        self.pending = 0
        self.done = 0
        self.fired = False
        self.closed = False
        self._watching = False
        self._stop: Flag | None = None

    def begin(self) -> None:
        """A write starts: watch it (a watcher is started unless one runs)."""
        self.pending += 1
        if not self._watching and not self.fired and not self.closed:
            self._watching = True
            self._stop = self.runtime.flag()
            self.runtime.spawn_system(self._watch)

    def end(self) -> None:
        """The write returned (done, or failed: either way it no longer waits)."""
        self.pending -= 1
        self.done += 1

    def close(self) -> None:
        """The connection ended: stop watching."""
        self.closed = True
        if self._stop is not None:
            self._stop.set()

    def _progress(self) -> tuple[int, int | None]:
        return self.done, self.acked()

    async def _watch(self) -> None:
        try:
            await self._look()
        except Exception:  # a watcher must never take the server's loop down
            log.exception("the send-stall watch failed")
        finally:
            self._watching = False

    async def _look(self) -> None:
        stop = self._stop
        assert stop is not None
        clock = self.runtime.clock
        mark, since = self._progress(), clock()
        while self.pending and not stop.is_set():
            await self.runtime.wait(stop, self.timeout / _LOOKS)
            if stop.is_set():
                return
            now, progress = clock(), self._progress()
            if progress != mark:
                mark, since = progress, now
            elif self.pending and now - since >= self.timeout:
                self.fired = True
                self.abort()
                return
