"""The one event protocol every stream speaks, whatever produced it.

A stream is::

    Start
      ( TextStart TextDelta* TextEnd
      | ThinkingStart ThinkingDelta* ThinkingEnd
      | ToolCallStart ToolCallDelta* ToolCallEnd
      | OpaqueBlock )*
    ( Done | Error )

Events are small frozen msgspec structs in one tagged union (`Event`), so a
stream encodes to JSON or msgpack and back unchanged; that JSON is also the
native proxy wire format. Events never carry a copy of the partial message:
the message is a fold over the events (see `streamfn.core._accumulate`).

``index`` is the block's position in the final message: 0, 1, 2 ... in order
of first appearance. Blocks may interleave (parallel tool calls stream their
arguments side by side); every block opened is closed before `Done`, while an
`Error` may arrive with blocks still open.
"""

from __future__ import annotations

import enum
import typing
from typing import Any, Final, TypeAlias, cast

import msgspec

from ._citations import Citation
from ._rate_limits import RateLimits
from ._schema_check import SchemaMismatch

__all__ = [
    "CUT_STOP_REASONS",
    "EVENT_TYPES",
    "Cost",
    "Done",
    "Error",
    "ErrorKind",
    "Event",
    "OpaqueBlock",
    "Start",
    "StopReason",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "Usage",
    "decode_event",
    "decode_event_json",
    "encode_event",
    "encode_event_json",
    "event_type",
    "finished_as",
]


class StopReason(enum.StrEnum):
    """Why the assistant turn ended; the same five words for every provider."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_USE = "tool_use"
    ERROR = "error"
    ABORTED = "aborted"


#: the stop reasons that say an answer was cut: no reader may take them for a finished one
CUT_STOP_REASONS: Final = frozenset({StopReason.ERROR, StopReason.ABORTED})


class ErrorKind(enum.StrEnum):
    """What a caller should do about an error, so nobody matches message strings.

    Each kind exists because a caller acts differently on it:

    - ``throttled``: back off (``Error.retry_after`` when the provider said) and retry.
    - ``context_overflow``: shrink or summarise the conversation; retrying as is fails.
    - ``auth``: fix the key or permissions; never retried.
    - ``network``: connect failure, drop mid-stream, timeouts, 5xx/overloaded; retry.
    - ``invalid_request``: the request itself was rejected (400 for another reason);
      fix the request, do not retry.
    - ``content_filter``: the provider's safety system stopped the answer; rephrase.
    - ``protocol``: the provider sent bytes that break its own wire format; a bug to
      report, not retried blindly.
    - ``limit``: one of streamfn's own caps (line, event, response or content size)
      was exceeded; raise the cap or ask for less.
    - ``budget``: the call's spending cap (``Options.max_cost``) was reached, or the
      request would pass it before any output; raise the cap, ask for less or use a
      cheaper model. Never retried: the same request costs the same again.
    """

    THROTTLED = "throttled"
    CONTEXT_OVERFLOW = "context_overflow"
    AUTH = "auth"
    NETWORK = "network"
    INVALID_REQUEST = "invalid_request"
    CONTENT_FILTER = "content_filter"
    PROTOCOL = "protocol"
    LIMIT = "limit"
    BUDGET = "budget"

    @property
    def retryable(self) -> bool:
        """True where the same request may succeed if sent again later."""
        return self in _RETRYABLE


_RETRYABLE: Final = frozenset({ErrorKind.THROTTLED, ErrorKind.NETWORK})


class Usage(msgspec.Struct, kw_only=True, gc=False):
    """Token counts in one convention for every provider.

    - ``input``: prompt tokens that were neither read from nor written to a cache.
    - ``cache_read``: prompt tokens served from the provider's prompt cache.
    - ``cache_write``: prompt tokens written to the cache on this call.
    - ``output``: generated tokens, reasoning included.
    - ``reasoning``: the part of ``output`` spent on hidden or visible reasoning
      (a subset, never added again).
    - ``total``: ``input + cache_read + cache_write + output``; computed when left 0.

    Providers differ (OpenAI counts cached tokens inside ``prompt_tokens``,
    Anthropic reports them separately); each provider module converts into
    this convention so cost and context accounting are the same everywhere.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    total: int = 0

    def __post_init__(self) -> None:
        if not self.total:
            self.total = self.input + self.cache_read + self.cache_write + self.output


