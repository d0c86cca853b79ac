"""`TaggedDecoder`: raw chat-model bytes -> the event protocol, whatever the chunking."""

from __future__ import annotations

import json
from typing import Any

from chunking import by_sizes
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core._events import (
    Done,
    Error,
    ErrorKind,
    Event,
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
from streamfn.core._tagged import TaggedDecoder

_DELTAS = (TextDelta, ThinkingDelta, ToolCallDelta)


def run(
    data: bytes, chunks: list[int] | None = None, *, length: bool = False, **kwargs: Any
) -> tuple[list[Event], TaggedDecoder]:
    decoder = TaggedDecoder(**kwargs)
    events: list[Event] = []
    for chunk in by_sizes(data, chunks or [len(data) or 1]):
        events += decoder.receive_data(chunk)
    events += decoder.receive_eof(usage=Usage(input=3, output=7), length=length)
    return events, decoder


def coalesced(events: list[Event]) -> list[Event]:
    """Join adjacent deltas of one block: chunking may only change where deltas split."""
    out: list[Event] = []
    for event in events:
        last = out[-1] if out else None
        if (
            isinstance(event, _DELTAS) and type(last) is type(event) and last.index == event.index  # type: ignore[union-attr]
        ):
            out[-1] = type(event)(event.index, last.delta + event.delta)  # type: ignore[union-attr]
        else:
            out.append(event)
    return out


def blocks(events: list[Event]) -> list[tuple[str, str]]:
    """The final message as (kind, content) pairs, in content-index order."""
    found: dict[int, list[str]] = {}
    for e in events:
        if isinstance(e, TextStart):
            found[e.index] = ["text", ""]
        elif isinstance(e, ThinkingStart):
            found[e.index] = ["thinking", ""]
        elif isinstance(e, ToolCallStart):
            found[e.index] = [f"tool:{e.id}:{e.name}", ""]
        elif isinstance(e, _DELTAS):
            found[e.index][1] += e.delta
    return [(kind, text) for _, (kind, text) in sorted(found.items())]


def check_protocol(events: list[Event]) -> None:
    """Start first, one terminal last, blocks opened once in index order and closed before Done."""
    assert isinstance(events[0], Start)
    assert sum(isinstance(e, Start) for e in events) == 1
    assert isinstance(events[-1], (Done, Error))
    assert not any(isinstance(e, (Done, Error)) for e in events[:-1])
    open_blocks: dict[int, type] = {}
    next_index = 0
    starts = {TextStart: TextEnd, ThinkingStart: ThinkingEnd, ToolCallStart: ToolCallEnd}
    delta_of = {TextStart: TextDelta, ThinkingStart: ThinkingDelta, ToolCallStart: ToolCallDelta}
    for e in events[1:-1]:
        if type(e) in starts:
            assert e.index == next_index  # type: ignore[attr-defined]
            next_index += 1
            open_blocks[e.index] = type(e)  # type: ignore[attr-defined]
        elif isinstance(e, _DELTAS):
            assert delta_of[open_blocks[e.index]] is type(e)
            assert e.delta
        else:
            kind = open_blocks.pop(e.index)  # type: ignore[attr-defined]
            assert starts[kind] is type(e)
    if isinstance(events[-1], Done):
        assert not open_blocks


def test_plain_text_is_one_text_block_and_usage_is_carried() -> None:
    events, _ = run(b"Paris is the capital.")
    assert events == [
        Start(api="local", provider="local"),
        TextStart(0),
        TextDelta(0, "Paris is the capital."),
        TextEnd(0),
        Done(stop_reason=StopReason.STOP, usage=Usage(input=3, output=7)),
    ]


def test_thinking_then_answer_without_whitespace_only_blocks() -> None:
    events, _ = run(b"<think>\nLet me see.\n</think>\n\nParis.", [1])
    assert blocks(events) == [("thinking", "Let me see.\n"), ("text", "Paris.")]
    check_protocol(events)


def test_tags_and_utf8_split_across_every_byte() -> None:
    data = '<think>é→😀</think>日本<tool_call>{"name": "f", "arguments": {"x": "ü"}}</tool_call>'
    events, _ = run(data.encode(), [1])
    assert blocks(events) == [
        ("thinking", "é→😀"),
        ("text", "日本"),
        ("tool:call_0:f", '{"x": "ü"}'),
    ]


def test_tool_call_arguments_stream_before_the_closing_tag() -> None:
    decoder = TaggedDecoder()
    head = b'<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    events = decoder.receive_data(head)
    assert ToolCallStart(0, "call_0", "get_weather") in events
    assert "".join(e.delta for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Par'
    events = decoder.receive_data(b'is"}}\n</tool_call>')
    assert [e for e in events if isinstance(e, ToolCallDelta)] == [ToolCallDelta(0, 'is"}')]
    assert ToolCallEnd(0) in events
    done = decoder.receive_eof(usage=Usage(output=20))
    assert done[-1] == Done(stop_reason=StopReason.TOOL_USE, usage=Usage(output=20))


def test_parallel_tool_calls_get_distinct_ids_and_parse() -> None:
    calls = "".join(
        f'<tool_call>{{"name": "f{i}", "arguments": {{"n": {i}, "s": "a}}b\\"c"}}}}</tool_call>\n'
        for i in range(3)
    )
    events, _ = run(calls.encode(), [5])
    found = blocks(events)
    assert [kind for kind, _ in found] == ["tool:call_0:f0", "tool:call_1:f1", "tool:call_2:f2"]
    assert [json.loads(args) for _, args in found] == [{"n": i, "s": 'a}b"c'} for i in range(3)]


def test_arguments_before_name_and_json_encoded_arguments_still_make_tool_calls() -> None:
    events, _ = run(b'<tool_call>{"arguments": {"q": 1}, "name": "search"}</tool_call>')
    assert blocks(events) == [("tool:call_0:search", '{"q":1}')]
    events, _ = run(b'<tool_call>{"name": "search", "arguments": "{\\"q\\": 2}"}</tool_call>', [3])
    assert blocks(events) == [("tool:call_0:search", '{"q":2}')]


def test_truncated_arguments_after_a_known_name_stay_a_tool_call() -> None:
    # The model meant to call the tool: the fold reports the broken JSON, nothing raises.
    events, _ = run(b'<tool_call>{"name": "f", "arguments": {"a": [1, 2', length=True)
    assert blocks(events) == [("tool:call_0:f", '{"a": [1, 2')]
    assert events[-1] == Done(stop_reason=StopReason.LENGTH, usage=Usage(input=3, output=7))
    check_protocol(events)


def test_markup_without_a_readable_name_is_delivered_as_text() -> None:
    events, _ = run(b"Sure. <tool_call>not json</tool_call> done", [2])
    assert blocks(events) == [
        ("text", "Sure. "),
        ("text", "<tool_call>not json</tool_call> done"),
    ]
    assert isinstance(events[-1], Done) and events[-1].stop_reason == StopReason.STOP


def test_partial_tag_at_end_of_stream_is_text() -> None:
    events, _ = run(b"a <thi", [1])
    assert blocks(events) == [("text", "a <thi")]


def test_stop_sequence_cuts_the_text_and_asks_the_driver_to_stop() -> None:
    decoder = TaggedDecoder(stop=["\nUser:"])
    events = decoder.receive_data(b"Hello there\nUs")
    assert not decoder.stopped
    events += decoder.receive_data(b"er: more")
    assert decoder.stopped
    assert decoder.receive_data(b"ignored") == []
    events += decoder.receive_eof(usage=Usage(output=5), length=True)
    assert blocks(events) == [("text", "Hello there")]
    assert events[-1] == Done(stop_reason=StopReason.STOP, usage=Usage(output=5))


def test_start_in_thinking_for_templates_that_open_the_think_tag() -> None:
    events, _ = run(b"reasoning</think>answer", start_in_thinking=True)
    assert blocks(events) == [("thinking", "reasoning"), ("text", "answer")]


def test_invalid_utf8_becomes_replacement_characters() -> None:
    events, _ = run(b"ok \xff\xfe end \xe2\x82", [1])
    assert blocks(events) == [("text", "ok \ufffd\ufffd end \ufffd")]


def test_content_cap_ends_with_a_limit_error() -> None:
    events, _ = run(b"x" * 100, [10], max_content_bytes=50)
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.LIMIT
    check_protocol(events)


def test_abort_ends_with_aborted() -> None:
    decoder = TaggedDecoder()
    decoder.receive_data(b"Hel")
    events = decoder.abort(usage=Usage(output=1))
    assert isinstance(events[-1], Error) and events[-1].stop_reason == StopReason.ABORTED
    assert decoder.receive_eof() == []


# -- properties ----------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<th",
        "</tool",
        "<",
        "\n",
        "  ",
        "é",
        "😀",
        "日本",
        "Paris",
        "END",
        '{"name": "f", "arguments": ',
        '{"a": "x}"}',
        "}",
        '"',
        "\\",
        "[1, {",
        "]}",
    ]
)


@given(
    text=st.lists(_PIECES, max_size=25).map("".join),
    chunks=st.lists(st.integers(1, 12), min_size=1, max_size=8),
    stop=st.sampled_from([[], ["END"], ["</think>END", "Paris"]]),
    length=st.booleans(),
)
def test_any_chunking_gives_the_same_events(
    text: str, chunks: list[int], stop: list[str], length: bool
) -> None:
    data = text.encode()
    whole, _ = run(data, length=length, stop=stop)
    pieces, _ = run(data, chunks, length=length, stop=stop)
    assert coalesced(pieces) == coalesced(whole)
    check_protocol(pieces)


@given(data=st.binary(max_size=200), chunks=st.lists(st.integers(1, 9), min_size=1, max_size=5))
def test_arbitrary_bytes_never_raise_and_keep_the_protocol(data: bytes, chunks: list[int]) -> None:
    events, _ = run(data, chunks, stop=["\n\n"])
    check_protocol(events)
    assert coalesced(events) == coalesced(run(data, stop=["\n\n"])[0])
