"""The system resolver, as the address checks want it: a name -> its IP addresses.

The server resolves its clients' input URLs with it (`streamfn.asgi`), and the
catalogue refresh resolves the host a redirect names (`_catalog_fetch`): both
judge the addresses with `streamfn.core.serve._input_urls` before anything is
fetched. A name that does not resolve gets no addresses, which those checks refuse.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from typing import TypeAlias

__all__ = ["Resolver", "system_resolver"]

#: a DNS name -> the IP addresses it resolves to (none when it does not)
Resolver: TypeAlias = Callable[[str], Sequence[str]]


def system_resolver(name: str) -> list[str]:
    """Every address the system resolver gives for ``name`` (IPv4 and IPv6)."""
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return sorted({str(info[4][0]) for info in infos})
