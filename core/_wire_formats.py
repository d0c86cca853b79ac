"""The wire formats by name, and what each tells the format-neutral feature modules.

A wire format lives in one room: its package under ``streamfn.core.dialects``
(built in, listed in `BUILTIN`) or the module given to ``register_api``
(a plug-in). Besides ``open_call``, the room may hold ``WIRE_FORMAT``, a
`WireFormat` record: the answers the feature modules (documents, server tools,
credentials, tool-call ids, recovery ...) ask of a format, so that those modules
decide *what* and never name a format. A built-in room keeps its record in
``streamfn.core.dialects.<format>._room``; a plug-in module sets the attribute
itself and gets the same powers. `wire_format` looks a record up once per name.

Its own module, importing nothing at run time, so the model registry and every
feature module can read it without a cycle: a room is imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from ._count import Counting
    from ._events import Event
    from ._messages import DocumentContent
    from ._options import Options
    from .catalogue._capability_spec import CapabilityRule
    from .catalogue._model_spec import Model

__all__ = [
    "API_MODULES",
    "API_NAMES",
    "BUILTIN",
    "REGISTERED",
    "EventEncoder",
    "WireFormat",
    "forget",
    "plugin_api_names",
    "room_module",
    "wire_format",
]

#: the built-in wire formats: ``Model.api`` -> its package under ``streamfn.core.dialects``
#: (one line per format: the registration; the local model has no wire, it runs in
#: ``streamfn.local``)
BUILTIN: Final[dict[str, str]] = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "ollama": "ollama",
    "bedrock": "bedrock",
    "proxy": "proxy",
    "agent-events": "agent_events",
    "ui-message-stream": "ui_message_stream",
    "agui": "agui",
    "local": "",
}
#: The wire formats streamfn speaks; `Model.api` is one of these.
API_NAMES: Final = tuple(BUILTIN)
#: the built-in formats that have a package (all but the local model)
API_MODULES: Final = {api: package for api, package in BUILTIN.items() if package}

#: the wire formats added from outside the package: name -> the module serving it (or
#: its dotted path, imported on first use)
REGISTERED: dict[str, object] = {}


def plugin_api_names() -> list[str]:
    """The names added with ``register_api`` (or the ``streamfn.apis`` entry points)."""
    return list(REGISTERED)


class EventEncoder(Protocol):
    """What writes our events as a format's body, one event at a time."""

    def encode(self, event: Event) -> bytes: ...


def _all_kinds(model: Model) -> tuple[str, ...]:
    return ("image", "image_url", "document", "document_url")


