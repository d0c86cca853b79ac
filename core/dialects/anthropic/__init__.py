"""Anthropic Messages: the request builder and response machine (client side), the inbound parser and encoder (server side).

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._encode import (
    AnthropicEncoder,
    anthropic_message_body,
)
from ._inbound import (
    parse_anthropic_request,
)
from ._request import (
    build_request,
)
from ._response import (
    open_call,
)

__all__ = [
    "AnthropicEncoder",
    "anthropic_message_body",
    "build_request",
    "open_call",
    "parse_anthropic_request",
]
