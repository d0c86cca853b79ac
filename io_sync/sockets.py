"""Blocking sockets for the sync shell: connect (through an HTTPS proxy, with TLS)
by a deadline, and a zero-timeout readiness check the trio shell uses too.

Standard library only (``socket``, ``ssl``, ``select``); every wait is bounded by
a socket timeout computed from the caller's deadline on ``time.monotonic``.
"""

from __future__ import annotations

import select
import socket
import ssl
import time
from typing import Final

from streamfn.core.http.proxy_env import Proxy
from streamfn.core.http.target import Target
from streamfn.core.http.tunnel import ConnectTunnel

__all__ = [
    "READ_SIZE",
    "connect",
    "literal_family",
    "readable",
    "socket_readable",
    "time_left",
]

READ_SIZE: Final = 64 << 10


def time_left(deadline: float) -> float:
    """Seconds until ``deadline`` on ``time.monotonic`` (<= 0 once it has passed)."""
    return deadline - time.monotonic()


def literal_family(host: str) -> socket.AddressFamily | None:
    """The address family of an IP literal (``127.0.0.1``, ``::1``), None for a name.

    A literal needs no resolver and has one address: the shells connect to it
    directly instead of going through getaddrinfo and a happy-eyeballs race
    (on loopback, trio's `open_tcp_stream` alone costs more than the rest of
    a request). A scoped IPv6 address (``fe80::1%eth0``) is left to the resolver.
    """
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return family
    return None


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


def socket_readable(fd: int) -> bool:
    """A zero-timeout readiness check: True when data or an EOF waits on ``fd``."""
    if fd < 0:
        return True  # already closed
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    ready, _, _ = select.select([fd], [], [], 0)  # pragma: no cover - Windows
    return bool(ready)
