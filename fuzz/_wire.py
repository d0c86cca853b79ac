"""`transcripts`: the bytes a provider would send for a drawn event stream.

For each wire format its room says what the format can carry (a `StreamShape`'s
knobs) and which encoder writes it (its `WireFormat`'s transcript fields); this
module draws the streams and checks the round trip, naming no format. A `Transcript` pairs the events
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
from typing import Any, Final

import msgspec
from hypothesis import strategies as st

from streamfn.core import (
    Cost,
    Done,
    Error,
    Event,
    Start,
    TextEnd,
    ThinkingEnd,
    ToolCallEnd,
    Usage,
)
from streamfn.core._wire_formats import API_MODULES, EventEncoder, wire_format

from ._streams import StreamShape, event_streams

__all__ = [
    "WIRE_FORMATS",
    "Transcript",
    "WireFormat",
    "encode_body",
    "same_stream",
    "transcripts",
]


@dataclass(frozen=True)
class WireFormat:
    """One wire format as a transcript source: what it carries and how it is written."""

    api: str
    content_type: str
    shape: StreamShape
    #: the encoder for a stream, given its Start (whose response id it writes)
    encoder: Callable[[Start], EventEncoder]
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


def _from_room(api: str) -> WireFormat | None:
    """``api`` as a transcript source, as its room says (None: it writes none)."""
    room = wire_format(api)
    encoder = room.transcript_encoder
    if encoder is None:
        return None
    return WireFormat(
        api,
        room.content_type,
        StreamShape(**room.transcript_shape),
        lambda start: encoder(start.response_id or ""),
        block_ends=room.block_ends,
        no_usage_on=room.no_usage_on,
    )


#: every wire format that writes transcripts, as its room describes it
WIRE_FORMATS: Final[dict[str, WireFormat]] = {
    api: wire for api in API_MODULES if (wire := _from_room(api)) is not None
}


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
