"""The event grammar's table (core/_protocol.py): complete, and what the Emitter adds to it."""

from __future__ import annotations

import typing

from streamfn.core import Cost, StopReason, Usage
from streamfn.core._emitter import Emitter
from streamfn.core._events import (
    Event,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
)
from streamfn.core._protocol import (
    BLOCK,
    BLOCK_EVENTS,
    BLOCK_TRANSITIONS,
    EVENT_FOR,
    STREAM_TRANSITIONS,
    check_protocol,
)

START = Start(api="t", provider="p", model="m")


def test_every_event_type_has_a_place_in_the_table() -> None:
    stream_events = {e for moves in STREAM_TRANSITIONS.values() for e in moves if e != BLOCK}
    assert set(typing.get_args(Event)) == stream_events | set(BLOCK_EVENTS)
    assert not stream_events & set(BLOCK_EVENTS)
    # each (kind, step) names exactly one class, and every step a block takes is in its machine
    assert len(EVENT_FOR) == len(BLOCK_EVENTS)
    steps = {step for moves in BLOCK_TRANSITIONS.values() for step in moves}
    assert {step for _kind, step in BLOCK_EVENTS.values()} == steps


def test_a_signature_given_early_ends_the_next_thinking_block_under_its_key() -> None:
    emit = Emitter()
    emit.thinking("s", "hmm")
    emit.sign("s", "sig-1")
    emit.text("s", "answer")  # text under the same key closes the thinking block
    emit.thinking("s", "more")
    emit.end("s")  # the signature was used once
    emit.done(StopReason.STOP, Usage(), Cost())
    events = emit.drain()
    assert events[:6] == [
        ThinkingStart(0),
        ThinkingDelta(0, "hmm"),
        ThinkingEnd(0, "sig-1"),
        TextStart(1),
        TextDelta(1, "answer"),
        TextEnd(1),
    ]
    assert events[8] == ThinkingEnd(2, None)
    check_protocol([START, *events])


def test_an_explicit_signature_wins_over_one_given_early() -> None:
    emit = Emitter()
    emit.thinking("s", "hmm")
    emit.sign("s", "early")
    emit.end("s", signature="explicit")
    assert emit.drain()[-1] == ThinkingEnd(0, "explicit")
