"""The asyncio shell: sockets, TLS, clocks and sleeps around the sans-I/O core.

The same program as the trio shell: `streamfn.core.http._driver.drive` decides
every step (connect, send, receive with a deadline, retry, release) and this
module performs them with the event loop's sockets or streams
(`streamfn.io_asyncio._connections`). Behaviour is identical by
construction, and the same test suite runs against both shells.

A `Client`'s keep-alive pool belongs to the event loop that filled it; close
it (``async with Client()`` or `Client.aclose`) in that loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from streamfn.client import ClientBase, ShellFunctions
from streamfn.core import Context, Error, Event, Model, Options
from streamfn.core.http import (
    EXPIRED,
    Connect,
    ConnectTunnel,
    Expired,
    Target,
    TunnelError,
    connect_error,
)
from streamfn.core.http._proxy_env import Proxy
from streamfn.core.http._steps import ReceiveAnswer, SendAnswer
from streamfn.io_common._process import PROCESS
from streamfn.io_common._sockets import literal_family

from ._connections import READ_SIZE, Connection, SocketConnection, StreamConnection

__all__ = ["Client", "complete", "count_tokens", "default_client", "stream"]

T = TypeVar("T")


class Client(ClientBase[Connection]):
    """An asyncio client: configuration, a keep-alive pool and the step loop come
    from `ClientBase`; this class only does asyncio's I/O (see `.connections`)."""

    ambient = PROCESS  # the environment, randomness, wall clock and TLS defaults

    async def aclose(self) -> None:
        await super().aclose()
        await asyncio.sleep(0)  # let the transports finish closing their sockets

    def _clock(self) -> Callable[[], float]:
        return asyncio.get_running_loop().time

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def _close(self, conn: Connection) -> None:
        conn.abort()  # never suspends: safe in a finally block during cancellation

    def _usable(self, conn: Connection) -> bool:
        # a pooled connection belongs to the loop that opened it
        return conn.loop is asyncio.get_running_loop() and not conn.closing()

    async def _readable(self, conn: Connection) -> bool:
        return await conn.readable()

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    @asynccontextmanager
    async def _local_stream(
        self, model: Model, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        from streamfn.local._provider import load_local

        from ._local import stream_local

        local = await self._in_thread(load_local, model, self.environ)
        async with stream_local(local, context, options) as events:
            yield events

    async def _open(self, step: Connect) -> Connection | Error | Expired:
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

    async def _connect(self, step: Connect) -> Connection:
        target, proxy = step.target, step.proxy
        tls = self.ssl_context if target.scheme == "https" else None
        if proxy is None:
            family = literal_family(target.host) if tls is None else None
            if family is not None:
                return await SocketConnection.open(step.key, family, target.host, target.port)
            reader, writer = await asyncio.open_connection(
                target.host, target.port, ssl=tls, server_hostname=target.host if tls else None
            )
            return StreamConnection(step.key, reader, writer)
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
        conn = StreamConnection(step.key, reader, writer)
        try:
            await self._tunnel(conn, target, proxy)
            if tls is not None:
                await writer.start_tls(tls, server_hostname=target.host)
        except BaseException:
            conn.abort()
            raise
        return conn

    @staticmethod
    async def _tunnel(conn: StreamConnection, target: Target, proxy: Proxy) -> None:
        tunnel = ConnectTunnel(target, proxy)
        conn.writer.write(tunnel.bytes_to_send())
        await conn.writer.drain()
        while not tunnel.receive_bytes(await conn.reader.read(READ_SIZE)):
            pass

    async def _send(self, conn: Connection, data: bytes, deadline: float) -> SendAnswer:
        try:
            async with asyncio.timeout_at(deadline):
                try:
                    await conn.send(data)
                except OSError as exc:
                    return exc
                return None
        except TimeoutError:
            return EXPIRED

    async def _receive(self, conn: Connection, deadline: float) -> ReceiveAnswer:
        try:
            async with asyncio.timeout_at(deadline):
                try:
                    return await conn.receive()
                except OSError as exc:
                    return exc
        except TimeoutError:
            return EXPIRED


# the module-level functions, written once for both event-loop shells
_functions = ShellFunctions(lambda: Client(max_idle_per_host=0))
default_client = _functions.default_client
stream = _functions.stream
complete = _functions.complete
count_tokens = _functions.count_tokens
