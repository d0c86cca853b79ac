"""What every provider's client side builds on: the call base classes and the request helpers, all pure.

The names below are the extension API: what a new wire format subclasses
(`SSECall`, `NDJSONCall`, or `FramedCall` with any decoder from
`streamfn.core.wire`) and calls (see "Your own wire format" in the documentation). The
built-in formats live in `streamfn.core.dialects`, one package each, and
`open_call` finds them by api name.
"""

from .._credentials import ENV_KEYS
from ..content._server_tools import tool_objects
from ._base import (
    SECRET_HEADERS,
    Emitter,
    FramedCall,
    HTTPRequest,
    NDJSONCall,
    ProviderCall,
    SSECall,
    bearer,
    json_request,
    redact_headers,
    request_headers,
)
from ._convert import prepare_messages

__all__ = [
    "ENV_KEYS",
    "SECRET_HEADERS",
    "Emitter",
    "FramedCall",
    "HTTPRequest",
    "NDJSONCall",
    "ProviderCall",
    "SSECall",
    "bearer",
    "json_request",
    "prepare_messages",
    "redact_headers",
    "request_headers",
    "tool_objects",
]
