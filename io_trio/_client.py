"""The trio shell: sockets, TLS, clocks and sleeps around the sans-I/O core.

Everything that is not I/O lives in the core and is shared with the asyncio
shell: HTTP/1.1 framing and parsing (`streamfn.core.http._exchange.Exchange`), which
timer applies and what it says when it fires, the retry policy and the rule
that nothing is retried once the caller has seen output
(`streamfn.core.stages._retry`), proxy selection (`streamfn.core.http._proxy_env`). This
module only connects, sends, receives with a deadline, sleeps, and closes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

import trio

from streamfn.client import ClientBase, PooledConnection, ShellFunctions
from streamfn.client._pool import PoolKey
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
from streamfn.io_common._sockets import literal_family, socket_readable

__all__ = ["Client", "complete", "count_tokens", "default_client", "stream"]

T = TypeVar("T")

READ_SIZE: Final = 64 << 10


class _Connection(PooledConnection):
    """A trio stream (maybe TLS, maybe tunnelled) in the pool."""

    __slots__ = ("stream",)

    def __init__(self, key: PoolKey, stream: trio.abc.Stream) -> None:
        super().__init__(key)
        self.stream = stream


class Client(ClientBase[_Connection]):
    """A trio client: configuration, a keep-alive pool and the step loop come from
    `ClientBase`; this class only does trio's I/O."""

    ambient = PROCESS  # the environment, randomness, wall clock and TLS defaults

    def _clock(self) -> Callable[[], float]:
        return trio.current_time

    async def _sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    async def _close(self, conn: _Connection) -> None:
        await trio.aclose_forcefully(conn.stream)

    async def _open(self, step: Connect) -> _Connection | Error | Expired:
        failure: Error | None = None
        with trio.move_on_at(step.deadline):
            try:
                return _Connection(step.key, await self._connect(step.target, step.proxy))
            except TunnelError as exc:
                failure = Error.network(str(exc))
            except (OSError, trio.BrokenResourceError) as exc:
                failure = connect_error(step.target, exc)
        return EXPIRED if failure is None else failure

    async def _connect(self, target: Target, proxy: Proxy | None) -> trio.abc.Stream:
        host, port = (proxy.host, proxy.port) if proxy else (target.host, target.port)
        sock: trio.abc.Stream = await _open_tcp(host, port)
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

    async def _readable(self, conn: _Connection) -> bool:
        return _stream_readable(conn.stream)

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args)

    @asynccontextmanager
    async def _local_stream(
        self, model: Model, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        from streamfn.local._provider import load_local

        from ._local import stream_local

        local = await self._in_thread(load_local, model, self.environ)
        async with stream_local(local, context, options) as events:
            yield events

    async def _send(self, conn: _Connection, data: bytes, deadline: float) -> SendAnswer:
        with trio.move_on_at(deadline):
            try:
                await conn.stream.send_all(data)
            except (trio.BrokenResourceError, OSError) as exc:
                return exc
            return None
        return EXPIRED

    async def _receive(self, conn: _Connection, deadline: float) -> ReceiveAnswer:
        with trio.move_on_at(deadline):
            try:
                return await conn.stream.receive_some(READ_SIZE)
            except (trio.BrokenResourceError, OSError) as exc:
                return exc
        return EXPIRED


async def _open_tcp(host: str, port: int) -> trio.SocketStream:
    """`trio.open_tcp_stream`, without its resolver round trip and happy-eyeballs
    nursery for an IP literal (one address: nothing to race)."""
    family = literal_family(host)
    if family is None:
        return await trio.open_tcp_stream(host, port)
    sock = trio.socket.socket(family, trio.socket.SOCK_STREAM)
    try:
        await sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


def _stream_readable(stream: trio.abc.Stream) -> bool:
    """Bytes or EOF pending on a trio stream, without a checkpoint (trio's own zero
    timeout would cancel before looking): decrypted or still-encrypted TLS bytes
    held by an `SSLStream`, then a zero-timeout poll of the socket underneath."""
    while isinstance(stream, trio.SSLStream):
        incoming = getattr(stream, "_incoming", None)  # encrypted bytes read, not decrypted
        if stream.pending() or (incoming is not None and incoming.pending):
            return True
        stream = stream.transport_stream
    if isinstance(stream, trio.SocketStream):
        return socket_readable(stream.socket.fileno())
    return False


# the module-level functions, written once for both event-loop shells
_functions = ShellFunctions(lambda: Client(max_idle_per_host=0))
default_client = _functions.default_client
stream = _functions.stream
complete = _functions.complete
count_tokens = _functions.count_tokens
