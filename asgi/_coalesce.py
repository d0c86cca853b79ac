"""Fewer socket writes per HTTP/1.1 response on hypercorn: one per ASGI message.

hypercorn turns each piece of a response into its own write: the head, every
body message, and the chunked terminator after the last one. A streamed answer
of one read is thus four writes (head, first token, the rest, the terminator),
each a system call, a pass through hypercorn's send lock and flow control, and
a wake-up of the client. Here the bytes h11 frames while one ASGI message is
handled are written together when it is done: the last body message and the
terminator are one write, and the head waits for the message that follows it
(every response of `streamfn.asgi.App` sends its first body right after its
head; a head is never held past that message, nor past the end of the stream).
Nothing is held between two body messages, so a streamed delta leaves when it
did before. The bytes and their order on the wire are hypercorn's; only their
grouping into writes changes.

`CoalescingH11` is the HTTP/1.1 protocol of `streamfn.asgi._connections`'s
guarded connections; `install` gives hypercorn's HTTP/1.1 streams the flush at
the end of each message (a stream under any other protocol is left as it was).
"""

from __future__ import annotations

from typing import Any

import h11
from hypercorn.events import RawData
from hypercorn.protocol.events import Body, EndBody, Response
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.protocol.http_stream import HTTPStream

__all__ = ["CoalescingH11", "install"]


class CoalescingH11(H11Protocol):
    """hypercorn's HTTP/1.1 protocol that groups the bytes of one ASGI message into
    one write (the head with the message after it)."""

    #: while True the bytes h11 frames are kept for `flush` instead of written
    holding = False
    _held: list[bytes] | None = None

    async def stream_send(self, event: Any) -> None:
        if not isinstance(event, (Response, Body, EndBody)):
            await self.flush()  # the stream's end, a WebSocket's frames: bytes first
        await super().stream_send(event)

    async def _send_h11_event(self, event: Any) -> None:
        if not self.holding and not self._held:
            await super()._send_h11_event(event)
            return
        try:
            data = self.connection.send(event)
        except h11.LocalProtocolError:
            if self.connection.their_state != h11.ERROR:
                raise
            return
        if data:
            self._held = [*(self._held or ()), data]
        if not self.holding:
            await self.flush()

    async def flush(self) -> None:
        """Write what is held, in one write."""
        held, self._held = self._held, None
        if held:
            await self.send(RawData(data=b"".join(held)))


class _FlushingStream(HTTPStream):
    """hypercorn's HTTP stream whose protocol, if a `CoalescingH11`, holds what one
    ASGI message frames and writes it when the message is done (a response's head:
    when the next message is)."""

    async def app_send(self, message: Any) -> None:
        protocol = getattr(self.send, "__self__", None)
        if not isinstance(protocol, CoalescingH11):
            await super().app_send(message)
            return
        protocol.holding = True
        try:
            await super().app_send(message)
        finally:
            protocol.holding = False
            if message is None or message.get("type") != "http.response.start":
                await protocol.flush()


def install() -> None:
    """Give hypercorn's HTTP/1.1 streams the flush at each message's end (idempotent)."""
    import hypercorn.protocol.h11

    hypercorn.protocol.h11.HTTPStream = _FlushingStream  # type: ignore[attr-defined]
