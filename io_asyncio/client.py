"""The asyncio shell: sockets, TLS, clocks and sleeps around the sans-I/O core.

The same program as the trio shell: `streamfn.core.http11.drive` decides
every step (connect, send, receive with a deadline, retry, release) and this
module performs them with asyncio streams. Behaviour is identical by
construction, and the same test suite runs against both shells.

A `Client`'s keep-alive pool belongs to the event loop that filled it; close
it (``async with Client()`` or `Client.aclose`) in that loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final

from streamfn.core.events import Error, Event
from streamfn.core.http11 import (
    EXPIRED,
    ClientBase,
    Connect,
    ConnectTunnel,
    Emit,
    Exchange,
    PoolKey,
    Receive,
    Release,
    Send,
    Sleep,
    Target,
    TunnelError,
    connect_error,
    drive,
    with_credentials,
)
from streamfn.core.messages import AssistantMessage, Context
from streamfn.core.models import Model
from streamfn.core.options import Options
from streamfn.core.proxy_env import Proxy

__all__ = ["Client", "complete", "default_client", "stream"]

READ_SIZE: Final = 64 << 10
_PoolKey = PoolKey


class _Connection:
    """A socket (maybe TLS, maybe tunnelled), its loop, and the exchange it last carried."""

    __slots__ = ("key", "last", "loop", "reader", "writer")

    def __init__(
        self, key: _PoolKey, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.key = key
        self.reader = reader
        self.writer = writer
        self.loop = asyncio.get_running_loop()
        self.last: Exchange | None = None

    def abort(self) -> None:
        """Close now, without waiting for the peer (cancellation, errors, abandon)."""
        with contextlib.suppress(RuntimeError):  # its loop is closed: nothing left to do
            self.writer.transport.abort()


class Client(ClientBase[_Connection]):
    """An asyncio client: configuration and a keep-alive pool (see `ClientBase`)."""

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.abort()
        await asyncio.sleep(0)  # let the transports finish closing their sockets

    # -- internals --------------------------------------------------------------
    @asynccontextmanager
    async def _stream(
        self, model: Model, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        options = with_credentials(model, options, self.environ)
        events = self._events(model, context, options)
        try:
            yield events
        finally:
            await events.aclose()

    async def _events(
        self, model: Model, context: Context, options: Options
    ) -> AsyncGenerator[Event, None]:
        """Perform the steps of `drive`; the connection in hand is closed on any exit."""
        loop = asyncio.get_running_loop()
        steps = drive(
            model,
            context,
            options,
            environ=self.environ,
            clock=loop.time,
            rand=self._rand,
            log=self.log,
        )
        conn: _Connection | None = None
        answer: object = None
        try:
            while True:
                try:
                    step = steps.send(answer)
                except StopIteration:
                    return
                answer = None
                if isinstance(step, Emit):
                    for event in step.events:
                        yield event
                elif isinstance(step, Receive):
                    assert conn is not None
                    answer = await self._receive(conn, step.deadline)
                elif isinstance(step, Send):
                    assert conn is not None
                    answer = await self._send(conn, step.data, step.deadline)
                elif isinstance(step, Connect):
                    conn = None if step.fresh else self._take_idle(step.key)
                    if conn is not None:
                        answer = conn.last
                    else:
                        opened = await self._open(step)
                        if isinstance(opened, _Connection):
                            conn = opened
                        else:
                            answer = opened
                elif isinstance(step, Release):
                    assert conn is not None
                    held, conn = conn, None
                    self._release(held, step.keep)
                elif isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
        finally:
            steps.close()
            if conn is not None:
                conn.abort()

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

    @staticmethod
    async def _send(conn: _Connection, data: bytes, deadline: float) -> object:
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

    @staticmethod
    async def _receive(conn: _Connection, deadline: float) -> object:
        try:
            async with asyncio.timeout_at(deadline):
                try:
                    return await conn.reader.read(READ_SIZE)
                except OSError as exc:
                    return exc
        except TimeoutError:
            return EXPIRED

    def _take_idle(self, key: _PoolKey) -> _Connection | None:
        conns = self._idle.get(key)
        loop = asyncio.get_running_loop()
        while conns:
            conn = conns.pop()
            if conn.loop is loop and not conn.writer.is_closing():
                return conn
            conn.abort()
        return None

    def _release(self, conn: _Connection, keep: Exchange | None) -> None:
        """Back to the pool after a complete exchange; closed at once otherwise."""
        conns = self._idle.setdefault(conn.key, [])
        if keep is not None and len(conns) < self.max_idle_per_host:
            conn.last = keep
            conns.append(conn)
        else:
            conn.abort()


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
    model: Model, context: Context, options: Options | None = None
) -> AssistantMessage:
    """The whole assistant turn as one message."""
    return await default_client().complete(model, context, options)
