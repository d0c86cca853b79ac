"""Provider wire formats: request builders and response state machines, all pure.

The names below are the extension API: what a new wire format subclasses
(`SSECall`, `NDJSONCall`, or `FramedCall` with any decoder from
`streamfn.core.wire`) and calls (see "Your own wire format" in the documentation). Each built-in format lives in a
module of its own and registers itself through `streamfn.core.call`.
"""

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

__all__ = [
    "SECRET_HEADERS",
    "Emitter",
    "FramedCall",
    "HTTPRequest",
    "NDJSONCall",
    "ProviderCall",
    "SSECall",
    "bearer",
    "json_request",
    "redact_headers",
    "request_headers",
]
