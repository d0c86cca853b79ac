"""Running the `App` on hypercorn: the listening socket, the connection cap, shutdown order.

hypercorn bounds how long a request head may take (its keep-alive timer
runs until a whole head has arrived, so ``head_timeout`` is that timer) but
has no cap on open connections (`streamfn.io_common._connection_cap` holds the
rule both shells share). asyncio's accept loop calls ``accept()`` on the
socket object it is given, so here the cap lives in `CappedSocket`: past the
limit a new connection gets a one-line 503 and is closed at once, and each
accepted connection gives its place back when asyncio closes it.

Shutdown order matters: when ``stop`` is set, hypercorn stops accepting at
once while the app starts its own shutdown beside it (queued requests get
503s, running streams get ``shutdown_grace`` seconds and then a terminal
error in their dialect); hypercorn waits a little longer than that grace for
the connections to close.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

from streamfn.asgi import App
from streamfn.asgi._hosting import hypercorn_arguments, hypercorn_worker
from streamfn.io_common._connection_cap import REFUSAL, ConnectionCap

from ._server import AsyncioRuntime

__all__ = ["CappedSocket", "serve"]


class _Counted(socket.socket):
    """An accepted connection that gives its place back to its listener on close."""

    _cap: ConnectionCap | None = None

    def close(self) -> None:
        cap, self._cap = self._cap, None
        if cap is not None:
            cap.release()
        super().close()


class CappedSocket(socket.socket):
    """A listening socket that keeps at most ``limit`` accepted connections open."""

    def __init__(self, sock: socket.socket, limit: int) -> None:
        super().__init__(sock.family, sock.type, sock.proto, fileno=sock.detach())
        self.cap = ConnectionCap(limit)

    def accept(self) -> tuple[socket.socket, Any]:
        fd, address = self._accept()  # type: ignore[attr-defined]
        if not self.cap.admit():
            with socket.socket(self.family, self.type, self.proto, fileno=fd) as refused:
                refused.setblocking(False)
                with contextlib.suppress(OSError):
                    refused.send(REFUSAL)
            raise BlockingIOError("connection cap reached")
        conn = _Counted(self.family, self.type, self.proto, fileno=fd)
        conn._cap = self.cap
        # asyncio sets TCP_NODELAY only on sockets whose proto says TCP, which a
        # listener made with socket.socket(family, SOCK_STREAM) does not: without it
        # Nagle holds each small SSE write until the client's delayed ACK (~40 ms).
        with contextlib.suppress(OSError):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if socket.getdefaulttimeout() is None and self.gettimeout():
            conn.setblocking(True)
        return conn, address


async def serve(
    app: App,
    sock: socket.socket,
    stop: asyncio.Event,
    *,
    max_connections: int = 4096,
    head_timeout: float = 10.0,
    log_errors: bool = True,
    allow_h2c: bool = False,
) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stop`` is set, then shut down."""
    worker_serve = hypercorn_worker("asyncio", "streamfn.io_asyncio.serve")
    capped = CappedSocket(sock, max_connections)
    app.bind(AsyncioRuntime())
    wrapped, config, options = hypercorn_arguments(
        app, capped, stop, head_timeout=head_timeout, log_errors=log_errors, allow_h2c=allow_h2c
    )
    await worker_serve(wrapped, config, **options)
