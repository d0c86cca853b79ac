"""Blocking sockets for the sync shell: connect (through an HTTPS proxy, with TLS)
by a deadline, and a zero-timeout readiness check that sees TLS bytes too.

Standard library only (``socket``, ``ssl``); every wait is bounded by a socket
timeout computed from the caller's deadline on ``time.monotonic``. The checks
every shell shares are in `streamfn.io_common._sockets`.
"""

from __future__ import annotations

import socket
import ssl
import time
from typing import Final

from streamfn.core.http import ConnectTunnel, Target
from streamfn.core.http._proxy_env import Proxy
from streamfn.io_common._sockets import literal_family, socket_readable

__all__ = ["READ_SIZE", "connect", "readable", "time_left"]

READ_SIZE: Final = 64 << 10


def time_left(deadline: float) -> float:
    """Seconds until ``deadline`` on ``time.monotonic`` (<= 0 once it has passed)."""
    return deadline - time.monotonic()


def _bounded(sock: socket.socket, deadline: float) -> None:
    """Let the next blocking call on ``sock`` wait until ``deadline`` at most."""
    left = time_left(deadline)
    if left <= 0:
        raise TimeoutError("deadline passed")
    sock.settimeout(left)


def connect(
    target: Target, proxy: Proxy | None, tls: ssl.SSLContext | None, deadline: float
) -> socket.socket:
    """A connected socket to ``target`` (TLS with ``tls`` when given, tunnelled through
    ``proxy``).

    Raises `TimeoutError` when ``deadline`` passes, `TunnelError` when the proxy
    refuses, `OSError` (``ssl.SSLError`` included) otherwise.
    """
    host, port = (proxy.host, proxy.port) if proxy else (target.host, target.port)
    left = time_left(deadline)
    if left <= 0:
        raise TimeoutError("deadline passed")
    sock = _open_tcp(host, port, left)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if proxy is not None:
            _tunnel(sock, target, proxy, deadline)
        if tls is not None:
            _bounded(sock, deadline)
            return tls.wrap_socket(sock, server_hostname=target.host)
        return sock
    except BaseException:
        sock.close()
        raise


def _open_tcp(host: str, port: int, timeout: float) -> socket.socket:
    """A connected TCP socket; an IP literal skips the resolver (`literal_family`)."""
    family = literal_family(host)
    if family is None:
        return socket.create_connection((host, port), timeout=timeout)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _tunnel(sock: socket.socket, target: Target, proxy: Proxy, deadline: float) -> None:
    tunnel = ConnectTunnel(target, proxy)
    _bounded(sock, deadline)
    sock.sendall(tunnel.bytes_to_send())
    while True:
        _bounded(sock, deadline)
        if tunnel.receive_bytes(sock.recv(READ_SIZE)):
            return


def readable(sock: socket.socket) -> bool:
    """Bytes or an EOF wait on ``sock`` (decrypted TLS bytes included), without waiting."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    return socket_readable(sock.fileno())
