"""The trio shell: sockets, TLS, clocks and sleeps around the sans-I/O core.

Everything that is not I/O lives in the core and is shared with the asyncio
shell: HTTP/1.1 framing and parsing (`streamfn.core.http11.Exchange`), which
timer applies and what it says when it fires, the retry policy and the rule
that nothing is retried once the caller has seen output
(`streamfn.core.retry`), proxy selection (`streamfn.core.proxy_env`). This
module only connects, sends, receives with a deadline, sleeps, and closes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final

import trio

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
    """A socket (maybe TLS, maybe tunnelled) and the exchange it last carried."""

    __slots__ = ("key", "last", "stream")

    def __init__(self, key: _PoolKey, stream: trio.abc.Stream) -> None:
        self.key = key
        self.stream = stream
        self.last: Exchange | None = None


class Client(ClientBase[_Connection]):
    """A trio client: configuration and a keep-alive pool (see `ClientBase`)."""

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                await trio.aclose_forcefully(conn.stream)

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
        steps = drive(
            model,
            context,
            options,
            environ=self.environ,
            clock=trio.current_time,
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
                    answer = await self._receive(conn.stream, step.deadline)
                elif isinstance(step, Send):
                    assert conn is not None
                    answer = await self._send(conn.stream, step.data, step.deadline)
                elif isinstance(step, Connect):
                    conn = None if step.fresh else self._take_idle(step.key)
                    if conn is not None:
                        answer = conn.last
                    else:
                        opened = await self._open(step)
                        if isinstance(opened, trio.abc.Stream):
                            conn = _Connection(step.key, opened)
                        else:
                            answer = opened
                elif isinstance(step, Release):
                    assert conn is not None
                    held, conn = conn, None
                    await self._release(held, step.keep)
                elif isinstance(step, Sleep):
                    await trio.sleep(step.seconds)
        finally:
            steps.close()
            if conn is not None:
                await trio.aclose_forcefully(conn.stream)

    async def _open(self, step: Connect) -> trio.abc.Stream | Error | object:
        failure: Error | None = None
        with trio.move_on_at(step.deadline):
            try:
                return await self._connect(step.target, step.proxy)
            except TunnelError as exc:
                failure = Error.network(str(exc))
            except (OSError, trio.BrokenResourceError) as exc:
                failure = connect_error(step.target, exc)
        return EXPIRED if failure is None else failure

    async def _connect(self, target: Target, proxy: Proxy | None) -> trio.abc.Stream:
        host, port = (proxy.host, proxy.port) if proxy else (target.host, target.port)
        sock: trio.abc.Stream = await trio.open_tcp_stream(host, port)
        try:
            if proxy is not None:
                await self._tunnel(sock, target, proxy)
            if target.scheme == "https":
                tls = trio.SSLStream(
                    sock, self.ssl_context, server_hostname=target.host, https_compatible=True
                )
                await tls.do_handshake()
                return tls
            return sock
        except BaseException:
            await trio.aclose_forcefully(sock)
            raise

    @staticmethod
    async def _tunnel(sock: trio.abc.Stream, target: Target, proxy: Proxy) -> None:
        tunnel = ConnectTunnel(target, proxy)
        await sock.send_all(tunnel.bytes_to_send())
        while not tunnel.receive_bytes(await sock.receive_some(READ_SIZE)):
            pass

    @staticmethod
    async def _send(stream: trio.abc.Stream, data: bytes, deadline: float) -> object:
        with trio.move_on_at(deadline):
            try:
                await stream.send_all(data)
            except (trio.BrokenResourceError, OSError) as exc:
                return exc
            return None
        return EXPIRED

    @staticmethod
    async def _receive(stream: trio.abc.Stream, deadline: float) -> object:
        with trio.move_on_at(deadline):
            try:
                return await stream.receive_some(READ_SIZE)
            except (trio.BrokenResourceError, OSError) as exc:
                return exc
        return EXPIRED

    def _take_idle(self, key: _PoolKey) -> _Connection | None:
        conns = self._idle.get(key)
        return conns.pop() if conns else None

    async def _release(self, conn: _Connection, keep: Exchange | None) -> None:
        """Back to the pool after a complete exchange; closed at once otherwise."""
        conns = self._idle.setdefault(conn.key, [])
        if keep is not None and len(conns) < self.max_idle_per_host:
            conn.last = keep
            conns.append(conn)
        else:
            await trio.aclose_forcefully(conn.stream)


_default: Client | None = None


def default_client() -> Client:
    """The client behind the module-level functions.

    It keeps no idle connections: it cannot know when the caller's trio run
    ends, and a pooled socket must not outlive it. Create a `Client` for
    keep-alive reuse.
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