class Cost(msgspec.Struct, kw_only=True, gc=False):
    """US dollars for one call, split like `Usage` so callers can see what cache saved."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0

    def __post_init__(self) -> None:
        if not self.total:
            self.total = self.input + self.output + self.cache_read + self.cache_write


class Start(msgspec.Struct, tag="start", frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """First event of every stream; names who answers, for logs and replay.

    Fields left at their defaults are not encoded (a decoder fills them in again), so
    the fields added over time cost nothing where a provider does not send them.
    """

    api: str = ""
    provider: str = ""
    model: str = ""
    response_id: str | None = None
    #: the model the provider says answered (a dated snapshot of ``model``, or what a
    #: router picked), from the response itself; None where the wire does not say.
    #: ``model`` stays the id that was asked for (replay rules match on it).
    response_model: str | None = None
    #: the provider's id for this HTTP request, from its response headers
    #: (``x-request-id``, Anthropic's ``request-id``, Bedrock's ``x-amzn-requestid``):
    #: what its support asks for; None where the provider sent none
    request_id: str | None = None
    #: the provider's rate-limit state after this request, from its response headers,
    #: in one shape for every provider (see `RateLimits`); None where it sent none
    rate_limits: RateLimits | None = None


class TextStart(msgspec.Struct, tag="text_start", frozen=True, gc=False):
    """Opens text block ``index`` of the answer; its `TextDelta`s and `TextEnd` follow."""

    index: int


class TextDelta(msgspec.Struct, tag="text_delta", frozen=True, gc=False):
    """The next piece of text block ``index``; the block's text is its deltas joined."""

    index: int
    delta: str


class TextEnd(msgspec.Struct, tag="text_end", frozen=True, omit_defaults=True, gc=False):
    """Closes a text block; ``signature`` carries an opaque provider token (Gemini's
    ``thoughtSignature`` on a text part) that must be sent back on replay.

    ``citations`` are the sources the provider gave for this block (see
    `core/_citations.py`); they come with the end so the grammar stays
    one delta kind per block and any chunking yields the same list.
    """

    index: int
    signature: str | None = None
    citations: tuple[Citation, ...] = ()


class ThinkingStart(msgspec.Struct, tag="thinking_start", frozen=True, gc=False):
    """Opens thinking (reasoning) block ``index``; its `ThinkingDelta`s and
    `ThinkingEnd` follow."""

    index: int


class ThinkingDelta(msgspec.Struct, tag="thinking_delta", frozen=True, gc=False):
    """The next piece of thinking block ``index``, as the provider shows it (a summary
    where the provider gives only that)."""

    index: int
    delta: str


class ThinkingEnd(msgspec.Struct, tag="thinking_end", frozen=True, gc=False):
    """Closes a thinking block.

    ``signature`` is what the provider needs to accept this reasoning again on
    the next turn (Anthropic's signature, OpenAI's encrypted reasoning, Bedrock's
    signature). ``redacted`` marks reasoning the provider hid: the block has no
    readable text and ``signature`` holds the encrypted payload.
    """

    index: int
    signature: str | None = None
    redacted: bool = False


class ToolCallStart(msgspec.Struct, tag="toolcall_start", frozen=True, gc=False):
    """Opens tool call ``index``: the provider's call ``id`` (send it back with the
    result) and the tool's ``name``; `ToolCallDelta`s carry its arguments."""

    index: int
    id: str
    name: str


class ToolCallDelta(msgspec.Struct, tag="toolcall_delta", frozen=True, gc=False):
    """A fragment of the tool call's JSON arguments; fragments concatenate."""

    index: int
    delta: str


