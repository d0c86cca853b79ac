"""The pure core of streamfn: events, messages, decoders, providers. No I/O.

Everything here is deterministic: given the same bytes it returns the same
events, and it never opens a socket, reads a clock or starts a thread.
"""

from ._moved import install as _install_moved
from .accumulate import Accumulator, ProtocolViolation, accumulate, check_protocol
from .cache_points import CachePoint
from .call import Call, api_names, open_call, register_api, replay
from .classify import classify_http_error, classify_message, parse_retry_after
from .completion import CompletionError
from .credentials import MissingCredentials, resolve_api_key
from .events import (
    Cost,
    Done,
    Error,
    ErrorKind,
    Event,
    OpaqueBlock,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    decode_event,
    decode_event_json,
    encode_event,
    encode_event_json,
    event_type,
)
from .fallback import FallbackModel, fallback
from .messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from .models import (
    Model,
    UnknownModel,
    compute_cost,
    get_model,
    list_models,
    model,
    openai_compatible,
    provider_names,
    register_model,
)
from .options import Options, ThinkingLevel, ThinkingName
from .partial_json import PartialJSONError, PartialJSONParser
from .providers._base import HTTPRequest
from .providers.sigv4 import sign_request
from .structured import OutputValidationError, StructuredOutputUnsupported, parse_output
from .tagged import TaggedDecoder
from .text_tools import Markup, TextToolCalls, text_tool_calls
from .wire.eventstream import (
    EventStreamDecoder,
    EventStreamError,
    EventStreamMessage,
    encode_message,
)
from .wire.ndjson import NDJSONDecoder, NDJSONError
from .wire.sse import ServerSentEvent, SSEComment, SSEDecoder, SSEError, encode_sse

_install_moved()

__all__ = [
    "Accumulator",
    "AssistantContent",
    "AssistantMessage",
    "CachePoint",
    "Call",
    "CompletionError",
    "Context",
    "Cost",
    "Done",
    "Error",
    "ErrorKind",
    "Event",
    "EventStreamDecoder",
    "EventStreamError",
    "EventStreamMessage",
    "FallbackModel",
    "HTTPRequest",
    "ImageContent",
    "Markup",
    "Message",
    "MissingCredentials",
    "Model",
    "NDJSONDecoder",
    "NDJSONError",
    "OpaqueBlock",
    "OpaqueContent",
    "Options",
    "OutputValidationError",
    "PartialJSONError",
    "PartialJSONParser",
    "ProtocolViolation",
    "SSEComment",
    "SSEDecoder",
    "SSEError",
    "ServerSentEvent",
    "Start",
    "StopReason",
    "StructuredOutputUnsupported",
    "TaggedDecoder",
    "TextContent",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "TextToolCalls",
    "ThinkingContent",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingLevel",
    "ThinkingName",
    "ThinkingStart",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolResultMessage",
    "UnknownModel",
    "Usage",
    "UserContent",
    "UserMessage",
    "accumulate",
    "api_names",
    "check_protocol",
    "classify_http_error",
    "classify_message",
    "compute_cost",
    "decode_event",
    "decode_event_json",
    "encode_event",
    "encode_event_json",
    "encode_message",
    "encode_sse",
    "event_type",
    "fallback",
    "get_model",
    "list_models",
    "model",
    "open_call",
    "openai_compatible",
    "parse_output",
    "parse_retry_after",
    "provider_names",
    "register_api",
    "register_model",
    "replay",
    "resolve_api_key",
    "sign_request",
    "text_tool_calls",
]