@dataclass(frozen=True, kw_only=True)
class WireFormat:
    """What one wire format answers the feature modules; every field has the answer of
    a format that says nothing (a plug-in's default).

    Documents: ``input_kinds`` (the input kinds a model takes when its capabilities do
    not say), ``documents_in_tool_results`` (whether a tool result may carry one),
    ``check_document`` (raise `UnsupportedInput` for a document this format cannot
    take; ``where`` names its place in the context).

    Server tools: ``server_tools`` (type -> the tool object a `ServerTool`'s config is
    merged over), ``server_tool_types`` (the types a model takes when its capabilities
    do not say; None: ``server_tools``' keys), ``server_tool_keys`` (type -> the config
    keys its tool takes; a type not listed takes any).

    Requests: ``credentials`` (the options with this format's credentials filled from
    the environment, where it has its own kind; None: one API key),
    ``tool_call_id`` (the id this format accepts for a tool call first named
    elsewhere), ``websocket`` (whether it streams over a WebSocket too).

    Recovery: ``resumes`` (whether a cut response can be resumed by id for this model),
    ``continues`` (whether it continues a partial answer for this model) and
    ``prefill`` (True: it continues a plain prefilled assistant turn, whose trailing
    whitespace it refuses; False: the prefilled turn goes with ``continuation_body``
    merged into the request's extra body).

    Tokens: ``counting`` (how it counts a request's input tokens; None: it cannot).

    Errors: ``own_server`` (it speaks to another streamfn server, whose token is
    ``STREAMFN_PROXY_TOKEN`` and whose upstream key is its operator's),
    ``upgrade`` (the same model reached through another format, for a model the
    provider may say only that format serves; None where it never does).

    Catalogue: ``catalog_sources`` (models.dev's provider id -> our provider name, for
    the providers whose catalogued models speak this format).

    Transcripts (the fuzz kit's round trips: events -> this format's body -> events):
    ``content_type`` (its response body's media type), ``transcript_encoder`` (given
    a response id, what writes our events as its body; None: no transcripts),
    ``transcript_shape`` (the fuzz kit's ``StreamShape`` knobs: what it can carry),
    ``block_ends`` (whether it says where each block ends) and ``no_usage_on`` (stop
    reasons whose end carries no usage in it), ``sample_body`` (the fake provider's
    short answer in this format, for the given words or its own) and ``sample_cut`` (where the
    fault suite cuts that body to leave it unfinished: before the first occurrence).

    Models: ``capability_rules`` (what each model family accepts in a request, first
    match wins; `capabilities_for` reads them).
    """

    input_kinds: Callable[[Model], tuple[str, ...]] = _all_kinds
    documents_in_tool_results: bool = False
    check_document: Callable[[DocumentContent, str], None] | None = None
    server_tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    server_tool_types: Callable[[Model], tuple[str, ...]] | None = None
    server_tool_keys: Mapping[str, frozenset[str]] = field(default_factory=dict)
    credentials: Callable[[Model, Options, Mapping[str, str]], Options] | None = None
    tool_call_id: Callable[[str], str] | None = None
    websocket: bool = False
    resumes: Callable[[Model], bool] | None = None
    continues: Callable[[Model], bool] | None = None
    prefill: bool = False
    continuation_body: Mapping[str, Any] = field(default_factory=dict)
    counting: Counting | None = None
    capability_rules: Sequence[CapabilityRule] = ()
    own_server: bool = False
    catalog_sources: Mapping[str, str] = field(default_factory=dict)
    content_type: str = ""
    transcript_encoder: Callable[[str], EventEncoder] | None = None
    transcript_shape: Mapping[str, Any] = field(default_factory=dict)
    block_ends: bool = True
    no_usage_on: frozenset[str] = frozenset()
    sample_body: Callable[..., bytes] | None = None
    sample_cut: bytes = b""
    upgrade: Callable[[Model], Model | None] | None = None


#: what a format that says nothing answers
_SILENT: Final = WireFormat()
#: records already looked up, by api name
_FOUND: dict[str, WireFormat] = {}


def room_module(api: str) -> Any:
    """The module serving ``api``: a plug-in's, or a built-in format's package (None for
    a name nobody registered, and for the local model, which has no wire)."""
    registered = REGISTERED.get(api)
    if registered is not None:
        if isinstance(registered, str):
            registered = REGISTERED[api] = importlib.import_module(registered)
        return registered
    package = BUILTIN.get(api)
    if not package:
        return None
    return importlib.import_module(f"streamfn.core.dialects.{package}")


def wire_format(api: str) -> WireFormat:
    """The `WireFormat` of ``api``: its room's ``WIRE_FORMAT``, or a silent one."""
    found = _FOUND.get(api)
    if found is None:
        if api in REGISTERED:
            record = getattr(room_module(api), "WIRE_FORMAT", None)
        elif BUILTIN.get(api):
            room = importlib.import_module(f"streamfn.core.dialects.{BUILTIN[api]}._room")
            record = room.WIRE_FORMAT
        else:
            record = None
        found = _FOUND[api] = record if isinstance(record, WireFormat) else _SILENT
    return found


def forget(api: str) -> None:
    """Drop the record looked up for ``api`` (a plug-in registered again)."""
    _FOUND.pop(api, None)