class ToolCallEnd(msgspec.Struct, tag="toolcall_end", frozen=True, omit_defaults=True, gc=False):
    """Closes a tool call. A call an error cut off never gets one, so what is here is
    about complete calls only (the shells' `ToolCallChecks` fills it in):

    - ``name``: the tool name as repaired (surrounding whitespace removed, or a
      replacement from ``Options.repair_tool_call``); None when the start's name stands;
    - ``arguments``: the arguments JSON as repaired, replacing the streamed text (two
      objects concatenated, text after the object...); None when the streamed text stands;
    - ``repairs``: each repair made, in words;
    - ``errors``: where the arguments still break the tool's JSON Schema (or are not
      one JSON object, or the tool is not declared): answer the model with these
      rather than running the call.
    """

    index: int
    signature: str | None = None
    name: str | None = None
    arguments: str | None = None
    repairs: tuple[str, ...] = ()
    errors: tuple[SchemaMismatch, ...] = ()


class OpaqueBlock(msgspec.Struct, tag="opaque", frozen=True, gc=False):
    """A whole provider-specific block streamfn does not interpret.

    Server-side tool use and results (Anthropic web search, code execution,
    MCP) are carried rather than dropped, so a caller can show them and a
    replay to the same provider sends them back verbatim. ``json`` is the
    block exactly as the provider described it.
    """

    index: int
    provider: str
    block_type: str
    json: str


class Done(msgspec.Struct, tag="done", frozen=True, kw_only=True, gc=False):
    """The stream ended normally.

    ``paused`` is True when the provider paused the turn rather than ending it
    (Anthropic's ``pause_turn`` in a long server-tool turn): sending the
    conversation back with this answer as its last assistant turn continues it.
    The shells do that themselves (``Options.pause_turn_continuations``), so a
    caller sees it only when continuing was turned off or its bound reached.
    Left unset otherwise, and then never encoded: a stream without a pause
    encodes as it always did. The folded message of a paused turn says
    `StopReason.LENGTH` (`finished_as`): the answer is not over.

    ``recovered`` counts the cuts the stream survived (``Options.recover``, see
    `recovery_mode` and `Splice`), and ``usage`` and ``cost`` then sum every request
    the answer took; unset (never encoded) for an answer that came in one piece.
    """

    stop_reason: StopReason = StopReason.STOP
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: Cost = msgspec.field(default_factory=Cost)
    paused: bool | msgspec.UnsetType = msgspec.UNSET
    recovered: int | msgspec.UnsetType = msgspec.UNSET


def finished_as(done: Done) -> StopReason:
    """``done``'s stop reason as a reader who does not continue paused turns must take
    it: a paused turn (``done.paused``) is incomplete, `StopReason.LENGTH`, never a
    finished answer. One rule for the fold (what ``complete()`` returns) and for every
    dialect the server speaks that has no word for a pause."""
    if done.paused is not True or done.stop_reason in CUT_STOP_REASONS:
        return done.stop_reason
    return StopReason.LENGTH


