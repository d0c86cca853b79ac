"""The event protocol: every event round-trips through JSON and msgpack unchanged."""

from __future__ import annotations

import pytest

from streamfn.core import (
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
from streamfn.core._events import (
    decode_event,
    decode_event_json,
    encode_event,
    encode_event_json,
    event_type,
)

ALL_EVENTS: list[Event] = [
    Start(api="anthropic", provider="anthropic", model="claude", response_id="msg_1"),
    TextStart(0),
    TextDelta(0, "héllo 🌍\n"),
    TextEnd(0, signature="sig"),
    ThinkingStart(1),
    ThinkingDelta(1, "hmm"),
    ThinkingEnd(1, signature="abc", redacted=True),
    ToolCallStart(2, "call_1", "get_weather"),
    ToolCallDelta(2, '{"city": "Pa'),
    ToolCallEnd(2),
    OpaqueBlock(3, "anthropic", "server_tool_use", '{"type":"server_tool_use"}'),
    Done(
        stop_reason=StopReason.TOOL_USE,
        usage=Usage(input=10, output=5, cache_read=3, cache_write=2, reasoning=1),
        cost=Cost(input=0.1, output=0.2),
    ),
    Error.throttled("slow down", retry_after=1.5),
    Error.context_overflow("prompt is too long", status=400),
    Error.auth("bad key", status=401),
    Error.network("stream ended early", usage=Usage(output=3)),
    Error.invalid_request("bad", status=400),
    Error.content_filter("blocked"),
    Error.protocol("garbage"),
    Error.limit("too big"),
    Error.aborted(),
]


@pytest.mark.parametrize("event", ALL_EVENTS, ids=lambda e: event_type(e))
def test_event_roundtrips_json(event: Event) -> None:
    assert decode_event_json(encode_event_json(event)) == event


@pytest.mark.parametrize("event", ALL_EVENTS, ids=lambda e: event_type(e))
def test_event_roundtrips_msgpack(event: Event) -> None:
    assert decode_event(encode_event(event)) == event


def test_json_carries_type_tag() -> None:
    assert encode_event_json(TextDelta(0, "x")) == b'{"type":"text_delta","index":0,"delta":"x"}'


def test_usage_total_is_computed_when_absent() -> None:
    assert Usage(input=1, output=2, cache_read=3, cache_write=4).total == 10
    assert Usage(input=1, output=2, total=99).total == 99


def test_reasoning_is_a_subset_of_output_not_added_to_total() -> None:
    assert Usage(input=1, output=10, reasoning=7).total == 11


def test_error_kinds_say_whether_to_retry() -> None:
    assert Error.throttled("x").retryable
    assert Error.network("x").retryable
    assert not Error.auth("x").retryable
    assert not Error.context_overflow("x").retryable
    assert not Error.protocol("x").retryable
    assert not Error.aborted().retryable
    assert Error.aborted().stop_reason is StopReason.ABORTED
    assert {k.value for k in ErrorKind} >= {"throttled", "context_overflow", "auth", "network"}
