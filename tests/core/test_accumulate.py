"""The fold: events in, the AssistantMessage out, live at every step; the grammar enforced."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scaling import assert_linear

from streamfn.core._accumulate import Accumulator, ProtocolViolation, accumulate, check_protocol
from streamfn.core._events import (
    Cost,
    Done,
    Error,
    ErrorKind,
    Event,
    OpaqueBlock,
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
from streamfn.core._messages import (
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from streamfn.core.providers import Emitter
from streamfn.fuzz import _fold_properties as props
from streamfn.fuzz._fold_properties import START, any_event, streams

# -- the final message ----------------------------------------------------------


def test_a_full_stream_folds_into_the_message() -> None:
    usage = Usage(input=10, output=20, cache_read=5)
    cost = Cost(input=0.01, output=0.02)
    message = accumulate(
        [
            START,
            ThinkingStart(0),
            ThinkingDelta(0, "Let me "),
            ThinkingDelta(0, "think."),
            ThinkingEnd(0, signature="sig-think"),
            TextStart(1),
            TextDelta(1, "Héllo "),
            TextDelta(1, "🌍"),
            TextEnd(1, signature="sig-text"),
            ToolCallStart(2, "call_1", "get_weather"),
            ToolCallDelta(2, '{"city": "Pa'),
            ToolCallDelta(2, 'ris", "days": 3}'),
            ToolCallEnd(2, signature="sig-tool"),
            OpaqueBlock(3, "anthropic", "web_search_tool_result", '{"type":"x"}'),
            Done(stop_reason=StopReason.TOOL_USE, usage=usage, cost=cost),
        ]
    )
    assert message.content == [
        ThinkingContent(thinking="Let me think.", signature="sig-think"),
        TextContent(text="Héllo 🌍", signature="sig-text"),
        ToolCall(
            id="call_1",
            name="get_weather",
            arguments={"city": "Paris", "days": 3},
            arguments_json='{"city": "Paris", "days": 3}',
            signature="sig-tool",
        ),
        OpaqueContent(
            provider="anthropic", block_type="web_search_tool_result", json='{"type":"x"}'
        ),
    ]
    assert (message.api, message.provider, message.model, message.response_id) == (
        "anthropic",
        "anthropic",
        "claude-x",
        "msg_1",
    )
    assert message.stop_reason is StopReason.TOOL_USE
    assert message.usage == usage
    assert message.cost == cost
    assert message.error_message is None and message.error_kind is None
    assert message.text == "Héllo 🌍"


def test_interleaved_blocks_land_at_their_index() -> None:
    message = accumulate(
        [
            START,
            ToolCallStart(0, "a", "f"),
            ToolCallStart(1, "b", "g"),
            ToolCallDelta(1, '{"y":'),
            ToolCallDelta(0, '{"x":'),
            ToolCallDelta(0, "1}"),
            ToolCallDelta(1, "2}"),
            ToolCallEnd(1),
            TextStart(2),
            ToolCallEnd(0),
            TextDelta(2, "ok"),
            TextEnd(2),
            Done(stop_reason=StopReason.TOOL_USE),
        ]
    )
    assert [(c.id, c.arguments) for c in message.tool_calls] == [("a", {"x": 1}), ("b", {"y": 2})]
    assert message.text == "ok"


def test_redacted_thinking_keeps_its_encrypted_payload() -> None:
    message = accumulate(
        [START, ThinkingStart(0), ThinkingEnd(0, signature="ENCRYPTED", redacted=True), Done()]
    )
    assert message.content == [ThinkingContent(thinking="", signature="ENCRYPTED", redacted=True)]


@pytest.mark.parametrize(
    ("fragments", "arguments", "error"),
    [
        ([], {}, None),  # a call without arguments
        (["  "], {}, None),
        (['{"a": [1, {"b": null}]}'], {"a": [1, {"b": None}]}, None),
        (['{"a": 1'], {}, "tool call arguments are not valid JSON"),
        (["{'a': 1}"], {}, "tool call arguments are not valid JSON"),
        (["[1, 2]"], {}, "tool call arguments must be a JSON object, got list"),
        (['"text"'], {}, "tool call arguments must be a JSON object, got str"),
    ],
)
def test_tool_arguments_are_parsed_when_the_call_ends(
    fragments: list[str], arguments: dict[str, Any], error: str | None
) -> None:
    events: list[Event] = [START, ToolCallStart(0, "c", "f")]
    events += [ToolCallDelta(0, f) for f in fragments]
    events += [ToolCallEnd(0), Done(stop_reason=StopReason.TOOL_USE)]
    call = accumulate(events).tool_calls[0]  # never raises, whatever the model sent
    assert call.arguments == arguments
    assert call.arguments_json == "".join(fragments)
    if error is None:
        assert call.parse_error is None
    else:
        assert call.parse_error is not None and call.parse_error.startswith(error)


def test_absurdly_nested_arguments_are_a_parse_error_not_a_crash() -> None:
    nested = '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"
    acc = Accumulator()
    acc.extend([START, ToolCallStart(0, "c", "f"), ToolCallDelta(0, nested)])
    live = acc.message.tool_calls[0]
    assert live.parse_error is not None and "nested deeper" in live.parse_error
    acc.extend([ToolCallEnd(0), Done()])
    call = acc.message.tool_calls[0]
    assert call.arguments == {} and call.arguments_json == nested
    assert call.parse_error == "tool call arguments are nested too deeply to parse"


def test_an_error_keeps_what_arrived_and_marks_cut_off_tool_calls() -> None:
    usage = Usage(input=7, output=3)
    message = accumulate(
        [
            START,
            TextStart(0),
            TextDelta(0, "partial ans"),
            ToolCallStart(1, "c", "write_file"),
            ToolCallDelta(1, '{"path": "a.txt", "content": "hel'),
            Error.throttled("rate limited", retry_after=2.0, usage=usage),
        ]
    )
    assert message.text == "partial ans"
    call = message.tool_calls[0]
    assert call.arguments_json == '{"path": "a.txt", "content": "hel'
    # repaired arguments are for the live view only: the final message never offers them
    assert call.arguments == {}
    assert call.parse_error is not None and "before this tool call was complete" in call.parse_error
    assert message.stop_reason is StopReason.ERROR
    assert message.error_message == "rate limited"
    assert message.error_kind is ErrorKind.THROTTLED
    assert message.usage == usage


def test_a_cut_tool_call_read_live_before_the_error_is_not_repaired_after_it() -> None:
    """The live view repairs ``{"path": "/home/user`` for display; once the error ends
    the stream the call's input is not that repair, however often it was read."""
    acc = Accumulator()
    acc.extend(
        [START, ToolCallStart(0, "c", "delete_files"), ToolCallDelta(0, '{"path": "/home/user')]
    )
    assert acc.message.tool_calls[0].arguments == {"path": "/home/user"}  # display
    assert acc.partial_arguments(0) == {"path": "/home/user"}
    acc.add(Error.network("connection reset"))
    call = acc.message.tool_calls[0]
    assert call.arguments == {} and call.arguments_json == '{"path": "/home/user'
    assert call.parse_error is not None and "must not be used" in call.parse_error


def test_an_abort_without_usage_keeps_the_default_usage() -> None:
    message = accumulate([START, Error.aborted()])
    assert message.stop_reason is StopReason.ABORTED
    assert message.usage == Usage()
    assert message.error_kind is None and message.error_message == "aborted by the caller"


# -- the live view -------------------------------------------------------------


def test_the_live_view_is_one_object_updated_as_events_arrive() -> None:
    acc = Accumulator()
    acc.add(START)
    live = acc.message
    assert live.model == "claude-x" and live.content == []
    acc.add(TextStart(0))
    acc.add(TextDelta(0, "Hel"))
    assert acc.message is live and live.text == "Hel"
    kept = live.text
    acc.add(TextDelta(0, "lo"))
    assert acc.message.text == "Hello"
    assert kept == "Hel"  # strings a caller holds never change
    acc.add(TextEnd(0))
    acc.add(Done())
    assert acc.finished and acc.message is live and live.text == "Hello"


def test_partial_tool_arguments_while_they_stream() -> None:
    acc = Accumulator()
    acc.extend([START, TextStart(0), ToolCallStart(1, "c", "search")])
    seen = []
    for fragment in ['{"query": "stre', 'aming json", "limit"', ": 10", ', "tags": ["a', '"]}']:
        acc.add(ToolCallDelta(1, fragment))
        seen.append(msgspec.json.decode(msgspec.json.encode(acc.partial_arguments(1))))
    assert seen == [
        {"query": "stre"},
        {"query": "streaming json"},
        {"query": "streaming json"},  # 10 may still grow
        {"query": "streaming json", "limit": 10, "tags": ["a"]},
        {"query": "streaming json", "limit": 10, "tags": ["a"]},
    ]
    call = acc.message.tool_calls[0]
    assert call.arguments == seen[-1] and call.parse_error is None
    assert call.arguments_json == '{"query": "streaming json", "limit": 10, "tags": ["a"]}'
    with pytest.raises(ValueError, match="not a ToolCall"):
        acc.partial_arguments(0)
    with pytest.raises(IndexError):
        acc.partial_arguments(2)


def test_live_view_reports_invalid_arguments_as_soon_as_they_are_invalid() -> None:
    acc = Accumulator()
    acc.extend([START, ToolCallStart(0, "c", "f"), ToolCallDelta(0, '{"a": 1,, ')])
    call = acc.message.tool_calls[0]
    assert call.arguments == {"a": 1}
    assert call.parse_error is not None and "expected an object key" in call.parse_error


def test_reading_the_live_view_after_every_delta_stays_linear() -> None:
    # A regression guard; bench/bench_fold.py has the numbers. Re-joining the
    # text or re-parsing the arguments on every read would make it quadratic.
    def prepare(items: int) -> Callable[[], object]:
        arguments = {"path": "notes.md", "content": "- an item\n" * items, "tags": ["x"] * 50}
        text = json.dumps(arguments)
        acc = Accumulator()
        acc.extend([START, TextStart(0), ToolCallStart(1, "c", "write")])

        def run() -> None:
            for char in text:
                acc.add(TextDelta(0, char))
                acc.add(ToolCallDelta(1, char))
                acc.message  # noqa: B018 - reading is the point
            acc.extend([TextEnd(0), ToolCallEnd(1), Done()])
            assert acc.message.text == text
            assert acc.message.tool_calls[0].arguments == arguments

        return run

    assert_linear(prepare, 100)


# -- the grammar ------------------------------------------------------------------

T0, TD0, TE0 = TextStart(0), TextDelta(0, "x"), TextEnd(0)


@pytest.mark.parametrize(
    ("events", "position", "reason"),
    [
        pytest.param([T0], 0, "first event must be Start", id="first-not-start"),
        pytest.param([Done()], 0, "first event must be Start", id="done-first"),
        pytest.param([START, START], 1, "a second Start", id="second-start"),
        pytest.param([START, TD0], 1, "never started", id="delta-never-started"),
        pytest.param([START, TE0], 1, "never started", id="end-never-started"),
        pytest.param([START, T0, TE0, TD0], 3, "already closed", id="delta-after-close"),
        pytest.param([START, T0, TE0, TE0], 3, "already closed", id="end-twice"),
        pytest.param([START, T0, T0], 2, "already started", id="index-reused"),
        pytest.param(
            [START, T0, TE0, OpaqueBlock(0, "p", "t", "{}")],
            3,
            "already started",
            id="opaque-reuse",
        ),
        pytest.param([START, TextStart(1)], 1, "expected block 0", id="index-skipped"),
        pytest.param([START, T0, TextStart(2)], 2, "expected block 1", id="index-gap"),
        pytest.param([START, TextStart(-1)], 1, "expected block 0", id="negative-index"),
        pytest.param(
            [START, ThinkingStart(0), TextDelta(0, "x")], 2, "is a thinking block", id="kind-delta"
        ),
        pytest.param([START, T0, ToolCallEnd(0)], 2, "is a text block", id="kind-end"),
        pytest.param([START, T0, Done()], 2, "blocks [0] are still open", id="done-open"),
        pytest.param([START, Done(), T0], 2, "after the terminal event", id="after-done"),
        pytest.param(
            [START, Error.network("x"), Done()], 2, "after the terminal", id="after-error"
        ),
        pytest.param([START, TextStart(True)], 1, "non-integer index", id="bool-index"),
        pytest.param([START, "text"], 1, "str is not a streamfn event", id="not-an-event"),
    ],
)
def test_protocol_violations_are_typed_and_say_which_rule(
    events: list[Any], position: int, reason: str
) -> None:
    acc = Accumulator()
    for event in events[:position]:
        acc.add(event)
    with pytest.raises(ProtocolViolation) as caught:
        acc.add(events[position])
    assert reason in caught.value.reason
    assert caught.value.position == position
    assert caught.value.event is events[position]
    assert acc.violation is caught.value
    with pytest.raises(ProtocolViolation) as again:
        check_protocol(events)
    assert (again.value.reason, again.value.position) == (caught.value.reason, position)


def test_an_error_may_cut_blocks_off() -> None:
    check_protocol([START, T0, ToolCallStart(1, "c", "f"), Error.network("dropped")])


def test_a_violation_is_sticky() -> None:
    acc = Accumulator()
    acc.extend([START, T0, TD0])
    with pytest.raises(ProtocolViolation):
        acc.add(TextStart(5))
    with pytest.raises(ProtocolViolation, match="already broke the protocol"):
        acc.add(TE0)  # valid on its own, refused after the violation
    assert acc.message.text == "x"  # what arrived before is still readable


@pytest.mark.parametrize(
    ("events", "reason"),
    [([], "the stream is empty"), ([START, T0, TE0], "no terminal event")],
)
def test_check_protocol_requires_a_complete_stream(events: list[Event], reason: str) -> None:
    with pytest.raises(ProtocolViolation, match=reason):
        check_protocol(events)


# -- properties over generated streams (the fuzz kit's, which `fuzz_fold` runs for hours) --


test_a_valid_stream_folds_into_the_intended_message = (
    props.a_valid_stream_folds_into_the_intended_message
)
test_the_live_view_after_each_event_is_the_fold_of_that_prefix = (
    props.the_live_view_after_each_event_is_the_fold_of_that_prefix
)
test_any_event_sequence_raises_only_protocol_violation = (
    props.any_event_sequence_raises_only_protocol_violation
)


emitter_ops = st.lists(
    st.tuples(
        st.sampled_from(["text", "thinking", "tool_start", "tool_delta", "end", "opaque", "error"]),
        st.integers(0, 2),
        st.text(max_size=3),
    ),
    max_size=30,
)


@given(emitter_ops)
def test_whatever_the_shared_emitter_produces_is_a_valid_stream(
    ops: list[tuple[str, int, str]],
) -> None:
    # Every provider speaks through the Emitter, so the fold must accept anything it emits.
    emitter = Emitter()
    for op, key, text in ops:
        if op == "text":
            emitter.text(key, text)
        elif op == "thinking":
            emitter.thinking(key, text)
        elif op == "tool_start":
            emitter.tool_start(key, f"id{key}", "f")
        elif op == "tool_delta":
            if emitter.open_kind(key) == "tool":
                emitter.tool_delta(key, text)
        elif op == "end":
            emitter.end(key, signature=text or None)
        elif op == "opaque":
            emitter.opaque("p", "t", "{}")
        else:
            emitter.error(Error.network("dropped"))
    emitter.done(StopReason.STOP, Usage(), Cost())
    events = [START, *emitter.drain()]
    check_protocol(events)
    by_block: dict[int, str] = {}
    for event in events:
        if isinstance(event, TextDelta):
            by_block[event.index] = by_block.get(event.index, "") + event.delta
    assert accumulate(events).text == "".join(by_block[i] for i in sorted(by_block))


def _fold(events: list[Event], batches: list[int], one_by_one: bool) -> list[object]:
    """The live message (as builtins) after each batch, then the violation
    (position, reason) if any: folding with `extend` per batch, or `add` per event."""
    acc = Accumulator()
    seen: list[object] = []
    start = 0
    try:
        for size in [*batches, len(events)]:
            batch = events[start : start + size]
            start += size
            if one_by_one:
                for event in batch:
                    acc.add(event)
            else:
                acc.extend(batch)
            seen.append(msgspec.to_builtins(acc.message))
    except ProtocolViolation as exc:
        seen.append((exc.position, exc.reason))
    return seen


@st.composite
def _broken(draw: st.DrawFn) -> list[Event]:
    """A valid stream with one arbitrary event put somewhere: mostly a violation
    after some deltas, where the position counted so far matters."""
    events = draw(streams())[0]
    at = draw(st.integers(0, len(events)))
    return [*events[:at], draw(any_event), *events[at:]]


@given(
    st.one_of(streams().map(lambda s: s[0]), _broken(), st.lists(any_event, max_size=25)),
    st.lists(st.integers(0, 6), max_size=8),
)
def test_extend_in_any_batches_folds_what_add_folds_one_by_one(
    events: list[Event], batches: list[int]
) -> None:
    assert _fold(events, batches, one_by_one=False) == _fold(events, batches, one_by_one=True)
