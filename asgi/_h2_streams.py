"""HTTP/2 streams whose response writes end when the stream does, however it ends.

hypercorn keeps each HTTP/2 stream's response bytes in a buffer that its
connection's sender task drains; an app's body write waits while the buffer
is over its high-water mark, and its end-of-body write waits until the
buffer is empty. Only the sender wakes those writes, so they wait forever
when the sender never comes back for the stream:

- the connection ends (the peer closes or resets it, the send timeout aborts
  it, a GOAWAY or a protocol error closes it): the sender stops at once and
  leaves every stream's buffer as it was;
- a stream is reset (by the client, or by the send timeout) while the sender
  is busy elsewhere, waiting for a TCP write to a client that reads nothing.

The app, told of the disconnect, cannot act on it while its write waits: the
request keeps its admission slot, its upstream call and its memory, and the
connection's task group (which waits for its apps) never ends either. Four
streams so held on a server admitting four take it out of service.

`ReleasingH2Protocol` closes a stream's buffer as soon as the stream can no
longer carry bytes (reset by either side, or its connection gone): a write
waiting on it returns, later writes are dropped as hypercorn drops writes to
a finished stream, and the app goes on to see its disconnect. A stream that
ends normally keeps its buffer until the sender has written it all. When the
protocol closes the connection itself (a GOAWAY, a protocol error) its
streams are ended first, not when the socket is finally gone: on asyncio that
close waits for unsent bytes, which a client that reads nothing never takes.

One more write hypercorn let through: to a stream whose flow-control window
is shut, the sender "sent" nothing and still woke the waiting write, so the
app's writes went on and the stream's buffer grew by the whole answer (the
upstream read to its end at the upstream's pace, past ``max_unsent_bytes``
and the memory budget, for a client that takes nothing). Here a stream with
bytes waiting and no window is set aside until the client opens its window:
its write waits, its events wait in the request's mailbox, and the upstream
is read no further, as on HTTP/1.1 (the send timeout bounds the wait).
"""

from __future__ import annotations

from typing import Any

import h2.exceptions
from hypercorn.events import Closed, Event
from hypercorn.protocol.h2 import H2Protocol

__all__ = ["ReleasingH2Protocol"]


class ReleasingH2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol whose streams' writes wait while the client's window
    is shut and end with the stream."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._to_server = self.send
        self.send = self._send

    async def _send(self, event: Event) -> None:
        if isinstance(event, Closed) and not self.closed:
            await self.handle(Closed())  # the streams end now, not when the socket does
        await self._to_server(event)

    async def handle(self, event: Event) -> None:
        await super().handle(event)
        if isinstance(event, Closed):  # the sender has stopped: nothing drains a buffer
            for stream_id in list(self.stream_buffers):
                await self._release(stream_id)

    async def _close_stream(self, stream_id: int) -> None:
        await super()._close_stream(stream_id)
        if self.closed or not self._can_send(stream_id):
            await self._release(stream_id)

    async def _send_data(self, stream_id: int) -> None:
        """hypercorn's, but a stream with bytes waiting and a shut window is set aside
        (a WINDOW_UPDATE brings it back) without waking its waiting write."""
        buffer = self.stream_buffers.get(stream_id)
        if buffer is not None and buffer.buffer and self._window(stream_id) == 0:
            self.priority.block(stream_id)
            return
        await super()._send_data(stream_id)

    def _window(self, stream_id: int) -> int | None:
        """How many bytes the stream may send now; None when it is closed (hypercorn's
        sender then drops its buffer)."""
        try:
            return max(0, self.connection.local_flow_control_window(stream_id))
        except h2.exceptions.H2Error:
            return None

    def _can_send(self, stream_id: int) -> bool:
        """Whether the stream may still carry response bytes (not reset, not closed)."""
        stream = self.connection.streams.get(stream_id)
        return stream is not None and not stream.closed

    async def _release(self, stream_id: int) -> None:
        """Drop the stream's unsent bytes and wake its waiting writes. The buffer stays
        for the sender, which removes it when it next looks at the stream."""
        buffer = self.stream_buffers.get(stream_id)
        if buffer is not None:
            await buffer.close()
            await self._window_updated(stream_id)
