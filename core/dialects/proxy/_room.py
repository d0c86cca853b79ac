"""What the format of another streamfn server tells the format-neutral feature modules:
that it is one (its auth errors are its token's or its operator's); it carries our
own events, so every other default holds."""

from __future__ import annotations

from typing import Final

from streamfn.core._events import Event
from streamfn.core._wire_formats import WireFormat
from streamfn.core.dialects.proxy._encode import encode_proxy_event

__all__ = ["WIRE_FORMAT"]


class _Framed:
    """Our events as this format's body, one frame each."""

    def encode(self, event: Event) -> bytes:
        return encode_proxy_event(event)


WIRE_FORMAT: Final = WireFormat(
    own_server=True,
    content_type="text/event-stream",
    transcript_encoder=lambda _: _Framed(),
    transcript_shape={"opaque": "anthropic"},
)
