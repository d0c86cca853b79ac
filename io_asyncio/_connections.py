"""The asyncio shell's two kinds of connection, behind one small interface.

- `SocketConnection`: plain HTTP to an IP literal (a local server, a sidecar,
  a test). A non-blocking socket read and written with the loop's ``sock_*``
  calls: no transport, no `asyncio.StreamReader` and its buffer copies, and
  one loop iteration less to connect (on loopback, ``open_connection`` costs
  more than the rest of the request).
- `StreamConnection`: everything else (TLS, a CONNECT tunnel, a host name
  that needs the resolver), on asyncio streams.

Both belong to the loop that opened them, and `abort` closes at once without
suspending, so it is safe in a ``finally`` block during cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Final, Self

from streamfn.client import PooledConnection
from streamfn.client._pool import PoolKey
from streamfn.io_common._sockets import socket_readable

__all__ = ["READ_SIZE", "TURN", "Connection", "SocketConnection", "StreamConnection"]

READ_SIZE: Final = 64 << 10

#: The longest a socket's reads keep the event loop to themselves: ``sock_recv``
#: returns at once while bytes are waiting, so a peer that sends faster than we
#: decode would otherwise never let another task (or a timer) run.
TURN: Final = 0.01


class Connection(PooledConnection):
    """What the client needs from a connection: send, receive, a readiness check, abort."""

    __slots__ = ("loop",)

    def __init__(self, key: PoolKey) -> None:
        super().__init__(key)
        self.loop = asyncio.get_running_loop()

    async def send(self, data: bytes) -> None:
        raise NotImplementedError

    async def receive(self) -> bytes:
        """Up to `READ_SIZE` bytes; empty at EOF."""
        raise NotImplementedError

    async def readable(self) -> bool:
        """Bytes or an EOF wait to be read (without waiting for any)."""
        raise NotImplementedError

    def closing(self) -> bool:
        raise NotImplementedError

    def abort(self) -> None:
        """Close now, without waiting for the peer (cancellation, errors, abandon)."""
        raise NotImplementedError


class SocketConnection(Connection):
    """A connected non-blocking TCP socket, used through the loop's ``sock_*`` calls."""

    __slots__ = ("sock", "turn_ends")

    def __init__(self, key: PoolKey, sock: socket.socket) -> None:
        super().__init__(key)
        self.sock = sock
        #: when the loop is next given a turn (see `TURN`)
        self.turn_ends = self.loop.time() + TURN

    @classmethod
    async def open(cls, key: PoolKey, family: socket.AddressFamily, host: str, port: int) -> Self:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await asyncio.get_running_loop().sock_connect(sock, (host, port))
        except BaseException:
            sock.close()
            raise
        return cls(key, sock)

    async def send(self, data: bytes) -> None:
        await self.loop.sock_sendall(self.sock, data)

    async def receive(self) -> bytes:
        loop = self.loop
        if loop.time() >= self.turn_ends:
            await asyncio.sleep(0)  # let the loop run its other tasks and timers
            self.turn_ends = loop.time() + TURN
        return await loop.sock_recv(self.sock, READ_SIZE)

    async def readable(self) -> bool:
        return socket_readable(self.sock.fileno())

    def closing(self) -> bool:
        return self.sock.fileno() < 0

    def abort(self) -> None:
        fd = self.sock.fileno()
        if fd >= 0:
            # a cancelled sock_recv/sock_sendall leaves its callback registered until
            # the loop's next turn: unregister now, before the fd number can be reused
            with contextlib.suppress(RuntimeError):  # its loop is closed: nothing is
                self.loop.remove_reader(fd)
                self.loop.remove_writer(fd)
        self.sock.close()


class StreamConnection(Connection):
    """An asyncio stream pair (maybe TLS, maybe tunnelled)."""

    __slots__ = ("reader", "writer")

    def __init__(
        self, key: PoolKey, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        super().__init__(key)
        self.reader = reader
        self.writer = writer

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def receive(self) -> bytes:
        return await self.reader.read(READ_SIZE)

    async def readable(self) -> bool:
        # The transport reads eagerly into the StreamReader, so the socket itself
        # looks idle; a read that must not wait is the loop's readiness check.
        # With data or EOF buffered, ``read`` returns without suspending; the
        # zero timeout fires only if it would have waited.
        reader = self.reader
        if reader.at_eof() or reader.exception() is not None:
            return True
        try:
            async with asyncio.timeout(0):
                await reader.read(1)
        except TimeoutError:
            return False
        except OSError:
            return True
        return True

    def closing(self) -> bool:
        return self.writer.is_closing()

    def abort(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop is closed: nothing left to do
            self.writer.transport.abort()
