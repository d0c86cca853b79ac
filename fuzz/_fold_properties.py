"""The fold's properties, shared by the test suite and `fuzz_fold`.

`Accumulator` folds events into the `AssistantMessage`, live at every step,
and enforces the event grammar. Drawn valid streams (blocks interleaved at
random, ended by `Done` or, anywhere, by `Error`) must fold into the message
the plan intended, computed from the plan rather than from the events; the
live view after each event must be the fold of that prefix; and any event
sequence at all may raise only `ProtocolViolation`, at the place
`check_protocol` names. The test suite runs these with a few dozen examples;
``python -m streamfn.fuzz.fuzz_fold`` runs them for hours from the installed
kit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import (
    Accumulator,
    AssistantMessage,
    Done,
    Error,
    ErrorKind,
    Event,
    OpaqueBlock,
    OpaqueContent,
    ProtocolViolation,
    Start,
    StopReason,
    TextContent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingContent,
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
)
from streamfn.core._events import finished_as

from ._json_properties import json_objects, text_chunkings

START = Start(api="anthropic", provider="anthropic", model="claude-x", response_id="msg_1")


def snapshot(message: AssistantMessage) -> bytes:
    return msgspec.json.encode(message)


@dataclass
class Block:
    kind: str
    events: list[Event]
    pieces: list[str] = field(default_factory=list)
    start: ToolCallStart | None = None
    end: Event | None = None
    delivered: int = 0  # how many of ``events`` made it into the stream


@st.composite
def blocks(draw: st.DrawFn, index: int) -> Block:
    kind = draw(st.sampled_from(["text", "thinking", "tool", "opaque"]))
    signature = draw(st.none() | st.text(max_size=4))
    if kind == "opaque":
        json_text = draw(st.sampled_from(['{"type":"server_tool_use"}', "{}"]))
        return Block(kind, [OpaqueBlock(index, "anthropic", "server_tool_use", json_text)])
    if kind == "tool":
        value = draw(json_objects)
        source = json.dumps(value, ensure_ascii=draw(st.booleans()))
        source = draw(st.sampled_from([source, source, "", source[: len(source) // 2]]))
        pieces = draw(text_chunkings(source))
        start = ToolCallStart(index, draw(st.text(max_size=5)), draw(st.text(max_size=5)))
        deltas: list[Event] = [ToolCallDelta(index, p) for p in pieces]
        end: Event = ToolCallEnd(index, signature)
        return Block(kind, [start, *deltas, end], pieces, start, end)
    pieces = draw(st.lists(st.text(max_size=6), max_size=6))
    if kind == "text":
        events: list[Event] = [TextStart(index), *(TextDelta(index, p) for p in pieces)]
        end = TextEnd(index, signature)
    else:
        redacted = draw(st.booleans())
        events = [ThinkingStart(index), *(ThinkingDelta(index, p) for p in pieces)]
        end = ThinkingEnd(index, signature, redacted)
    return Block(kind, [*events, end], pieces, None, end)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[Event], list[Block]]:
    """A valid stream: blocks interleaved at random, ended by Done or (anywhere) Error."""
    plan = [draw(blocks(i)) for i in range(draw(st.integers(0, 5)))]
    rng = draw(st.randoms(use_true_random=False))
    body: list[tuple[int, Event]] = []
    remaining = [list(b.events) for b in plan]
    active: list[int] = []
    next_block = 0
    while next_block < len(plan) or active:
        choice = rng.choice(active + ([-1] if next_block < len(plan) else []))
        if choice == -1:
            choice, next_block = next_block, next_block + 1
            active.append(choice)
        body.append((choice, remaining[choice].pop(0)))
        if not remaining[choice]:
            active.remove(choice)
    terminal: Event
    if draw(st.booleans()):
        usage = Usage(input=draw(st.integers(0, 99)), output=draw(st.integers(0, 99)))
        terminal = Done(stop_reason=draw(st.sampled_from(StopReason)), usage=usage)
    else:
        body = body[: draw(st.integers(0, len(body)))]
        terminal = Error(message=draw(st.text(max_size=8)), kind=draw(st.sampled_from(ErrorKind)))
    for index, _ in body:
        plan[index].delivered += 1
    return [START, *(event for _, event in body), terminal], plan


def intended_content(block: Block) -> Any:
    """What a block should become, from the plan rather than from the events."""
    closed = block.delivered == len(block.events)
    got = block.pieces[: max(0, block.delivered - 1)]
    signature = getattr(block.end, "signature", None) if closed else None
    if block.kind == "opaque":
        opaque = block.events[0]
        assert isinstance(opaque, OpaqueBlock)
        return OpaqueContent(
            provider=opaque.provider, block_type=opaque.block_type, json=opaque.json
        )
    if block.kind == "text":
        return TextContent(text="".join(got), signature=signature)
    if block.kind == "thinking":
        redacted = bool(closed and getattr(block.end, "redacted", False))
        return ThinkingContent(thinking="".join(got), signature=signature, redacted=redacted)
    assert block.start is not None
    source = "".join(got)
    failed = False
    if closed:
        try:
            parsed = json.loads(source) if source.strip() else {}
        except ValueError:
            parsed = None
        arguments = parsed if isinstance(parsed, dict) else {}
        failed = not isinstance(parsed, dict)
    else:  # cut off by the Error: its raw text only, never a repair of it
        arguments = {}
    call = ToolCall(
        id=block.start.id,
        name=block.start.name,
        arguments=arguments,
        arguments_json=source,
        signature=signature,
    )
    return call, failed


@given(streams())
def a_valid_stream_folds_into_the_intended_message(
    case: tuple[list[Event], list[Block]],
) -> None:
    events, plan = case
    check_protocol(events)
    message = accumulate(events)
    terminal = events[-1]
    content = message.content
    assert len(content) == sum(1 for b in plan if b.delivered)
    for got, block in zip(content, plan, strict=False):
        want = intended_content(block)
        if block.kind != "tool":
            assert got == want
            continue
        call, failed = want
        assert isinstance(got, ToolCall)
        assert (got.id, got.name, got.arguments_json, got.signature) == (
            call.id,
            call.name,
            call.arguments_json,
            call.signature,
        )
        assert got.arguments == call.arguments
        cut_off = block.delivered < len(block.events)
        assert (got.parse_error is not None) == (failed or cut_off)
    if isinstance(terminal, Done):  # a paused turn folds as incomplete
        assert message.stop_reason == finished_as(terminal)
    else:
        assert message.stop_reason == terminal.stop_reason  # type: ignore[union-attr]
    if isinstance(terminal, Done):
        assert message.usage == terminal.usage and message.error_message is None
    else:
        assert isinstance(terminal, Error)
        assert (message.error_message, message.error_kind) == (terminal.message, terminal.kind)


@given(streams())
def the_live_view_after_each_event_is_the_fold_of_that_prefix(
    case: tuple[list[Event], list[Block]],
) -> None:
    events, _ = case
    acc = Accumulator()
    for seen, event in enumerate(events, 1):
        acc.add(event)
        assert snapshot(acc.message) == snapshot(accumulate(events[:seen]))


index_values = st.integers(-1, 3)
any_event = st.one_of(
    st.just(START),
    st.builds(TextStart, index_values),
    st.builds(TextDelta, index_values, st.text(max_size=3)),
    st.builds(TextEnd, index_values, st.none() | st.text(max_size=2)),
    st.builds(ThinkingStart, index_values),
    st.builds(ThinkingDelta, index_values, st.text(max_size=3)),
    st.builds(ThinkingEnd, index_values, st.none() | st.text(max_size=2), st.booleans()),
    st.builds(ToolCallStart, index_values, st.text(max_size=2), st.text(max_size=2)),
    st.builds(ToolCallDelta, index_values, st.text('{}[]":,1a ', max_size=4)),
    st.builds(ToolCallEnd, index_values),
    st.builds(OpaqueBlock, index_values, st.just("p"), st.just("t"), st.just("{}")),
    st.builds(Done),
    st.builds(Error, message=st.text(max_size=3)),
)


@given(st.lists(any_event, max_size=25), st.booleans())
def any_event_sequence_raises_only_protocol_violation(
    events: list[Event], start_first: bool
) -> None:
    if start_first:
        events = [START, *events]
    acc = Accumulator()
    failed_at: ProtocolViolation | None = None
    for event in events:
        try:
            acc.add(event)
        except ProtocolViolation as exc:
            failed_at = exc
            break
        acc.message  # noqa: B018 - reading the live view must never raise either
    complete = bool(events) and isinstance(events[-1], (Done, Error))
    try:
        check_protocol(events)
    except ProtocolViolation as caught:
        if failed_at is not None:
            assert (caught.position, caught.reason) == (failed_at.position, failed_at.reason)
        else:
            assert not complete, f"check_protocol refused what the fold accepted: {caught}"
            assert re.search(r"no terminal event|stream is empty", caught.reason), caught.reason
    else:
        assert failed_at is None, f"check_protocol accepted what the fold refused: {failed_at}"
        assert complete, "check_protocol accepted a stream without a terminal event"
