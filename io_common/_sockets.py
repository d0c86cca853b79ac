"""The socket checks every shell makes, whatever its event loop: which address
family an IP literal has (so it skips the resolver), and whether bytes or an
EOF wait on a socket (so a pooled connection the peer closed is not reused).

Standard library only (``socket``, ``select``); neither call waits.
"""

from __future__ import annotations

import select
import socket

__all__ = ["literal_family", "socket_readable"]


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
