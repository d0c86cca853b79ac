"""The pure core of streamfn: the names a user touches. No I/O.

Everything here is deterministic: given the same bytes it returns the same
events, and it never opens a socket, reads a clock or starts a thread.

The rest lives in its room: decoders in `streamfn.core.wire`, the provider
extension API in `streamfn.core.providers`, the server codec in
`streamfn.core.serve`, HTTP/1.1 in `streamfn.core.http`, and the helpers in
private modules behind this face (`core/_events.py`, `core/_classify.py` ...).
"""

import logging as _logging

from ._accumulate import Accumulator, accumulate, check_protocol
from ._call import open_call, register_api, replay
from ._compiled import hot_path_compiled as _hot_path_compiled
from ._completion import raise_for_error
from ._count import TokenCount, estimate_tokens, open_count, token_count
from ._credentials import with_credentials
from ._errors import (
    CompletionError,
    MissingCredentials,
    ProtocolViolation,
    StreamError,
    StreamfnError,
    TokenCountUnsupported,
    UnknownModel,
    UsageError,
)
from ._events import (
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
from ._messages import (
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
from ._options import AWSCredentials, CachePoint, Options, ThinkingLevel
from ._rate_limits import RateLimits
from ._wire_formats import WireFormat
from .catalogue._capabilities import UnsupportedInput
from .catalogue._capability_spec import Capabilities
from .catalogue._catalog_build import CatalogError
from .catalogue._model_spec import PriceTier
from .catalogue._models import (
    Model,
    catalog_info,
    get_model,
    list_models,
    model,
    register_model,
    use_catalog,
)
from .json._schema import StructuredOutputUnsupported
from .json._schema_check import SchemaMismatch
from .json._structured import OutputValidationError, parse_output
from .stages._fallback import fallback
from .stages._partial_output import PartialOutput, PartialOutputs, iter_partial_outputs
from .stages._recovery import Splice, continue_request, recovery_mode, resume_request
from .stages._text_tools import HERMES, LLAMA_FUNCTION, Markup, TextToolCalls, text_tool_calls
from .stages._tool_checks import ToolCallChecks, ToolCallRepair

# quiet unless the program configures logging (the logging HOWTO, for libraries): without
# a handler, Python would print the library's warnings on stderr by itself
_logging.getLogger("streamfn").addHandler(_logging.NullHandler())

#: True when the streaming hot path runs compiled by mypyc (an opted-in build), False
#: when it runs as pure Python; ``streamfn --version`` says the same
COMPILED: bool = _hot_path_compiled()

__all__ = [
    "COMPILED",
    "HERMES",
    "LLAMA_FUNCTION",
    "AWSCredentials",
    "Accumulator",
    "AssistantMessage",
    "CachePoint",
    "Capabilities",
    "CatalogError",
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
    "Markup",
    "Message",
    "MissingCredentials",
    "Model",
    "OpaqueBlock",
    "OpaqueContent",
    "Options",
    "OutputValidationError",
    "PartialOutput",
    "PartialOutputs",
    "PriceTier",
    "ProtocolViolation",
    "RateLimits",
    "SchemaMismatch",
    "ServerTool",
    "Splice",
    "Start",
    "StopReason",
    "StreamError",
    "StreamfnError",
    "StructuredOutputUnsupported",
    "TextContent",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "TextToolCalls",
    "ThinkingContent",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingLevel",
    "ThinkingStart",
    "TokenCount",
    "TokenCountUnsupported",
    "Tool",
    "ToolCall",
    "ToolCallChecks",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallRepair",
    "ToolCallStart",
    "ToolResultMessage",
    "UnknownModel",
    "UnsupportedInput",
    "Usage",
    "UsageError",
    "UserMessage",
    "WireFormat",
    "accumulate",
    "catalog_info",
    "check_protocol",
    "continue_request",
    "estimate_tokens",
    "fallback",
    "get_model",
    "iter_partial_outputs",
    "list_models",
    "model",
    "open_call",
    "open_count",
    "parse_output",
    "raise_for_error",
    "recovery_mode",
    "register_api",
    "register_model",
    "replay",
    "resume_request",
    "text_tool_calls",
    "token_count",
    "use_catalog",
    "with_credentials",
]


#: the installed distribution's version (read from its metadata on first use)
__version__: str


def __getattr__(name: str) -> object:
    """``__version__``, read once from the installed distribution's metadata."""
    if name == "__version__":
        from ._version import installed_version

        globals()[name] = found = installed_version()
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
