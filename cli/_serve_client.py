"""The upstream client a gateway (``streamfn serve``) streams through."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["upstream_client"]


def upstream_client(shell: str, environ: Mapping[str, str], max_concurrency: int) -> Any:
    """The ``shell``'s client, keeping as many idle connections per upstream as the
    server runs streams.

    A gateway's load is many concurrent streams to a few hosts: with the
    library's default of 8 idle connections per host, every stream past the
    8th would open (and handshake) a new connection and close it again,
    adding that handshake to its time to the first token. The pool's hygiene
    is unchanged (`streamfn.client._pool`): a connection is reused only
    after a clean, complete exchange that left nothing unread.
    """
    if shell == "trio":
        from streamfn.io_trio import Client

        return Client(environ=environ, max_idle_per_host=max_concurrency)
    from streamfn.io_asyncio import Client as AsyncioClient

    return AsyncioClient(environ=environ, max_idle_per_host=max_concurrency)
