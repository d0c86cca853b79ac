"""Gemini generateContent: the request builder and response machine (client side), the encoder (server side).

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._encode import (
    GeminiEncoder,
)
from ._request import (
    build_request,
)
from ._response import (
    open_call,
)

__all__ = [
    "GeminiEncoder",
    "build_request",
    "open_call",
]
