"""The socket checks every shell makes, whatever its event loop: which address
family an IP literal has (so it skips the resolver), and whether bytes or an
EOF wait on a socket (so a pooled connection the peer closed is not reused),
how many bytes a TCP peer has acknowledged (the server's send-stall watch), and
an abortive close (a reset, not a FIN queued behind data the peer never reads).

Standard library only (``socket``, ``select``); neither call waits.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import sys
from typing import Any, Final

__all__ = ["bytes_acked", "literal_family", "reset_on_close", "socket_readable"]

#: where Linux's ``struct tcp_info`` keeps ``tcpi_bytes_acked`` (a u64, Linux 4.1+)
_BYTES_ACKED_AT: Final = 120


def _linux() -> bool:
    """Whether ``TCP_INFO`` has Linux's layout (other systems define the option with
    their own ``struct tcp_info``, where offset 120 is something else)."""
    return sys.platform.startswith("linux")


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


def bytes_acked(sock: Any) -> int | None:
    """How many bytes the peer of TCP socket ``sock`` has acknowledged so far (it grows
    as the peer's application reads and its window opens); None where the system does
    not say (not Linux, not TCP, closed)."""
    option = getattr(socket, "TCP_INFO", None)
    if option is None or not _linux():
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, option, 256)
    except (OSError, ValueError, AttributeError):
        return None
    if len(info) < _BYTES_ACKED_AT + 8:
        return None
    acked: int = struct.unpack_from("Q", info, _BYTES_ACKED_AT)[0]
    return acked


def reset_on_close(sock: Any) -> None:
    """Make closing ``sock`` send a reset and drop its unsent bytes (``SO_LINGER`` 0):
    data a peer never reads must not keep the socket alive in the kernel."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