class Error(msgspec.Struct, tag="error", frozen=True, kw_only=True, gc=False):
    """The stream ended abnormally; ``kind`` says what the caller can do about it.

    ``stop_reason`` is ``error`` or, when the caller cancelled, ``aborted``.
    ``status`` is the HTTP status when one caused this, ``retry_after`` the
    seconds the provider asked us to wait, ``attempts`` how many requests the
    shell made before giving up.
    """

    message: str
    kind: ErrorKind | None = None
    stop_reason: StopReason = StopReason.ERROR
    usage: Usage | None = None
    status: int | None = None
    retry_after: float | None = None
    attempts: int | None = None

    # One constructor per kind keeps adapters to one line and the kinds consistent.

    @classmethod
    def throttled(
        cls,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = 429,
        usage: Usage | None = None,
    ) -> Error:
        return cls(
            message=message,
            kind=ErrorKind.THROTTLED,
            retry_after=retry_after,
            status=status,
            usage=usage,
        )

    @classmethod
    def context_overflow(
        cls, message: str, *, status: int | None = None, usage: Usage | None = None
    ) -> Error:
        return cls(message=message, kind=ErrorKind.CONTEXT_OVERFLOW, status=status, usage=usage)

    @classmethod
    def auth(cls, message: str, *, status: int | None = None) -> Error:
        return cls(message=message, kind=ErrorKind.AUTH, status=status)

    @classmethod
    def network(
        cls,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        usage: Usage | None = None,
    ) -> Error:
        return cls(
            message=message,
            kind=ErrorKind.NETWORK,
            status=status,
            retry_after=retry_after,
            usage=usage,
        )

    @classmethod
    def invalid_request(cls, message: str, *, status: int | None = None) -> Error:
        return cls(message=message, kind=ErrorKind.INVALID_REQUEST, status=status)

    @classmethod
    def content_filter(
        cls, message: str, *, status: int | None = None, usage: Usage | None = None
    ) -> Error:
        return cls(message=message, kind=ErrorKind.CONTENT_FILTER, status=status, usage=usage)

    @classmethod
    def protocol(cls, message: str, *, usage: Usage | None = None) -> Error:
        return cls(message=message, kind=ErrorKind.PROTOCOL, usage=usage)

    @classmethod
    def limit(cls, message: str, *, usage: Usage | None = None) -> Error:
        return cls(message=message, kind=ErrorKind.LIMIT, usage=usage)

    @classmethod
    def budget(cls, message: str, *, usage: Usage | None = None) -> Error:
        return cls(message=message, kind=ErrorKind.BUDGET, usage=usage)

    @classmethod
    def aborted(
        cls, message: str = "aborted by the caller", *, usage: Usage | None = None
    ) -> Error:
        return cls(message=message, stop_reason=StopReason.ABORTED, usage=usage)

    @property
    def retryable(self) -> bool:
        return self.kind is not None and self.kind.retryable


Event: TypeAlias = (
    Start
    | TextStart
    | TextDelta
    | TextEnd
    | ThinkingStart
    | ThinkingDelta
    | ThinkingEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | OpaqueBlock
    | Done
    | Error
)
"""Every event a stream yields: `Start` first, then blocks (each opened, filled and
closed by its index), then exactly one terminal event, `Done` or `Error`."""

TERMINAL: Final = (Done, Error)

# Read once: looking the tag up in ``__struct_config__`` per event costs more than a dict.
_TAGS: Final[dict[type, str]] = {t: str(t.__struct_config__.tag) for t in typing.get_args(Event)}
#: every event's wire tag (``start``, ``text_delta`` ... ``error``)
EVENT_TYPES: Final[frozenset[str]] = frozenset(_TAGS.values())

_json_encoder: Final = msgspec.json.Encoder()
_json_decoder: Final = msgspec.json.Decoder(Event)
_msgpack_encoder: Final = msgspec.msgpack.Encoder()
_msgpack_decoder: Final = msgspec.msgpack.Decoder(Event)


def encode_event_json(event: Event) -> bytes:
    """JSON with the ``type`` tag; the proxy wire format's ``data:`` payload."""
    return _json_encoder.encode(event)


def decode_event_json(data: bytes | str) -> Event:
    """Inverse of `encode_event_json`; raises `msgspec.ValidationError` on bad input."""
    return cast(Event, _json_decoder.decode(data))


def encode_event(event: Event) -> bytes:
    """Compact msgpack, for queues and storage."""
    return _msgpack_encoder.encode(event)


def decode_event(data: bytes) -> Event:
    return cast(Event, _msgpack_decoder.decode(data))


def event_type(event: Event) -> str:
    """The wire tag of an event (``text_delta``, ``done`` ...), as the proxy's ``event:`` line."""
    try:
        return _TAGS[type(event)]
    except KeyError:
        # Not one of the union's classes (a subclass, a stray object): ask the class,
        # which raises AttributeError for anything that is no msgspec struct.
        tag: Any = type(event).__struct_config__.tag
        return str(tag)
