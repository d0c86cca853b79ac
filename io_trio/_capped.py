"""The connection cap on trio (`streamfn.io_common._connection_cap`, as on asyncio).

hypercorn's trio worker builds its listeners itself and trio accepts only a
plain ``socket.socket``, so the cap cannot live in the listening socket as it
does on asyncio. It lives in the task hypercorn runs per accepted connection:
`CappedTCPServer` counts the connection in before serving it and out when it
ends (however it ends); past the limit the connection reads the one-line 503
and is closed at once, its request never read. `cap_connections` puts the cap
on one server's configuration; other hypercorn servers in the process are
left as they were.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

import trio
from hypercorn.trio.tcp_server import TCPServer

from streamfn.io_common._connection_cap import REFUSAL, ConnectionCap

__all__ = ["CappedTCPServer", "cap_connections"]

_CAP: Final = "streamfn_connection_cap"

#: how long a refused connection may take to accept its 503 (its buffer is empty)
_REFUSAL_WAIT: Final = 1.0


class CappedTCPServer(TCPServer):
    """hypercorn's trio connection under the `ConnectionCap` of its configuration."""

    async def run(self) -> None:
        cap: ConnectionCap | None = getattr(self.config, _CAP, None)
        if cap is None:
            await super().run()
        elif not cap.admit():
            await self._refuse()
        else:
            try:
                await super().run()
            finally:
                cap.release()

    async def _refuse(self) -> None:
        with (
            trio.move_on_after(_REFUSAL_WAIT),
            contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError),
        ):
            await self.stream.send_all(REFUSAL)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.stream.aclose()


def cap_connections(config: Any, limit: int) -> ConnectionCap:
    """Keep at most ``limit`` connections of the server running ``config`` open."""
    import hypercorn.trio.run

    hypercorn.trio.run.TCPServer = CappedTCPServer  # type: ignore[attr-defined]
    cap = ConnectionCap(limit)
    setattr(config, _CAP, cap)
    return cap
