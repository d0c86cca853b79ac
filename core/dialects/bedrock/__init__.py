"""Bedrock ConverseStream: the signed request builder and event-stream machine (client side), the encoder (server side).

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._encode import (
    BedrockEncoder,
)
from ._request import (
    build_request,
)
from ._response import (
    open_call,
)

__all__ = [
    "BedrockEncoder",
    "build_request",
    "open_call",
]
