"""OpenAI Chat Completions: the request builder and response machine (client side), the inbound parser and encoder (server side).

One package per wire format: both roles side by side, private modules behind this face.
"""

from ._encode import (
    OpenAIChatEncoder,
    openai_completion_body,
)
from ._inbound import (
    parse_openai_request,
)
from ._request import (
    build_request,
)
from ._response import (
    open_call,
)

__all__ = [
    "OpenAIChatEncoder",
    "build_request",
    "open_call",
    "openai_completion_body",
    "parse_openai_request",
]
