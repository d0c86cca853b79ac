"""The native proxy: request body, encoder/decoder round trip, garbage from a proxy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chunking import bytewise, split_at
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import (
    Context,
    Cost,
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    OpaqueBlock,
    Options,
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
    replay,
)
from streamfn.core._accumulate import check_protocol
from streamfn.core.dialects.proxy import build_request, encode_proxy_event, encode_proxy_events
from streamfn.core.wire import encode_sse

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "proxy"
SSE = [("content-type", "text/event-stream")]
API = "proxy"

STREAM: list[Event] = [
    Start(api="anthropic", provider="anthropic", model="claude", response_id="msg_1"),
    ThinkingStart(0),
    ThinkingDelta(0, "hmm "),
    ThinkingDelta(0, "ünïcode\nline"),
    ThinkingEnd(0, "sig", False),
    OpaqueBlock(1, "anthropic", "server_tool_use", '{"id":"s1"}'),
    TextStart(2),
    ToolCallStart(3, "call_1", "f"),
    TextDelta(2, "Hello"),
    ToolCallDelta(3, '{"a":'),
    ToolCallDelta(3, "1}"),
    TextEnd(2),
    ToolCallEnd(3),
    Done(
        stop_reason=StopReason.TOOL_USE,
        usage=Usage(input=5, output=7, cache_read=2),
        cost=Cost(input=0.1, output=0.2),
    ),
]


def run(data: bytes | list[bytes], **kw: Any) -> list[Event]:
    events = replay(API, data, headers=SSE, **kw)
    check_protocol(events)
    return events


def test_request_body_is_our_encoding_without_secrets() -> None:
    m = Model(id="anthropic:claude-x", provider="proxy", api=API, base_url="http://proxy:8080/")
    options = Options(api_key="sekrit-token", temperature=0.5, headers={"x-team": "a"})
    req = build_request(m, Context.of("hi", system_prompt="sys"), options)
    assert req.url == "http://proxy:8080/v1/stream"
    assert ("authorization", "Bearer sekrit-token") in req.headers and (
        "x-team",
        "a",
    ) in req.headers
    body = json.loads(req.body)
    assert body["model"] == "anthropic:claude-x"
    assert msgspec.convert(body["context"], Context) == Context.of("hi", system_prompt="sys")
    forwarded = msgspec.convert(body["options"], Options)
    assert forwarded.temperature == 0.5
    assert forwarded.api_key is None and forwarded.headers is None
    assert b"sekrit" not in req.body


def test_encoder_frames() -> None:
    assert encode_proxy_event(TextDelta(0, "a\nb")) == (
        b'event: text_delta\ndata: {"type":"text_delta","index":0,"delta":"a\\nb"}\n\n'
    )


def test_round_trip_keeps_every_event_after_start() -> None:
    wire = encode_proxy_events(STREAM)
    events = run(wire)
    assert events[1:] == STREAM[1:]  # Done keeps the proxy's usage and cost
    assert run(bytewise(wire)) == events
    # the upstream response id survives into our Start
    assert events[0] == Start(api="proxy", provider="proxy", model="replay", response_id="msg_1")


def test_proxy_error_passes_through_with_its_kind() -> None:
    err = Error.throttled("upstream 429", retry_after=3.0)
    events = run(encode_proxy_events([Start(), TextStart(0), TextDelta(0, "x"), err]))
    assert events[-1] == err


def test_keep_alives_and_unknown_event_types_are_ignored() -> None:
    wire = (
        encode_sse(comment="keep-alive")
        + encode_sse("{}", event="future_event")
        + encode_proxy_events([Start(), Done()])
    )
    assert isinstance(run(wire)[-1], Done)


@pytest.mark.parametrize(
    ("events", "why"),
    [
        ([TextStart(0), Done()], "no start"),
        ([Start(), Start(), Done()], "second start"),
        ([Start(), TextDelta(0, "x"), Done()], "delta before start of block"),
        ([Start(), TextStart(1), Done()], "index out of order"),
        ([Start(), TextStart(0), ThinkingDelta(0, "x")], "wrong kind"),
        ([Start(), TextStart(0), Done()], "done with an open block"),
        ([Start(), TextStart(0), TextEnd(0), TextEnd(0), Done()], "closed twice"),
    ],
)
def test_protocol_breaking_proxy_ends_in_protocol_error(events: list[Event], why: str) -> None:
    final = run(encode_proxy_events(events))[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.PROTOCOL, why


def test_garbage_payloads_are_protocol_errors() -> None:
    for wire in (
        b"event: text_delta\ndata: not json\n\n",
        b'event: text_delta\ndata: {"type":"done"}\n\n',  # event name and payload disagree
        b'event: start\ndata: {"type":"start"}\n\nevent: text_start\ndata: {"type":"text_start","index":"0"}\n\n',
    ):
        final = run(wire)[-1]
        assert isinstance(final, Error) and final.kind == ErrorKind.PROTOCOL


def test_transcript_truncated_is_network_error() -> None:
    wire = (TRANSCRIPTS / "tool-call.sse").read_bytes()
    assert isinstance(run(wire)[-1], Done)
    final = run(wire[: wire.index(b"event: done")])[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.NETWORK


def test_http_error_from_the_proxy() -> None:
    events = replay(
        API,
        b'{"error":{"type":"auth","message":"invalid or missing API key for this streamfn server"}}',
        status=401,
        headers=[("content-type", "application/json")],
    )
    final = events[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.AUTH


# -- properties -------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    out: list[Event] = [Start(response_id=draw(st.none() | _text.filter(lambda s: "\n" not in s)))]
    n = draw(st.integers(0, 4))
    for i in range(n):
        kind = draw(st.sampled_from(["text", "thinking", "tool", "opaque"]))
        if kind == "opaque":
            out.append(OpaqueBlock(i, "p", "t", draw(_text)))
            continue
        if kind == "text":
            out.append(TextStart(i))
            out += [TextDelta(i, d) for d in draw(st.lists(_text, max_size=3))]
            out.append(TextEnd(i, draw(st.none() | _text)))
        elif kind == "thinking":
            out.append(ThinkingStart(i))
            out += [ThinkingDelta(i, d) for d in draw(st.lists(_text, max_size=3))]
            out.append(ThinkingEnd(i, draw(st.none() | _text), draw(st.booleans())))
        else:
            out.append(ToolCallStart(i, draw(_text), draw(_text)))
            out += [ToolCallDelta(i, d) for d in draw(st.lists(_text.filter(bool), max_size=3))]
            out.append(ToolCallEnd(i))
    out.append(Done(usage=Usage(input=draw(st.integers(0, 99)))))
    return out


@given(streams(), st.data())
def test_property_encode_decode_is_identity_under_any_chunking(
    stream: list[Event], data: st.DataObject
) -> None:
    wire = encode_proxy_events(stream)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    chunks = split_at(wire, cuts)
    events = run(chunks)
    # empty deltas are not events (the emitter drops them); everything else survives
    assert events[1:] == [
        e for e in stream[1:] if not (isinstance(e, (TextDelta, ThinkingDelta)) and not e.delta)
    ]


@given(streams(), st.data())
def test_property_mutations_end_in_a_typed_terminal(
    stream: list[Event], data: st.DataObject
) -> None:
    wire = encode_proxy_events(stream)
    i = data.draw(st.integers(0, len(wire) - 1))
    if data.draw(st.booleans()):
        wire = wire[:i]
    else:
        wire = wire[:i] + bytes([wire[i] ^ data.draw(st.integers(1, 255))]) + wire[i + 1 :]
    events = run(wire)
    assert isinstance(events[-1], (Done, Error))
