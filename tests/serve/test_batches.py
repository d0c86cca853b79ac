"""Batches are events: whatever the grouping, a list path says what the per-event one says.

The server relays each upstream read as one list (the shells' stages pass
lists, the mailbox holds lists, each route's encoder takes a list), so every
list path is held here to the path one event at a time, for any stream
(`streamfn.fuzz.event_streams`) cut into any batches:

- each route's encoder: the bytes for a list are the concatenation of the
  bytes for its events one by one (OpenAI's against `OpenAIChatEncoder.encode`
  itself, whose fast path the list encoder skips);
- the mailbox's byte charge of a list is the sum of its events' charges, and
  what goes in comes out in order, stopping at the terminal event;
- each stage of the shells' pipeline (fallback, Responses upgrade, paused
  turns, text tool calls, tool checks, tracing) gives the same events whatever
  the batching of what it reads.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_codec import FixedStamps

from streamfn.asgi._runtime import Mailbox, batch_bytes, event_bytes
from streamfn.client._batches import Batches, flattened
from streamfn.client._fallback import fall_back
from streamfn.client._pause_turn import continue_paused_turns
from streamfn.client._responses_upgrade import upgrade_to_responses
from streamfn.client._text_tools import with_text_tool_calls
from streamfn.client._tool_checks import with_checked_tool_calls
from streamfn.client._tracing import traced
from streamfn.core import (
    Context,
    Done,
    Error,
    Event,
    Options,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    Tool,
    UserMessage,
)
from streamfn.core._events import ErrorKind, StopReason
from streamfn.core._messages import ServerTool
from streamfn.core.catalogue._models import Model
from streamfn.core.content._citations import Citation
from streamfn.core.dialects.openai_chat import OpenAIChatEncoder
from streamfn.core.serve._inbound import ClientRequest
from streamfn.core.serve._served import SERVED, encoder_for
from streamfn.core.stages._fallback import fallback
from streamfn.fuzz import event_streams
from streamfn.io_asyncio._server import AsyncioRuntime

STREAMS = event_streams()
TOOL = Tool(
    name="get_weather",
    description="the weather",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


@st.composite
def batched(draw: st.DrawFn, events: list[Event]) -> list[list[Event]]:
    """``events`` cut into non-empty lists at drawn places."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(events) - 1)))))
    edges = [0, *[c for c in cuts if c < len(events)], len(events)]
    return [events[a:b] for a, b in itertools.pairwise(edges) if b > a]


def _request(tools: bool, include_usage: bool) -> ClientRequest:
    context = Context(messages=[UserMessage(content="hi")], tools=[TOOL] if tools else [])
    return ClientRequest(model="m", context=context, options=Options(), include_usage=include_usage)


# -- encoders ----------------------------------------------------------------------------


def _cited(events: list[Event]) -> list[Event]:
    """``events`` with a URL citation on every text block's end (their spans count the
    characters of the whole message, which the list encoder tallies apart)."""
    cite = (Citation(kind="url_citation", url="https://a.test", start=0, end=1),)
    return [
        msgspec.structs.replace(e, citations=cite) if isinstance(e, TextEnd) else e for e in events
    ]


@given(STREAMS.map(_cited), st.data())
def test_openai_encodes_a_list_as_encode_does_each_event(events: list[Event], data: Any) -> None:
    def encoder() -> OpenAIChatEncoder:
        return OpenAIChatEncoder(response_id="chatcmpl-1", model="m", created=0, include_usage=True)

    one, many = encoder(), encoder()
    expected = b"".join(one.encode(event) for event in events)
    assert b"".join(many.encode_many(b) for b in data.draw(batched(events))) == expected


#: the routes that stream (the front ends' encoders need their clients' ids: their own tests)
STREAMED = [
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/responses",
    "/v1/agent/stream",
    "/v1/stream",
]


@pytest.mark.parametrize("path", STREAMED)
@pytest.mark.parametrize("append", [False, True])
@settings(max_examples=40, deadline=None)
@given(events=STREAMS, data=st.data(), tools=st.booleans(), usage=st.booleans())
def test_every_route_encodes_any_batching_as_its_events_one_by_one(
    path: str, append: bool, events: list[Event], data: Any, tools: bool, usage: bool
) -> None:
    request = _request(tools, usage)
    one, _ = encoder_for(SERVED[path], request, FixedStamps(), append=append)
    many, _ = encoder_for(SERVED[path], request, FixedStamps(), append=append)
    expected = b"".join(one([event]) for event in events)
    assert b"".join(many(b) for b in data.draw(batched(events))) == expected


# -- the mailbox -------------------------------------------------------------------------


@given(STREAMS)
def test_a_batch_costs_what_its_events_cost(events: list[Event]) -> None:
    assert batch_bytes(events) == sum(event_bytes(event) for event in events)


@given(STREAMS, st.data())
def test_the_mailbox_hands_out_its_batches_in_order_up_to_the_terminal_event(
    events: list[Event], data: Any
) -> None:
    batches = data.draw(batched(events))

    async def main() -> list[Event]:
        box = Mailbox(AsyncioRuntime(), capacity=10**6, max_bytes=1 << 40)
        for batch in batches:
            box.put_nowait(batch)
        box.put_nowait(None)
        got = await box.get(1.0)
        assert isinstance(got, list)
        out = [*got]
        box.take_ready(out, 10**6)
        return out

    assert asyncio.run(main()) == events


