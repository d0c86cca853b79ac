"""The server's cap on open connections, shared by both event-loop shells.

hypercorn has no such cap, so each shell counts its served connections here:
`ConnectionCap.admit` when one is accepted (False past the limit: the shell
writes `REFUSAL`, a one-line 503, and closes it at once, without reading its
request), `ConnectionCap.release` when one closes. Where the shell counts
differs (asyncio's listening socket, trio's per-connection task), the
rule and the answer do not. Standard library only; nothing here waits.
"""

from __future__ import annotations

from typing import Final

__all__ = ["REFUSAL", "ConnectionCap"]

_REFUSED_BODY: Final = (
    b'{"error":{"message":"too many open connections; retry in a moment",'
    b'"type":"server_error","code":"overloaded"}}'
)
#: what a connection past the cap reads before it is closed
REFUSAL: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"retry-after: 1\r\nconnection: close\r\ncontent-length: "
    + str(len(_REFUSED_BODY)).encode()
    + b"\r\n\r\n"
    + _REFUSED_BODY
)


class ConnectionCap:
    """At most ``limit`` connections open at once; how many are open and were refused."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"max_connections must be at least 1, got {limit}")
        self.limit = limit
        self.open_connections = 0
        self.refused = 0

    def admit(self) -> bool:
        """Count a new connection in; False (and counted as refused) past the limit."""
        if self.open_connections >= self.limit:
            self.refused += 1
            return False
        self.open_connections += 1
        return True

    def release(self) -> None:
        """An admitted connection closed: its place is free."""
        self.open_connections -= 1
