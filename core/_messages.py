"""Conversation types: what goes into a call (`Context`) and what comes out.

They are provider-neutral on purpose. An `AssistantMessage` produced by one
provider replays to another: thinking keeps its signature (and which
provider/model produced it, so a foreign signature is never sent where it
would be rejected), tool calls keep their ids, server-side blocks are kept
as `OpaqueContent` for the provider that made them.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from typing import Any, TypeAlias

import msgspec

from ._events import Cost, ErrorKind, StopReason, Usage
from .content._citations import Citation
from .json._schema_check import SchemaMismatch

__all__ = [
    "AssistantContent",
    "AssistantMessage",
    "Citation",
    "Context",
    "DocumentContent",
    "ImageContent",
    "Message",
    "OpaqueContent",
    "ServerTool",
    "TextContent",
    "ThinkingContent",
    "Tool",
    "ToolCall",
    "ToolResultMessage",
    "UserContent",
    "UserMessage",
]


class TextContent(msgspec.Struct, tag="text", kw_only=True, omit_defaults=True):
    """Text; ``citations`` are the sources the provider gave for it (assistant turns)."""

    text: str
    signature: str | None = None
    citations: list[Citation] = msgspec.field(default_factory=list)


class ThinkingContent(msgspec.Struct, tag="thinking", kw_only=True):
    """Reasoning. ``signature`` lets the producing provider verify it on replay;
    ``redacted`` means the provider hid the text and ``signature`` holds it encrypted."""

    thinking: str
    signature: str | None = None
    redacted: bool = False


class ToolCall(msgspec.Struct, tag="tool_call", kw_only=True):
    """A function call the model asked for.

    ``arguments`` is the parsed JSON object (empty while unparsable);
    ``arguments_json`` the exact text streamed, kept so nothing is lost when the
    model emits invalid JSON; ``parse_error`` says why parsing failed, if it did.

    Where the call's tool was declared with a schema, ``errors`` says where the
    arguments break it and ``repairs`` what was repaired first (then
    ``arguments_json`` is the repaired text and ``streamed_arguments`` the text
    as streamed). See `ToolCallChecks`.
    """

    id: str
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    arguments_json: str = ""
    parse_error: str | None = None
    signature: str | None = None
    errors: list[SchemaMismatch] = msgspec.field(default_factory=list)
    repairs: list[str] = msgspec.field(default_factory=list)
    streamed_arguments: str | None = None


def _base64(raw: bytes | bytearray | memoryview) -> str:
    return base64.b64encode(bytes(raw)).decode("ascii")


class ImageContent(msgspec.Struct, tag="image", kw_only=True, omit_defaults=True):
    """An image: base64 ``data`` with its MIME type (``image/png`` ...), or a ``url``.

    A URL is fetched by the provider, never by streamfn; providers that take
    no URLs (Bedrock, Ollama) refuse it before any request is sent (see
    `core/content/_documents.py`). `from_bytes` and `from_url` build either.
    """

    data: str = ""
    mime_type: str = ""
    url: str | None = None

    def __post_init__(self) -> None:
        _one_source(self, "ImageContent")

    @classmethod
    def from_bytes(cls, raw: bytes | bytearray | memoryview, mime_type: str) -> ImageContent:
        return cls(data=_base64(raw), mime_type=mime_type)

    @classmethod
    def from_url(cls, url: str, mime_type: str = "") -> ImageContent:
        return cls(url=url, mime_type=mime_type)


class DocumentContent(msgspec.Struct, tag="document", kw_only=True, omit_defaults=True):
    """A document (PDF, plain text ...): base64 ``data`` or a ``url``, its MIME type,
    and an optional ``title`` (shown to the model; Bedrock needs a name).

    As with images, a URL is the provider's to fetch; which providers take
    documents at all, and in which form, is in `core/content/_documents.py`.
    """

    data: str = ""
    mime_type: str = "application/pdf"
    url: str | None = None
    title: str | None = None

    def __post_init__(self) -> None:
        _one_source(self, "DocumentContent")

    @classmethod
    def from_bytes(
        cls,
        raw: bytes | bytearray | memoryview,
        mime_type: str = "application/pdf",
        *,
        title: str | None = None,
    ) -> DocumentContent:
        return cls(data=_base64(raw), mime_type=mime_type, title=title)

    @classmethod
    def from_url(
        cls, url: str, mime_type: str = "application/pdf", *, title: str | None = None
    ) -> DocumentContent:
        return cls(url=url, mime_type=mime_type, title=title)


def _one_source(part: ImageContent | DocumentContent, name: str) -> None:
    if bool(part.data) == (part.url is not None):
        raise ValueError(f"{name} takes either data (base64) or url, exactly one of them")
    if part.data and not part.mime_type:
        raise ValueError(f"{name} with data needs its mime_type (image/png, application/pdf ...)")


class OpaqueContent(msgspec.Struct, tag="opaque", kw_only=True):
    """A provider block streamfn carries without interpreting (server tool use and
    results); ``json`` is sent back verbatim to ``provider`` and dropped elsewhere."""

    provider: str
    block_type: str
    json: str


UserContent: TypeAlias = TextContent | ImageContent | DocumentContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall | OpaqueContent


def _now_ms() -> int:
    return int(time.time() * 1000)


class UserMessage(msgspec.Struct, tag="user", kw_only=True):
    """A user's turn: text, or a list of text, images and documents."""

    content: str | list[UserContent]
    timestamp: int = 0


