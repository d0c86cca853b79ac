"""What a connection may hold on hypercorn: rules hypercorn itself lacks, for both shells.

hypercorn bounds an HTTP/1.1 connection by its keep-alive timer (our head
timeout), but two paths escape it:

- Cleartext HTTP/2. hypercorn switches to HTTP/2 when a connection opens with
  the HTTP/2 preface (prior knowledge) or asks for ``Upgrade: h2c``. The
  switch stops the keep-alive timer and nothing restarts it until a stream
  ends, so a connection that sends only the preface and SETTINGS (or drips a
  header block) was held forever. By default cleartext HTTP/2 is refused:
  the preface is answered with a GOAWAY (``HTTP_1_1_REQUIRED``) and the
  connection closed, an ``Upgrade: h2c`` is ignored (answered in HTTP/1.1,
  as RFC 9110 allows). With ``allow_h2c`` it is served, bounded like
  HTTP/1.1: the timer restarts at the switch, so a connection with no
  complete request head within the head timeout, or idle that long after
  its last stream, is closed.
- A peer that has closed its side. hypercorn read the end of stream but kept
  the connection (and its ``--max-connections`` place) until the keep-alive
  timer fired. Here a connection with no request in flight is closed as soon
  as the peer's end of stream arrives; one with a request in flight is
  already treated as a disconnect by hypercorn.

And one path hypercorn leaves unbounded in time: a write to a client that does
not read. The write waits for room (backpressure) for as long as the client
holds its window shut, keeping the request, its slot and its upstream stream;
on asyncio the bytes its transport buffers (up to 64 KiB, never waited on)
hold the connection's close the same way. With ``send_timeout`` a
`streamfn.asgi._send_watch.SendWatch` ends such a connection (a reset, logged
once) when its client takes no bytes for that long; the app then sees a
disconnect and cancels the request's upstream call. On HTTP/2 a stream's
flow-control window can hold a response with no TCP write waiting:
`streamfn.asgi._h2_deadline.DeadlinedH2Protocol` ends such a stream alone.
However an HTTP/2 stream ends (a reset by either side, a GOAWAY, the
connection gone), its waiting writes end with it
(`streamfn.asgi._h2_streams.ReleasingH2Protocol`), so its request frees its
slot and its upstream call.

`install` puts `GuardedProtocol` in place of hypercorn's ``ProtocolWrapper``
for both of its workers; its HTTP/1.1 writes one write per ASGI message
(`streamfn.asgi._coalesce`). It acts only on a configuration that carries a
`ConnectionRules` (`apply`); any other hypercorn server in the process keeps
hypercorn's own behaviour.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.h2 import H2Protocol
from hypercorn.protocol.h11 import H2CProtocolRequiredError, H2ProtocolAssumedError, H11Protocol

from streamfn.io_common._sockets import bytes_acked, reset_on_close

from ._coalesce import CoalescingH11
from ._coalesce import install as install_coalescing
from ._h2_deadline import DeadlinedH2Protocol
from ._send_watch import SendWatch

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["ConnectionRules", "GuardedProtocol", "apply", "install", "refusal_frames"]

log = logging.getLogger("streamfn")

_P = TypeVar("_P", bound=H11Protocol | H2Protocol)

_RULES: Final = "streamfn_connection_rules"

#: what an HTTP/2 client reads before the connection closes when h2c is off
_REFUSAL_NOTE: Final = b"cleartext HTTP/2 is off on this server; use HTTP/1.1"


@dataclass(frozen=True)
class ConnectionRules:
    """How the server treats connections beyond hypercorn's defaults."""

    #: serve cleartext HTTP/2 (prior knowledge or ``Upgrade: h2c``); off: refused
    allow_h2c: bool = False
    #: end a connection whose client takes no bytes for this long while a write waits
    #: (None: no bound); ``runtime`` is the serving loop's, which runs the watch
    send_timeout: float | None = None
    runtime: Runtime | None = None


