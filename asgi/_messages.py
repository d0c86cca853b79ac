"""ASGI messages the `App` sends and receives: response starts, JSON bodies, the
disconnect watch, extra headers. Shell-neutral (plain ASGI callables)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from streamfn.core.serve._status import JSON_HEADERS, SSE_HEADERS, json_body

from ._runtime import DISCONNECTED, Mailbox

__all__ = [
    "Message",
    "Receive",
    "Send",
    "adding_headers",
    "send_json",
    "serve_lifespan",
    "start_sse",
    "watch_disconnect",
]

log = logging.getLogger("streamfn")

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


async def serve_lifespan(
    receive: Receive, send: Send, shutdown: Callable[[], Awaitable[None]]
) -> None:
    """The ASGI lifespan protocol: started at once, ``shutdown`` awaited at its end."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


async def start_sse(send: Send, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A 200 SSE response's start; ``extra``: a protocol's own headers."""
    headers = [*SSE_HEADERS, *(extra or ())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def send_json(
    send: Send, status: int, obj: Any, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [*JSON_HEADERS, *(extra or ())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json_body(obj)})


async def watch_disconnect(receive: Receive, mailbox: Mailbox) -> None:
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                mailbox.signal(DISCONNECTED)
                return
    except Exception:  # the server's receive failed: nothing more will arrive
        log.debug("receive failed while watching for a disconnect", exc_info=True)


#: the messages that start an answer, and so carry its headers
_STARTS: Final = frozenset(
    {"http.response.start", "websocket.accept", "websocket.http.response.start"}
)


def adding_headers(
    send: Send,
    extra: list[tuple[bytes, bytes]] | Callable[[], list[tuple[bytes, bytes]]],
) -> Send:
    """``send`` with ``extra`` headers added to the response start (CORS); a callable
    ``extra`` is asked when the response starts (what it says may be known only then).
    A WebSocket's answer starts too: its accept (the 101) or its denial response."""

    async def wrapped(message: Message) -> None:
        if message["type"] in _STARTS:
            added = extra() if callable(extra) else extra
            message = {**message, "headers": [*message.get("headers", []), *added]}
        await send(message)

    return wrapped