class AssistantMessage(msgspec.Struct, tag="assistant", kw_only=True, dict=True):
    """The model's turn: content blocks in order, why it stopped, what it cost.

    ``error_message``/``error_kind`` are set when the stream ended with an
    `Error`; the content received before the error is kept.
    """

    content: list[AssistantContent] = msgspec.field(default_factory=list)
    api: str = ""
    provider: str = ""
    model: str = ""
    response_id: str | None = None
    stop_reason: StopReason = StopReason.STOP
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: Cost = msgspec.field(default_factory=Cost)
    error_message: str | None = None
    error_kind: ErrorKind | None = None
    timestamp: int = 0

    @property
    def text(self) -> str:
        """All text blocks joined: the answer, for callers that want just that."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def parsed(self) -> Any:
        """The structured answer when the call asked for ``Options.response_schema``
        (set by ``complete()``: an instance of the type given, or the decoded JSON);
        None otherwise. Not a field: it is never encoded nor replayed."""
        return self.__dict__.get("parsed")

    @property
    def thinking(self) -> str:
        return "".join(b.thinking for b in self.content if isinstance(b, ThinkingContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.content if isinstance(b, ToolCall)]


class ToolResultMessage(msgspec.Struct, tag="tool_result", kw_only=True):
    """The result of running a tool call, sent back on the next turn.

    ``content`` is a list of parts; `ToolResultMessage.of` builds one from
    whatever the tool returned (a string, or any JSON-able value, sent as JSON
    text). A plain string or value passed as ``content`` is converted the same
    way, so it is never silently sent as an empty result.
    """

    tool_call_id: str
    tool_name: str
    content: list[UserContent] = msgspec.field(default_factory=list)
    is_error: bool = False
    timestamp: int = 0

    def __post_init__(self) -> None:
        value: Any = self.content
        if not isinstance(value, list) or not all(
            isinstance(part, (TextContent, ImageContent, DocumentContent)) for part in value
        ):
            self.content = [TextContent(text=_result_text(value))]

    @classmethod
    def of(
        cls, call: ToolCall | str, result: Any, *, tool_name: str = "", is_error: bool = False
    ) -> ToolResultMessage:
        """The result of ``call`` (a `ToolCall`, or its id with ``tool_name``): a string as
        text, content parts as they are, any other value as JSON."""
        call_id, name = (call.id, call.name) if isinstance(call, ToolCall) else (call, tool_name)
        return cls(tool_call_id=call_id, tool_name=name, content=result, is_error=is_error)


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return str(value)


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


class Tool(msgspec.Struct, kw_only=True, tag="function", tag_field="kind"):
    """A function the model may call; ``parameters`` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class ServerTool(msgspec.Struct, kw_only=True, tag="server", tag_field="kind"):
    """A tool the provider runs itself (and bills for): ``type`` ``web_search`` or
    ``code_execution``; ``config`` is merged into the provider's tool object as is
    (``max_uses``, ``allowed_domains``, ``user_location`` ...).

    It sits in `Context.tools` beside the functions. Each wire format maps it
    to its own form (`core/content/_server_tools.py`); one that has none refuses
    it before any request is sent.
    """

    type: str
    config: dict[str, Any] = msgspec.field(default_factory=dict)


class Context(msgspec.Struct, kw_only=True):
    """Everything a provider needs to produce the next assistant turn.

    ``tools`` holds functions (`Tool`) and provider-run tools (`ServerTool`).
    """

    messages: list[Message] = msgspec.field(default_factory=list)
    system_prompt: str | None = None
    tools: Sequence[Tool | ServerTool] = msgspec.field(default_factory=list)

    @property
    def function_tools(self) -> list[Tool]:
        """The functions among ``tools`` (what the model calls and the caller runs)."""
        return [t for t in self.tools if isinstance(t, Tool)]

    @property
    def server_tools(self) -> list[ServerTool]:
        return [t for t in self.tools if isinstance(t, ServerTool)]

    @classmethod
    def of(cls, prompt: str, *, system_prompt: str | None = None) -> Context:
        """A one-turn context: the common case in scripts and tests."""
        return cls(messages=[UserMessage(content=prompt)], system_prompt=system_prompt)