def apply(config: Any, rules: ConnectionRules) -> None:
    """Make ``rules`` govern the connections of the server that runs ``config``."""
    setattr(config, _RULES, rules)


@functools.cache
def refusal_frames() -> bytes:
    """The server's HTTP/2 preface (SETTINGS) and a GOAWAY with ``HTTP_1_1_REQUIRED``:
    a client that spoke HTTP/2 first reads why it is refused, in its own protocol."""
    import h2.config
    import h2.connection
    import h2.errors

    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    conn.close_connection(h2.errors.ErrorCodes.HTTP_1_1_REQUIRED, additional_data=_REFUSAL_NOTE)
    return conn.data_to_send()


class _H11WithoutH2c(CoalescingH11):
    """HTTP/1.1 that never upgrades to h2c (the request is served in HTTP/1.1) and
    reports the HTTP/2 preface for the wrapper to refuse."""

    async def _check_protocol(self, event: Any) -> None:
        if event.method == b"PRI" and event.target == b"*" and event.http_version == b"2.0":
            raise H2ProtocolAssumedError(b"")


class GuardedProtocol(ProtocolWrapper):
    """hypercorn's ``ProtocolWrapper`` under the `ConnectionRules` of its configuration."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rules: ConnectionRules | None = getattr(self.config, _RULES, None)
        self._peer_closed = False
        self._released = False
        self._watch: SendWatch | None = None
        if self.rules is not None and type(self.protocol) is H11Protocol:
            self.protocol = self._made(CoalescingH11 if self.rules.allow_h2c else _H11WithoutH2c)

    def _made(self, protocol: type[_P]) -> _P:
        """A protocol for this connection, sending through `_forward`."""
        return protocol(
            self.app,
            self.config,
            self.context,
            self.task_group,
            self.state,
            self.ssl,
            self.client,
            self.server,
            self._forward,
        )

    async def handle(self, event: Event) -> None:
        if self.rules is None:
            await super().handle(event)
            return
        idle = self._idle()  # before: a request the peer's leaving ends is hypercorn's to close
        try:
            await self.protocol.handle(event)
        except H2ProtocolAssumedError as error:
            if not self.rules.allow_h2c:
                await self._refuse_h2()
                return
            await self._switch_to_h2(error.data)
        except H2CProtocolRequiredError as error:  # only when h2c is allowed
            await self._switch_to_h2(error.data, error.headers, error.settings)
        if isinstance(event, Closed) and self._watch is not None:
            self._watch.close()
        if _peer_gone(event) and not self._in_keep_alive_timer():
            self._peer_closed = True
            if idle and self._idle():
                await self._release()

    def _in_keep_alive_timer(self) -> bool:
        """Whether hypercorn's keep-alive timer is closing the connection itself (on
        asyncio that timer's task must not be stopped from inside it)."""
        import asyncio

        server = getattr(self.send, "__self__", None)
        timer = getattr(getattr(server, "idle_task", None), "_handle", None)
        try:
            return timer is not None and timer is asyncio.current_task()
        except RuntimeError:  # no asyncio loop: trio, whose timer may be stopped anywhere
            return False

    async def _forward(self, event: Event) -> None:
        """What the protocol sends to hypercorn's connection: a connection whose peer
        has closed is released when its last request ends, not kept alive."""
        if isinstance(event, Updated) and event.idle and self._peer_closed:
            await self._release()
        elif isinstance(event, RawData) and (watch := self._watched()) is not None:
            watch.begin()
            try:
                await self.send(event)
            finally:
                watch.end()
        else:
            await self.send(event)

    def _watched(self) -> SendWatch | None:
        """This connection's `SendWatch` (made at its first write), None without a bound."""
        if self._watch is None:
            rules = self.rules
            if rules is None or not rules.send_timeout or rules.runtime is None:
                return None
            server = getattr(self.send, "__self__", None)
            self._watch = SendWatch(
                rules.runtime,
                rules.send_timeout,
                lambda: bytes_acked(_socket_of(server)),
                lambda: self._stalled(server),
                lambda: _unsent(server),
            )
        return self._watch

    def _stalled(self, server: Any) -> None:
        """End a connection whose client stopped reading: a reset, so neither the
        kernel nor hypercorn keeps the unread bytes (and the socket) alive."""
        assert self.rules is not None
        log.warning(
            "closed the connection of %s: it took no response bytes for %g s (send timeout)",
            _peer(self.client),
            self.rules.send_timeout,
        )
        sock = _socket_of(server)
        reset_on_close(sock)
        transport = _transport_of(server)
        if transport is not None:  # asyncio: drop the buffer, close now
            transport.abort()
        elif sock is not None:  # trio: closing wakes the waiting send with an error
            sock.close()

    def _idle(self) -> bool:
        """No request in flight (a peer's end of stream then ends the connection)."""
        protocol = self.protocol
        if isinstance(protocol, H2Protocol):
            return protocol.idle
        return protocol.stream is None

    async def _release(self) -> None:
        """Close now: stop the keep-alive timer and give the socket back."""
        if not self._released:
            self._released = True
            await self.send(Updated(idle=False))  # stops hypercorn's keep-alive timer
            await self.send(Closed())

    async def _refuse_h2(self) -> None:
        log.info(
            "refused a cleartext HTTP/2 connection from %s (serve it with --allow-h2c)",
            _peer(self.client),
        )
        await self.send(RawData(data=refusal_frames()))
        await self._release()

    async def _switch_to_h2(
        self,
        data: bytes,
        headers: list[tuple[bytes, bytes]] | None = None,
        settings: bytes | None = None,
    ) -> None:
        """hypercorn's switch to HTTP/2, with its keep-alive timer running again: a
        connection without a whole request head within the head timeout is closed;
        a stream its client's window holds shut is ended after the send timeout."""
        protocol = self._made(DeadlinedH2Protocol)
        if self.rules is not None:
            protocol.bound(self.rules.send_timeout, self.rules.runtime)
        self.protocol = protocol
        if headers is None:
            await self.protocol.initiate()
            await self.send(Updated(idle=True))
        else:  # the upgrade request itself is stream 1; the timer restarts when it ends
            await self.protocol.initiate(headers, settings)
        if data:
            await self.protocol.handle(RawData(data=data))


