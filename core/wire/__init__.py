"""Wire decoders: bytes in, frames out, one ``feed()``/``end()`` shape; no I/O.

Each decoder raises one `DecodeError` subclass and stays failed after it;
the encoders beside them (`encode_sse`, `encode_message`) write the same
formats for tests, recordings and the server.
"""

from .._errors import (
    DecodeError,
    EventStreamError,
    JSONArrayError,
    NDJSONError,
    SSEError,
)
from ._decoder import Decoder
from ._eventstream import EventStreamDecoder, EventStreamMessage, encode_message
from ._json_array import JSONArrayDecoder
from ._ndjson import NDJSONDecoder
from ._sse import ServerSentEvent, SSEComment, SSEDecoder, encode_sse

__all__ = [
    "DecodeError",
    "Decoder",
    "EventStreamDecoder",
    "EventStreamError",
    "EventStreamMessage",
    "JSONArrayDecoder",
    "JSONArrayError",
    "NDJSONDecoder",
    "NDJSONError",
    "SSEComment",
    "SSEDecoder",
    "SSEError",
    "ServerSentEvent",
    "encode_message",
    "encode_sse",
]
