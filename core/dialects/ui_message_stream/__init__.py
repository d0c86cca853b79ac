"""The AI SDK UI message stream: the client call, the inbound parser and the encoder.

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._client import (
    build_request,
    open_call,
)
from ._encode import (
    UIMessageStreamEncoder,
)
from ._inbound import (
    parse_ui_chat_request,
)

__all__ = [
    "UIMessageStreamEncoder",
    "build_request",
    "open_call",
    "parse_ui_chat_request",
]