def _peer_gone(event: Event) -> bool:
    """The peer's end of stream, or hypercorn's word that the connection ended."""
    return isinstance(event, Closed) or (isinstance(event, RawData) and not event.data)


def _socket_of(server: Any) -> Any:
    """The socket under one of hypercorn's TCP servers (asyncio's or trio's), or None."""
    writer = getattr(server, "writer", None)
    if writer is not None:
        return writer.get_extra_info("socket")
    stream = getattr(server, "stream", None)
    stream = getattr(stream, "transport_stream", stream)  # under TLS
    return getattr(stream, "socket", None)


def _transport_of(server: Any) -> Any:
    """The asyncio transport under one of hypercorn's TCP servers (None on trio)."""
    return getattr(getattr(server, "writer", None), "transport", None)


def _unsent(server: Any) -> int:
    """The bytes an asyncio transport holds for the socket (trio's writes hold none)."""
    transport = _transport_of(server)
    if transport is None:
        return 0
    size: int = transport.get_write_buffer_size()
    return size


def _peer(client: tuple[str, int] | None) -> str:
    return "an unknown peer" if client is None else f"{client[0]}:{client[1]}"


def install() -> None:
    """Use `GuardedProtocol` in both of hypercorn's workers (idempotent)."""
    import hypercorn.asyncio.tcp_server
    import hypercorn.trio.tcp_server

    hypercorn.asyncio.tcp_server.ProtocolWrapper = GuardedProtocol  # type: ignore[attr-defined]
    hypercorn.trio.tcp_server.ProtocolWrapper = GuardedProtocol  # type: ignore[attr-defined]
    install_coalescing()
