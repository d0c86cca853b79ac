"""The send-stall bound: a connection whose client takes no bytes for ``timeout`` is ended.

A client that stops reading fills its TCP receive window; the server's next
write then waits (backpressure) with no end of its own, and the request keeps
its concurrency slot, its connection and its upstream stream. `SendWatch`
bounds that wait for one connection, on any `Runtime`: while a write is in
flight, or bytes the loop took wait unsent in its buffer (``unsent``), it looks
every quarter of ``timeout`` for progress, and when there has been none for
``timeout`` it calls ``abort`` (the connection layer closes the socket with a
reset; the app sees a disconnect and cancels the upstream call).

The unsent bytes matter on asyncio: its transport buffers up to 64 KiB before
a write waits at all, and closing a connection waits, without limit, for that
buffer to empty. An answer a little larger than the kernel takes, sent to a
client that reads nothing, thus never makes a write wait, yet the connection
(and its place under the connection cap) would be held forever at its close.
Watching the buffer bounds both: the end of a response and the close.

Progress is either a write completing (the connection's buffers took it) or
the peer acknowledging more bytes (`streamfn.io_common._sockets.bytes_acked`,
which Linux reports): a client that reads slowly but steadily keeps resetting
the timer, however large one write is. The buffer shrinking counts as progress
too. Where the system does not report the acknowledged bytes only completed
writes and the buffer count. An HTTP/2 stream is watched the same way
(`streamfn.asgi._h2_deadline`), with bytes leaving its buffer as its only
progress. Costs: one watcher task per connection (or stream) while writes are
in flight or bytes unsent, waking four times per ``timeout``; nothing per write.
The watcher stays until a whole look (a quarter of ``timeout``) passed without
a write: a stream's writes come one loop turn apart (a live model's
deltas, a response's head and its end), and a watcher started and ended for
each of them cost a task per write.
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
    progress while a write waits or bytes wait unsent. ``acked`` reads the peer's
    acknowledged byte count (None: not known), ``unsent`` how many bytes the loop
    holds for the socket (0 where writes wait for the socket to take them all)."""

    def __init__(
        self,
        runtime: Runtime,
        timeout: float,
        acked: Callable[[], int | None],
        abort: Callable[[], None],
        unsent: Callable[[], int] = lambda: 0,
        *,
        writes_are_progress: bool = True,
    ) -> None:
        self.runtime = runtime
        self.timeout = timeout
        self.acked = acked
        self.abort = abort
        self.unsent = unsent
        #: False where a write completes without any byte leaving (an HTTP/2 stream's
        #: buffer): then only ``acked`` counts
        self.writes_are_progress = writes_are_progress
        #: writes waiting now, and writes done so far
        self.pending = 0
        self.done = 0
        self.fired = False
        self.closed = False
        self._watching = False
        self._stop: Flag | None = None
        #: when the first write after a quiet spell began (its wait is timed from there)
        self._resumed: float | None = None

    def begin(self) -> None:
        """A write starts: watch it (a watcher is started unless one runs)."""
        if not self.pending and self._watching:
            self._resumed = self.runtime.clock()
        self.pending += 1
        if not self.closed:
            self._start()

    def _start(self) -> None:
        if not self._watching and not self.fired:
            self._watching = True
            self._stop = self.runtime.flag()
            self.runtime.spawn_system(self._watch)

    def end(self) -> None:
        """The write returned (done, or failed: either way it no longer waits)."""
        self.pending -= 1
        self.done += 1

    def close(self) -> None:
        """The connection ended: stop watching, unless bytes still wait to be sent (its
        close waits for them: the watch goes on until they are gone or the bound fires)."""
        self.closed = True
        if self.unsent():
            self._start()
        elif self._stop is not None:
            self._stop.set()

    def _waiting(self) -> bool:
        return bool(self.pending or self.unsent())

    def _progress(self) -> tuple[int, int | None, int]:
        if not self.writes_are_progress:
            return 0, self.acked(), 0
        return self.done, self.acked(), self.unsent()

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
        quiet = 0  # looks in a row without a write: the first is a linger, not an end
        while not stop.is_set():
            if self._waiting():
                quiet = 0
            elif (quiet := quiet + 1) > 1:
                return
            await self.runtime.wait(stop, self.timeout / _LOOKS)
            if stop.is_set():
                return
            now, progress = clock(), self._progress()
            resumed, self._resumed = self._resumed, None
            if progress != mark:
                mark, since, quiet = progress, now, 0  # writes went on since the last look
            elif not self._waiting():
                since = now  # no stall runs while nothing waits
            elif resumed is not None and resumed > since:
                since = resumed  # a write began after a quiet look: timed from its start
            if self._waiting() and now - since >= self.timeout:
                self.fired = True
                self.abort()
                return
