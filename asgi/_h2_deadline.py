"""The send timeout for HTTP/2 streams: a stream its client's flow control holds shut is ended.

On HTTP/2 a client paces each stream with its flow-control window: hypercorn
parks the app's body send for a stream until a WINDOW_UPDATE makes room. No
TCP write waits meanwhile (the connection may be busy with other streams and
pings), so the connection's `streamfn.asgi._send_watch.SendWatch` never sees
the stall; a client that opens streams with a window of 0 would hold each one,
its concurrency slot and its upstream call, forever.

`DeadlinedH2Protocol` watches each stream's response with its own
`streamfn.asgi._send_watch.SendWatch`: while the stream's buffer holds bytes,
progress is bytes leaving it for the client (a completed body write is none:
a write completes into the buffer without a byte leaving). When none leave for the send timeout, the stream is reset
(RST_STREAM, ``CANCEL``) exactly as if the client had reset it: the app sees a
disconnect, cancels the upstream call and frees the slot; the connection and
its other streams go on. Logged once per stream. A client that opens its
window slowly but steadily keeps its stream, as on HTTP/1.1.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import TYPE_CHECKING, Any

import h2.errors
import h2.exceptions
from hypercorn.protocol.events import Body, EndBody, Trailers

from ._h2_streams import ReleasingH2Protocol
from ._send_watch import SendWatch

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["DeadlinedH2Protocol"]

log = logging.getLogger("streamfn")


class DeadlinedH2Protocol(ReleasingH2Protocol):
    """hypercorn's HTTP/2 protocol (its streams' writes ending with them) whose streams end when their client's flow control
    lets no bytes out for ``send_timeout`` (set by `bound`; unset: hypercorn's own)."""

    send_timeout: float | None = None
    runtime: Runtime | None = None

    def bound(self, send_timeout: float | None, runtime: Runtime | None) -> None:
        self.send_timeout = send_timeout
        self.runtime = runtime
        #: each watched stream's watch, and the bytes its app has written
        self._watches: dict[int, SendWatch] = {}
        self._written: dict[int, int] = {}

    async def stream_send(self, event: Any) -> None:
        watch = self._watch(event)
        if watch is None:
            await super().stream_send(event)
            return
        if isinstance(event, Body):
            self._written[event.stream_id] += len(event.data)
        watch.begin()
        try:
            await super().stream_send(event)
        finally:
            watch.end()

    async def _close_stream(self, stream_id: int) -> None:
        """A stream ended (done, reset by either side): its watch ends with it."""
        watch = getattr(self, "_watches", {}).pop(stream_id, None)
        if watch is not None:
            watch.close()
            self._written.pop(stream_id, None)
        await super()._close_stream(stream_id)

    def _watch(self, event: Any) -> SendWatch | None:
        """The watch of ``event``'s stream (made at its first body write); None for
        other events, or without a bound."""
        timeout, runtime = self.send_timeout, self.runtime
        if timeout is None or runtime is None or not isinstance(event, (Body, EndBody, Trailers)):
            return None
        sid = event.stream_id
        if sid not in self.streams:  # ended already: hypercorn drops what comes late
            return None
        if sid not in self._watches:
            self._written[sid] = 0
            self._watches[sid] = SendWatch(
                runtime,
                timeout,
                lambda: self._written.get(sid, 0) - self._buffered(sid),
                lambda: runtime.spawn_system(functools.partial(self._end_stalled, sid, timeout)),
                lambda: self._buffered(sid),
                writes_are_progress=False,
            )
        return self._watches[sid]

    def _buffered(self, stream_id: int) -> int:
        buffer = self.stream_buffers.get(stream_id)
        return 0 if buffer is None else len(buffer.buffer)

    async def _end_stalled(self, stream_id: int, timeout: float) -> None:
        """Reset the stream as a client's reset would be handled: the app hears a
        disconnect, hypercorn's sender drops the stream's buffer. (A task of its own:
        it must never fail, the loop's system tasks take the server down on trio.)"""
        try:
            await self._reset(stream_id, timeout)
        except Exception:
            log.exception("ending a stalled HTTP/2 stream failed")

    async def _reset(self, stream_id: int, timeout: float) -> None:
        peer = "an unknown peer" if self.client is None else f"{self.client[0]}:{self.client[1]}"
        log.warning(
            "ended HTTP/2 stream %d of %s: its flow-control window let no response bytes "
            "through for %g s (send timeout)",
            stream_id,
            peer,
            timeout,
        )
        with contextlib.suppress(h2.exceptions.H2Error):  # closed meanwhile: no reset due
            self.connection.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
        await self._flush()
        await self._close_stream(stream_id)
        await self._window_updated(stream_id)
