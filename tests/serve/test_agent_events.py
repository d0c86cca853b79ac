"""The agent-server SSE contract: ULIDs, the encoder, its event orders, and the decoder."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import ulid
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import (
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
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    accumulate,
    check_protocol,
    replay,
)
from streamfn.core._messages import TextContent
from streamfn.core.dialects.agent_events._encode import (
    AGENT_ORDER,
    AgentEventsEncoder,
    new_ulid,
    problem_details,
)
from streamfn.core.wire import ServerSentEvent, SSEDecoder

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts"
API_OF_FOLDER = {"openai-chat": "openai-chat", "openai-responses": "openai-responses"}
SSE = [("content-type", "text/event-stream")]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def encode(
    events: list[Event], *, hold: bool = False, clock: Callable[[], float] | None = None
) -> bytes:
    encoder = AgentEventsEncoder(
        session_id="S", message_id="M", clock=clock or FakeClock(), hold_text=hold
    )
    return b"".join(encoder.encode(e) for e in events)


def frames(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    decoder = SSEDecoder()
    out = decoder.feed(body) + decoder.end()
    return [(e.event, json.loads(e.data)) for e in out if isinstance(e, ServerSentEvent)]


def order(body: bytes) -> str:
    return " ".join(name for name, _ in frames(body))


@given(st.integers(0, (1 << 48) - 1), st.binary(min_size=10, max_size=10))
def test_ulids_match_the_python_ulid_library(timestamp_ms: int, randomness: bytes) -> None:
    ours = new_ulid(timestamp_ms, randomness)
    theirs = ulid.ULID.from_bytes(timestamp_ms.to_bytes(6, "big") + randomness)
    assert ours == str(theirs) and len(ours) == 26


def test_ulids_refuse_what_is_not_one() -> None:
    with pytest.raises(ValueError, match="10 random bytes"):
        new_ulid(0, b"short")
    with pytest.raises(ValueError, match="48 bits"):
        new_ulid(1 << 48, bytes(10))


def test_a_text_answer_is_the_documented_no_tools_sequence() -> None:
    clock = FakeClock()
    encoder = AgentEventsEncoder(session_id="S1", message_id="M1", clock=clock)
    events: list[Event] = [
        Start(),
        TextStart(0),
        TextDelta(0, "Our return policy"),
        TextDelta(0, " is simple."),
        TextEnd(0),
        Done(usage=Usage(input=150, output=75)),
    ]
    body = b""
    for event in events:
        clock.now += 0.25
        body += encoder.encode(event)
    assert frames(body) == [
        ("stream_start", {"session_id": "S1", "message_id": "M1"}),
        ("message_delta", {"delta": "Our return policy", "message_id": "M1"}),
        ("message_delta", {"delta": " is simple.", "message_id": "M1"}),
        (
            "stream_end",
            {
                "message_id": "M1",
                "tokens_used": {
                    "prompt_tokens": 150,
                    "completion_tokens": 75,
                    "total_tokens": 225,
                    "prompt_tokens_details": {"cached_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0},
                },
                "execution_time_ms": 1500,  # six events, 0.25 s apart
                "stop_reason": "stop",
            },
        ),
    ]
    assert body.startswith(b'event: stream_start\ndata: {"session_id":"S1"')
    assert encoder.keep_alive() == b": keepalive\n"


def test_tool_calls_come_first_with_their_status_and_held_text_after() -> None:
    events: list[Event] = [
        Start(),
        TextStart(0),
        TextDelta(0, "Let me search."),
        TextEnd(0),
        ToolCallStart(1, "tc_01", "search_knowledge_base"),
        ToolCallDelta(1, '{"query": "return'),
        ToolCallDelta(1, '"}'),
        ToolCallEnd(1),
        ToolCallStart(2, "tc_02", "broken"),
        ToolCallDelta(2, '{"a": '),
        ToolCallEnd(2),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    got = frames(encode(events, hold=True))
    assert [name for name, _ in got] == [
        "stream_start",
        "tool_call_start",
        "tool_call_args",
        "tool_call_args",
        "tool_call_end",
        "tool_call_start",
        "tool_call_args",
        "tool_call_end",
        "message_delta",
        "stream_end",
    ]
    assert got[1][1] == {
        "tool_call_id": "tc_01",
        "name": "search_knowledge_base",
        "message_id": "M",
    }
    assert got[2][1] == {"tool_call_id": "tc_01", "args_delta": '{"query": "return'}
    assert got[4][1] == {"tool_call_id": "tc_01", "status": "success"}
    assert got[7][1] == {"tool_call_id": "tc_02", "status": "error"}  # arguments do not parse
    assert got[8][1]["delta"] == "Let me search."


@pytest.mark.parametrize(
    ("error", "status", "slug"),
    [
        (Error.throttled("slow down", retry_after=2.0), 429, "throttled"),
        (Error.context_overflow("too long"), 400, "context-overflow"),
        (Error.invalid_request("no such model", status=404), 404, "invalid-request"),
        (Error.network("LLM provider timeout"), 502, "network"),
        (Error.aborted(), 499, "aborted"),
        (Error(message="?"), 500, "error"),
    ],
)
def test_errors_are_problem_details_with_an_http_status(
    error: Error, status: int, slug: str
) -> None:
    problem = problem_details(error)
    assert problem["type"] == f"https://streamfn.dev/errors/{slug}"
    assert problem["status"] == status and problem["detail"] == error.message
    assert isinstance(problem["title"], str) and problem["title"]
    assert ("retry_after" in problem) == (error.retry_after is not None)


def test_an_error_mid_tool_call_ends_the_call_with_status_error() -> None:
    events: list[Event] = [
        Start(),
        ToolCallStart(0, "tc", "f"),
        ToolCallDelta(0, '{"x"'),
        Error.network("dropped"),
    ]
    got = frames(encode(events))
    assert [n for n, _ in got] == [
        "stream_start",
        "tool_call_start",
        "tool_call_args",
        "tool_call_end",
        "error",
    ]
    assert got[3][1]["status"] == "error" and got[4][1]["status"] == 502


# -- every stream we can produce encodes to a documented order ------------------------


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    events: list[Event] = [Start()]
    kinds = draw(
        st.lists(st.sampled_from(["text", "thinking", "tool", "bad-tool", "opaque"]), max_size=6)
    )
    for i, kind in enumerate(kinds):
        pieces = draw(st.lists(st.text(max_size=4), max_size=3))
        if kind == "text":
            events += [TextStart(i), *(TextDelta(i, p) for p in pieces if p), TextEnd(i)]
        elif kind == "thinking":
            events += [
                ThinkingStart(i),
                *(ThinkingDelta(i, p) for p in pieces if p),
                ThinkingEnd(i),
            ]
        elif kind == "opaque":
            events.append(OpaqueBlock(i, "anthropic", "server_tool_use", "{}"))
        else:
            args = '{"q": 1}' if kind == "tool" else '{"q": '
            events += [ToolCallStart(i, f"c{i}", "f"), ToolCallDelta(i, args), ToolCallEnd(i)]
    ending = draw(st.sampled_from(["done", "error", "error-mid-text", "error-mid-tool"]))
    n = len(kinds)
    if ending == "done":
        events.append(Done(stop_reason=draw(st.sampled_from(list(StopReason)[:3]))))
    else:
        if ending == "error-mid-text":
            events += [TextStart(n), TextDelta(n, "cut")]
        elif ending == "error-mid-tool":
            events += [ToolCallStart(n, f"c{n}", "g"), ToolCallDelta(n, "{")]
        events.append(Error.network("gone"))
    return events


def _has_tool_calls(events: list[Event]) -> bool:
    return any(isinstance(e, ToolCallStart) for e in events)


@given(streams())
def test_every_generated_stream_encodes_to_a_documented_order(events: list[Event]) -> None:
    check_protocol(events)
    assert AGENT_ORDER.fullmatch(order(encode(events, hold=True)))
    if not _has_tool_calls(events):
        assert AGENT_ORDER.fullmatch(order(encode(events, hold=False)))


CONTENT_TYPES = {"ollama": "application/x-ndjson", "bedrock": "application/vnd.amazon.eventstream"}


def _recordings() -> list[tuple[str, Path]]:
    return [(p.parent.name, p) for p in sorted(TRANSCRIPTS.glob("*/*"))]


@pytest.mark.parametrize(("api", "path"), _recordings(), ids=lambda v: getattr(v, "name", v))
def test_every_recorded_stream_encodes_to_a_documented_order(api: str, path: Path) -> None:
    ctype = CONTENT_TYPES.get(api, "text/event-stream")
    events = replay(api, path.read_bytes(), headers=[("content-type", ctype)])
    assert AGENT_ORDER.fullmatch(order(encode(events, hold=True)))


# -- the decoder: round trips ------------------------------------------------------------


def _summary(events: list[Event]) -> tuple[Any, ...]:
    message = accumulate(events)
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [(c.id, c.name, c.arguments_json) for c in message.content if isinstance(c, ToolCall)]
    return text, calls, message.stop_reason, message.usage


@given(streams())
def test_what_the_encoder_writes_the_decoder_reads_back(events: list[Event]) -> None:
    decoded = replay("agent-events", encode(events, hold=True), headers=SSE)
    check_protocol(decoded)
    text, calls, stop, usage = _summary(events)
    d_text, d_calls, d_stop, d_usage = _summary(decoded)
    assert (d_text, d_calls) == (text, calls)
    assert d_usage == usage
    if isinstance(events[-1], Done):
        expected = StopReason.TOOL_USE if calls and stop == StopReason.STOP else stop
        assert d_stop == expected
    else:
        assert isinstance(decoded[-1], Error) and decoded[-1].kind == ErrorKind.NETWORK
        assert decoded[-1].message == "gone"


def test_usage_and_errors_survive_the_round_trip() -> None:
    usage = Usage(input=10, cache_read=90, output=30, reasoning=12)
    done = replay("agent-events", encode([Start(), Done(usage=usage)]), headers=SSE)
    assert done[-1] == Done(usage=usage)
    thrown = Error.throttled("slow down", retry_after=3.0)
    back = replay("agent-events", encode([Start(), thrown]), headers=SSE)[-1]
    assert isinstance(back, Error)
    assert (back.kind, back.message, back.retry_after) == (ErrorKind.THROTTLED, "slow down", 3.0)


def test_a_foreign_servers_problem_is_classified_from_its_status() -> None:
    body = (
        b'event: stream_start\ndata: {"session_id": "s", "message_id": "m"}\n\n'
        b"event: error\ndata: "
        b'{"type": "https://holodeck.dev/errors/agent-error", "title": "Agent Error",'
        b' "status": 500, "detail": "LLM provider timeout"}\n\n'
    )
    events = replay("agent-events", body, headers=SSE)
    assert events[0] == Start(
        api="agent-events", provider="agent-events", model="replay", response_id="m"
    )
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.NETWORK
    assert error.message == "LLM provider timeout"
    cut = replay("agent-events", body.split(b"event: error")[0], headers=SSE)
    assert isinstance(cut[-1], Error) and "ended early" in cut[-1].message


def test_the_contracts_documented_example_decodes() -> None:
    """The agent contract's own examples, put in its documented order (with tools)."""
    body = (TRANSCRIPTS / "agent-events" / "documented-with-tools.sse").read_bytes()
    events = replay("agent-events", body, headers=SSE)
    check_protocol(events)
    message = accumulate(events)
    assert message.response_id == "01ARZ3NDEKTSV4RRFFQ69G5FAW"
    call = message.content[0]
    assert isinstance(call, ToolCall) and call.id == "tc_01"
    assert (call.name, call.arguments) == ("search_knowledge_base", {"query": "return policy"})
    assert message.text == "Our return policy lasts 30 days."
    assert message.stop_reason == StopReason.TOOL_USE
    assert message.usage == Usage(input=150, output=75)
    # and streamfn writes the same order back (the held text as one delta)
    joined = order(body).replace("message_delta message_delta", "message_delta")
    assert order(encode(events, hold=True)) == joined
