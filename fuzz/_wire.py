"""`transcripts`: the bytes a provider would send for a drawn event stream.

For each wire format this module knows what the format can carry (a
`StreamShape`) and which encoder writes it. A `Transcript` pairs the events
with the body, so ``replay(t.api, t.body, provider=t.provider)`` must give
the same stream back: a round-trip property per format that checks our
decoders against our encoders (and the other way round).

"The same stream" is `same_stream`: the events equal after the fields a
format cannot choose are set aside (Start's api/provider/model, which the
replaying call supplies; an error's message, which the decoder prefixes
with the provider's name and may classify again; a tool call's ``errors``, the
verdict the shells' tool-call checks add at its end, which no wire carries: the
transcripts' tools are never declared, so a shell flags every call); and, where a format says
when a block ends only implicitly (OpenAI chat chunks never close a tool
call), the folded messages equal instead of the event order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import msgspec
from hypothesis import strategies as st

from streamfn.core import (
    Cost,
    Done,
    Error,
    ErrorKind,
    Event,
    Start,
    TextEnd,
    ThinkingEnd,
    ToolCallEnd,
    Usage,
)
from streamfn.core.dialects.agui import AGUIEncoder
from streamfn.core.dialects.anthropic import AnthropicEncoder
from streamfn.core.dialects.bedrock import BedrockEncoder
from streamfn.core.dialects.gemini import GeminiEncoder
from streamfn.core.dialects.ollama import OllamaEncoder
from streamfn.core.dialects.openai_chat import OpenAIChatEncoder
from streamfn.core.dialects.openai_responses import ResponsesEncoder
from streamfn.core.dialects.proxy import encode_proxy_event
from streamfn.core.dialects.ui_message_stream import UIMessageStreamEncoder

from ._streams import StreamShape, event_streams

__all__ = [
    "WIRE_FORMATS",
    "Transcript",
    "WireFormat",
    "encode_body",
    "same_stream",
    "transcripts",
]


class _Encoder(Protocol):
    def encode(self, event: Event) -> bytes: ...


@dataclass(frozen=True)
class WireFormat:
    """One wire format as a transcript source: what it carries and how it is written."""

    api: str
    content_type: str
    shape: StreamShape
    #: the encoder for a stream, given its Start (whose response id it writes)
    encoder: Callable[[Start], _Encoder]
    #: the format says where each block ends (True), or leaves blocks open until the
    #: stream ends (False: OpenAI chat chunks never close a tool call)
    block_ends: bool = True
    #: stop reasons whose end carries no usage in this format (AG-UI ends a cut answer
    #: with ``RUN_ERROR``, which has no usage field): such a stream's usage is zero
    no_usage_on: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Transcript:
    """A stream and the body a provider of ``api`` would send for it."""

    api: str
    provider: str | None
    events: list[Event]
    body: bytes
    content_type: str
    status: int = 200

    @property
    def headers(self) -> list[tuple[str, str]]:
        return [("content-type", self.content_type)]


def _responses_signature(kind: str, text: str, token: str) -> str:
    """The reasoning JSON the openai-responses decoder makes from an encrypted item."""
    summary = [{"type": "summary_text", "text": text}] if text else []
    return msgspec.json.encode(
        {"type": "reasoning", "encrypted_content": token, "summary": summary}
    ).decode()


# The kinds an in-stream error of every format reads back as (the others no
# format can express: a decoder classifies the wording and the provider's code).
_STREAMED: Final = StreamShape(
    error_kinds=(
        ErrorKind.THROTTLED,
        ErrorKind.CONTEXT_OVERFLOW,
        ErrorKind.AUTH,
        ErrorKind.NETWORK,
    )
)
_UNSIGNED: Final = _STREAMED.with_(
    thinking_signatures=False, text_signatures=False, tool_signatures=False, redacted_thinking=False
)

WIRE_FORMATS: Final[dict[str, WireFormat]] = {
    "proxy": WireFormat(
        "proxy",
        "text/event-stream",
        StreamShape(opaque="anthropic"),
        lambda _: _Framed(encode_proxy_event),
    ),
    "openai-chat": WireFormat(
        "openai-chat",
        "text/event-stream",
        _UNSIGNED.with_(
            response_ids=True,
            implicit_block_ends=True,
            adjacent_same_kind=False,
            usage_fields=frozenset({"input", "output", "cache_read", "reasoning"}),
        ),
        lambda s: OpenAIChatEncoder(
            response_id=s.response_id or "", model="m", created=0, include_usage=True
        ),
        block_ends=False,
    ),
    "openai-responses": WireFormat(
        "openai-responses",
        "text/event-stream",
        _UNSIGNED.with_(
            response_ids=True,
            thinking_signatures=True,
            signer=_responses_signature,
            opaque="openai-responses",
            tool_use_iff_calls=True,
            usage_fields=frozenset({"input", "output", "cache_read", "cache_write", "reasoning"}),
        ),
        lambda s: ResponsesEncoder(response_id=s.response_id or "", model="m"),
    ),
    "anthropic": WireFormat(
        "anthropic",
        "text/event-stream",
        _STREAMED.with_(
            response_ids=True,
            text_signatures=False,
            tool_signatures=False,
            parallel_tool_calls=False,
            opaque="anthropic",
            usage_fields=frozenset({"input", "output", "cache_read", "cache_write"}),
        ),
        lambda s: AnthropicEncoder(message_id=s.response_id or "", model="m"),
    ),
    "gemini": WireFormat(
        "gemini",
        "text/event-stream",
        _STREAMED.with_(
            response_ids=True,
            implicit_block_ends=True,
            redacted_thinking=False,
            adjacent_same_kind=False,
            whole_tool_arguments=True,
            parallel_tool_calls=False,
            tool_use_iff_calls=True,
            usage_fields=frozenset({"input", "output", "cache_read", "reasoning"}),
        ),
        lambda s: GeminiEncoder(response_id=s.response_id or "", model="m"),
    ),
    "ollama": WireFormat(
        "ollama",
        "application/x-ndjson",
        _UNSIGNED.with_(
            response_ids=False,
            implicit_block_ends=True,
            adjacent_same_kind=False,
            whole_tool_arguments=True,
            parallel_tool_calls=False,
            tool_use_iff_calls=True,
            usage_fields=frozenset({"input", "output"}),
        ),
        lambda _: OllamaEncoder(model="m"),
    ),
    "bedrock": WireFormat(
        "bedrock",
        "application/vnd.amazon.eventstream",
        _STREAMED.with_(
            response_ids=False,
            text_signatures=False,
            tool_signatures=False,
            parallel_tool_calls=False,
            usage_fields=frozenset({"input", "output", "cache_read", "cache_write"}),
        ),
        lambda _: BedrockEncoder(),
    ),
    # the front-end protocols (what `streamfn serve` answers on /v1/ui/chat and /v1/agui)
    "ui-message-stream": WireFormat(
        "ui-message-stream",
        "text/event-stream",
        _UNSIGNED.with_(response_ids=True, usage_fields=frozenset()),
        lambda s: UIMessageStreamEncoder(message_id=s.response_id or ""),
    ),
    "agui": WireFormat(
        "agui",
        "text/event-stream",
        StreamShape(
            response_ids=True,
            text_signatures=False,
            tool_signatures=False,
            redacted_thinking=False,
            whole_tool_arguments=True,  # sent at the call's end, as the checks left them
            parallel_tool_calls=False,
        ),
        lambda s: AGUIEncoder(thread_id="thread", run_id=s.response_id or "", message_id="msg"),
        no_usage_on=frozenset({"length"}),
    ),
}


class _Framed:
    def __init__(self, frame: Callable[[Event], bytes]) -> None:
        self.encode = frame


def encode_body(api: str, events: list[Event]) -> bytes:
    """The whole body a provider of ``api`` sends for ``events``."""
    start = events[0]
    assert isinstance(start, Start), "a stream begins with Start"
    encoder = WIRE_FORMATS[api].encoder(start)
    return b"".join(encoder.encode(e) for e in events)


@st.composite
def _transcript(
    draw: st.DrawFn, api: str, provider: str | None, knobs: dict[str, Any]
) -> Transcript:
    wire = WIRE_FORMATS[api]
    events = draw(event_streams(wire.shape, **knobs))
    last = events[-1]
    if isinstance(last, Done) and last.stop_reason in wire.no_usage_on:
        events = [*events[:-1], msgspec.structs.replace(last, usage=Usage(), cost=Cost())]
    return Transcript(api, provider, events, encode_body(api, events), wire.content_type)


def transcripts(
    api: str | None = None, *, provider: str | None = None, **knobs: Any
) -> st.SearchStrategy[Transcript]:
    """Transcripts of ``api`` (any known wire format when None). ``knobs`` narrow the
    format's `StreamShape` further (``transcripts("anthropic", tool_calls=False)``)."""
    if api is None:
        return st.sampled_from(sorted(WIRE_FORMATS)).flatmap(
            lambda a: _transcript(a, provider, knobs)
        )
    if api not in WIRE_FORMATS:
        raise ValueError(f"no transcripts for {api!r}; known: {', '.join(sorted(WIRE_FORMATS))}")
    return _transcript(api, provider, knobs)


def _comparable(event: Event) -> Event:
    if isinstance(event, Start):
        return Start(response_id=event.response_id)
    if isinstance(event, Error):
        return Error(message="", kind=event.kind, stop_reason=event.stop_reason)
    if isinstance(event, Done):
        return Done(stop_reason=event.stop_reason, usage=event.usage)
    if isinstance(event, ToolCallEnd) and event.errors:
        return msgspec.structs.replace(event, errors=())
    return event


def same_stream(api: str, got: list[Event], expected: list[Event]) -> bool:
    """Whether a replayed stream is the one a transcript was written from (see above)."""
    if not WIRE_FORMATS[api].block_ends:
        got, expected = _without_ends(got), _without_ends(expected)
    return [_comparable(e) for e in got] == [_comparable(e) for e in expected]


def _without_ends(events: list[Event]) -> list[Event]:
    return [e for e in events if not isinstance(e, (TextEnd, ThinkingEnd, ToolCallEnd))]
