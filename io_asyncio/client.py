"""The asyncio shell: sockets, TLS, clocks and sleeps around the sans-I/O core.

The same program as the trio shell: `streamfn.core.http.http11.drive` decides
every step (connect, send, receive with a deadline, retry, release) and this
module performs them with asyncio streams. Behaviour is identical by
construction, and the same test suite runs against both shells.

A `Client`'s keep-alive pool belongs to the event loop that filled it; close
it (``async with Client()`` or `Client.aclose`) in that loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Final

from streamfn.core.events import Error, Event
from streamfn.core.http.http11 import (
    EXPIRED,
    ClientBase,
    Connect,
    ConnectTunnel,
    PooledConnection,
    PoolKey,
    Target,
    TunnelError,
    connect_error,
)
from streamfn.core.http.proxy_env import Proxy
from streamfn.core.messages import AssistantMessage, Context
from streamfn.core.models import Model
from streamfn.core.options import Options

__all__ = ["Client", "complete", "default_client", "stream"]

READ_SIZE: Final = 64 << 10
_PoolKey = PoolKey


class _Connection(PooledConnection):
    """An asyncio stream pair (maybe TLS, maybe tunnelled) and the loop it belongs to."""

    __slots__ = ("loop", "reader", "writer")

    def __init__(
        self, key: PoolKey, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        super().__init__(key)
        self.reader = reader
        self.writer = writer
        self.loop = asyncio.get_running_loop()

    def abort(self) -> None:
        """Close now, without waiting for the peer (cancellation, errors, abandon)."""
        with contextlib.suppress(RuntimeError):  # its loop is closed: nothing left to do
            self.writer.transport.abort()


class Client(ClientBase[_Connection]):
    """An asyncio client: configuration, a keep-alive pool and the step loop come
    from `ClientBase`; this class only does asyncio's I/O."""

    async def aclose(self) -> None:
        await super().aclose()
        await asyncio.sleep(0)  # let the transports finish closing their sockets

    def _clock(self) -> Callable[[], float]:
        return asyncio.get_running_loop().time

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def _close(self, conn: _Connection) -> None:
        conn.abort()  # never suspends: safe in a finally block during cancellation

    def _usable(self, conn: _Connection) -> bool:
        # a pooled connection belongs to the loop that opened it
        return conn.loop is asyncio.get_running_loop() and not conn.writer.is_closing()

    async def _readable(self, conn: _Connection) -> bool:
        # The transport reads eagerly into the StreamReader, so the socket itself
        # looks idle; a read that must not wait is the loop's readiness check.
        # With data or EOF buffered, ``read`` returns without suspending; the
        # zero timeout fires only if it would have waited.
        reader = conn.reader
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

    async def _open(self, step: Connect) -> _Connection | Error | object:
        try:
            async with asyncio.timeout_at(step.deadline):
                try:
                    return await self._connect(step)
                except TunnelError as exc:
                    return Error.network(str(exc))
                except OSError as exc:  # ssl.SSLError and socket errors alike
                    return connect_error(step.target, exc)
        except TimeoutError:
            return EXPIRED

    async def _connect(self, step: Connect) -> _Connection:
        target, proxy = step.target, step.proxy
        tls = self.ssl_context if target.scheme == "https" else None
        if proxy is None:
            reader, writer = await asyncio.open_connection(
                target.host, target.port, ssl=tls, server_hostname=target.host if tls else None
            )
            return _Connection(step.key, reader, writer)
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
        conn = _Connection(step.key, reader, writer)
        try:
            await self._tunnel(conn, target, proxy)
            if tls is not None:
                await writer.start_tls(tls, server_hostname=target.host)
        except BaseException:
            conn.abort()
            raise
        return conn

    @staticmethod
    async def _tunnel(conn: _Connection, target: Target, proxy: Proxy) -> None:
        tunnel = ConnectTunnel(target, proxy)
        conn.writer.write(tunnel.bytes_to_send())
        await conn.writer.drain()
        while not tunnel.receive_bytes(await conn.reader.read(READ_SIZE)):
            pass

    async def _send(self, conn: _Connection, data: bytes, deadline: float) -> object:
        try:
            async with asyncio.timeout_at(deadline):
                try:
                    conn.writer.write(data)
                    await conn.writer.drain()
                except OSError as exc:
                    return exc
                return None
        except TimeoutError:
            return EXPIRED

    async def _receive(self, conn: _Connection, deadline: float) -> object:
        try:
            async with asyncio.timeout_at(deadline):
                try:
                    return await conn.reader.read(READ_SIZE)
                except OSError as exc:
                    return exc
        except TimeoutError:
            return EXPIRED


_default: Client | None = None


def default_client() -> Client:
    """The client behind the module-level functions.

    It keeps no idle connections: it cannot know when the caller's event
    loop ends, and a pooled socket must not outlive it. Create a `Client`
    for keep-alive reuse.
    """
    global _default
    if _default is None:
        _default = Client(max_idle_per_host=0)
    return _default


def stream(
    model: Model, context: Context, options: Options | None = None
) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
    """Stream one assistant turn: ``async with stream(m, ctx) as events: async for ev in events``."""
    return default_client().stream(model, context, options)


async def complete(
    model: Model,
    context: Context,
    options: Options | None = None,
    *,
    raise_on_error: bool = True,
) -> AssistantMessage:
    """The whole assistant turn as one message; an `Error` raises `CompletionError`
    (``raise_on_error=False`` returns the message with ``error_message`` set)."""
    return await default_client().complete(
        model, context, options, raise_on_error=raise_on_error
    )
