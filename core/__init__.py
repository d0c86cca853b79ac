"""The pure core of streamfn: the names a user touches. No I/O.

Everything here is deterministic: given the same bytes it returns the same
events, and it never opens a socket, reads a clock or starts a thread.

The rest lives in its room: decoders in `streamfn.core.wire`, the provider
extension API in `streamfn.core.providers`, the server codec in
`streamfn.core.serve`, HTTP/1.1 in `streamfn.core.http`, and the helpers in
their modules (`streamfn.core.events`, `.classify`, `.text_tools` ...).
"""

from .accumulate import accumulate, check_protocol
from .call import open_call, register_api, replay
from .completion import raise_for_error
from .errors import (
    CompletionError,
    MissingCredentials,
    ProtocolViolation,
    StreamError,
    StreamfnError,
    UnknownModel,
)
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
)
from .fallback import fallback
from .messages import (
    AssistantMessage,
    Citation,
    Context,
    DocumentContent,
    ImageContent,
    Message,
    OpaqueContent,
    ServerTool,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .models import Model, get_model, list_models, model, register_model
from .options import AWSCredentials, CachePoint, Options, ThinkingLevel
from .structured import OutputValidationError, parse_output

__all__ = [
    "AWSCredentials",
    "AssistantMessage",
    "CachePoint",
    "Citation",
    "CompletionError",
    "Context",
    "Cost",
    "DocumentContent",
    "Done",
    "Error",
    "ErrorKind",
    "Event",
    "ImageContent",
    "Message",
    "MissingCredentials",
    "Model",
    "OpaqueBlock",
    "OpaqueContent",
    "Options",
    "OutputValidationError",
    "ProtocolViolation",
    "ServerTool",
    "Start",
    "StopReason",
    "StreamError",
    "StreamfnError",
    "TextContent",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingContent",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingLevel",
    "ThinkingStart",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolResultMessage",
    "UnknownModel",
    "Usage",
    "UserMessage",
    "accumulate",
    "check_protocol",
    "fallback",
    "get_model",
    "list_models",
    "model",
    "open_call",
    "parse_output",
    "raise_for_error",
    "register_api",
    "register_model",
    "replay",
]


#: the installed distribution's version (read from its metadata on first use)
__version__: str


def __getattr__(name: str) -> object:
    """``__version__``, read once from the installed distribution's metadata."""
    if name == "__version__":
        from .version import installed_version

        globals()[name] = found = installed_version()
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