# -- the shells' stages --------------------------------------------------------------------


def _opener(streams: list[list[list[Event]]]) -> Callable[..., Batches]:
    """Opens the next of ``streams`` (each given as its batches) per call."""
    left = list(streams)

    def open_batches(model: Model, context: Context, options: Options) -> Batches:
        return _gen(left.pop(0))

    return open_batches


async def _gen(batches: list[list[Event]]) -> AsyncGenerator[list[Event], None]:
    for batch in batches:
        yield batch


def _events(batches: Batches) -> list[Event]:
    async def main() -> list[Event]:
        out: list[Event] = []
        async for batch in batches:
            assert batch, "a stage handed out an empty batch"
            out += batch
        return out

    return asyncio.run(main())


def _flat(batches: Batches) -> list[Event]:
    async def main() -> list[Event]:
        return [event async for event in flattened(batches)]

    return asyncio.run(main())


CHAT = Model(id="gpt-x", provider="openai", api="openai-chat", base_url="https://a.test/v1")
CLAUDE = Model(id="claude-x", provider="anthropic", api="anthropic", base_url="https://b.test")


def _singles(events: list[Event]) -> list[list[Event]]:
    return [[event] for event in events]


@settings(deadline=None)
@given(STREAMS, st.data())
def test_tool_checks_and_tracing_see_the_same_events_whatever_the_batching(
    events: list[Event], data: Any
) -> None:
    context = Context(messages=[UserMessage(content="hi")], tools=[TOOL])
    stages: list[Callable[[Batches], Batches]] = [
        lambda b: with_checked_tool_calls(b, context, Options(), lambda: asyncio.sleep(0)),
        lambda b: traced(b, CHAT, Options(), lambda: 0.0),
    ]
    for stage in stages:
        one = _events(stage(_gen(_singles(events))))
        assert _events(stage(_gen(data.draw(batched(events))))) == one


def _hermes_stream(text: str, cuts: list[int]) -> list[Event]:
    edges = [0, *sorted(c for c in set(cuts) if 0 < c < len(text)), len(text)]
    deltas = [TextDelta(0, text[a:b]) for a, b in itertools.pairwise(edges)]
    return [Start(), TextStart(0), *deltas, TextEnd(0), Done(stop_reason=StopReason.STOP)]


@settings(deadline=None)
@given(st.lists(st.integers(0, 120), max_size=12), st.data())
def test_text_tool_calls_read_the_same_calls_whatever_the_batching(
    cuts: list[int], data: Any
) -> None:
    text = 'Let me look. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    events = _hermes_stream(text, cuts)
    context = Context(messages=[UserMessage(content="hi")], tools=[TOOL])
    options = Options(text_tool_calls=["hermes"])
    one = _events(with_text_tool_calls(_gen(_singles(events)), CHAT, context, options))
    many = _events(with_text_tool_calls(_gen(data.draw(batched(events))), CHAT, context, options))
    assert many == one
    assert any(type(event).__name__ == "ToolCallEnd" for event in one)  # the call was read


def _paused(n: int) -> list[Event]:
    return [
        Start(),
        TextStart(0),
        TextDelta(0, f"part {n}"),
        TextEnd(0),
        Done(stop_reason=StopReason.STOP, paused=True),
    ]


@settings(deadline=None)
@given(st.data())
def test_paused_turns_continue_the_same_whatever_the_batching(data: Any) -> None:
    requests = [_paused(0), _paused(1), [*_paused(2)[:-1], Done(stop_reason=StopReason.STOP)]]
    options = Options(pause_turn_continuations=5)

    def run(batching: Callable[[list[Event]], list[list[Event]]]) -> list[Event]:
        opener = _opener([batching(r) for r in requests])
        # a server tool: Anthropic pauses only its server-side tool loop
        search = Context(messages=Context.of("hi").messages, tools=[ServerTool(type="web_search")])
        return _events(continue_paused_turns(opener, CLAUDE, search, options))

    one = run(_singles)
    assert sum(isinstance(e, Start) for e in one) == 1 and isinstance(one[-1], Done)
    assert run(lambda r: data.draw(batched(r))) == one


def _failing(kind: ErrorKind, message: str) -> list[Event]:
    return [Start(), Error(kind=kind, message=message, status=400)]


@settings(deadline=None)
@given(STREAMS, st.data())
def test_fallback_and_the_responses_upgrade_pass_the_same_events_whatever_the_batching(
    events: list[Event], data: Any
) -> None:
    throttled = _failing(ErrorKind.THROTTLED, "slow down")
    chain = fallback([CHAT, CLAUDE])
    only_responses = _failing(
        ErrorKind.INVALID_REQUEST, "This model is only supported in v1/responses."
    )

    def run(batching: Callable[[list[Event]], list[list[Event]]]) -> tuple[Any, ...]:
        falling = fall_back(
            _opener([batching(throttled), batching(events)]), chain, Context.of("hi"), Options()
        )
        upgraded: set[tuple[str, str, str]] = set()
        upgrading = upgrade_to_responses(
            _opener([batching(only_responses), batching(events)]),
            upgraded,
            CHAT,
            Context.of("hi"),
            Options(),
        )
        return _events(falling), _flat(upgrading), len(upgraded)

    one = run(_singles)
    assert one == (events, events, 1)
    assert run(lambda r: data.draw(batched(r))) == one
