"""Ollama /api/chat: the client call (request and NDJSON response), the encoder (server side).

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._client import (
    build_request,
    open_call,
)
from ._encode import (
    OllamaEncoder,
)

__all__ = [
    "OllamaEncoder",
    "build_request",
    "open_call",
]
