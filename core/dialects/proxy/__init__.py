"""The proxy format (our events as SSE): the client call and the encoder, each the other's inverse.

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._client import (
    build_request,
    open_call,
)
from ._encode import (
    encode_proxy_event,
    encode_proxy_events,
)

__all__ = [
    "build_request",
    "encode_proxy_event",
    "encode_proxy_events",
    "open_call",
]
