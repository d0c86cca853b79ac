"""Our events as the native proxy's wire (``POST /v1/stream``): the server's half.

``event: <type>`` and ``data: <the event's JSON>`` per event, which
`streamfn.core.dialects.proxy._client` decodes on the client side.
"""

from __future__ import annotations

from collections.abc import Iterable

from streamfn.core._events import Event, encode_event_json, event_type

__all__ = ["encode_proxy_event", "encode_proxy_events"]


def encode_proxy_event(event: Event) -> bytes:
    """One event as the proxy's SSE frame: ``event: <type>`` and ``data: <json>``.

    Framed directly rather than through `encode_sse`: msgspec's JSON never
    contains a raw line break, so it is always exactly one ``data:`` line, and
    the server sends this per event.
    """
    return (
        b"event: " + event_type(event).encode() + b"\ndata: " + encode_event_json(event) + b"\n\n"
    )


def encode_proxy_events(events: Iterable[Event]) -> bytes:
    """A whole stream as the proxy would send it."""
    return b"".join(encode_proxy_event(e) for e in events)
