"""Paused turns (Anthropic ``pause_turn``) continued by the shells: one stream, the bill
proved by the requests a loopback upstream receives, on every shell."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from corpus_support import CORPUS, corpus_dir
from fake_provider import FakeProvider
from request_oracles import violations
from shell_runner import FAST, SHELLS, run

from streamfn.core import (
    Context,
    Done,
    Error,
    Model,
    OpaqueBlock,
    Options,
    ServerTool,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    Tool,
    accumulate,
    check_protocol,
    replay,
)
from streamfn.core._events import Event, StopReason, decode_event_json, encode_event_json
from streamfn.fuzz._fake_bodies import sse

#: Anthropic pauses only a turn of its server-side tool loop, so every request here
#: that is meant to pause declares a server tool (see `may_pause`)
SEARCH = Context(messages=Context.of("search").messages, tools=[ServerTool(type="web_search")])


async def collect(client: Any, model: Model, options: Options = FAST) -> list[Event]:
    """Every event of one request with a web-search tool."""
    async with client.stream(model, SEARCH, options) as events:
        return [event async for event in events]


async def collect_plain(client: Any, model: Model, options: Options = FAST) -> list[Event]:
    """Every event of one request without any server tool."""
    async with client.stream(model, Context.of("hi"), options) as events:
        return [event async for event in events]


def paused_body(n: int, *, paused: bool) -> bytes:
    """One Anthropic response of a server-tool turn: a search and its result, some text,
    then ``pause_turn`` (or ``end_turn``)."""
    out = [
        sse(
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [],
                    "usage": {"input_tokens": 100 * n, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "server_tool_use",
                    "id": f"srvtoolu_{n}",
                    "name": "web_search",
                    "input": {},
                },
            },
            "content_block_start",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": f'{{"query": "q{n}"}}'},
            },
            "content_block_delta",
        ),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": f"part {n}. "},
            },
            "content_block_delta",
        ),
        sse({"type": "content_block_stop", "index": 1}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "pause_turn" if paused else "end_turn"},
                "usage": {"output_tokens": 10 * n},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]
    return b"".join(out)


class PausingUpstream(FakeProvider):
    """Anthropic that pauses the turn ``pauses`` times (per token), then ends it."""

    def __init__(self, pauses: int) -> None:
        super().__init__()
        self.pauses = pauses

    def respond(self, sock: socket.socket, fault: str, provider: str, hit: int) -> bool:
        self.register_body("pausing", paused_body(hit, paused=hit <= self.pauses))
        return super().respond(sock, fault, "pausing", hit)


@pytest.fixture(scope="module")
def upstream() -> Iterator[PausingUpstream]:
    with PausingUpstream(pauses=2) as fake:
        yield fake


def claude(upstream: FakeProvider, token: str) -> Model:
    """Priced as Claude Sonnet 4.6 ($3 in, $15 out per million tokens)."""
    return Model(
        id="claude-sonnet-4-6",
        provider="anthropic",
        api="anthropic",
        base_url=upstream.base_url("ok", "pausing", token),
        price_input=3.0,
        price_output=15.0,
    )


def bodies(upstream: FakeProvider, token: str) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in upstream.requests if f"/{token}/" in r.path]


@pytest.mark.parametrize("shell", SHELLS)
def test_a_paused_turn_is_continued_into_one_stream(upstream: PausingUpstream, shell: str) -> None:
    token = f"pause-{shell}"
    events = run(shell, collect, claude(upstream, token))
    sent = bodies(upstream, token)
    # the bill: two pauses, so three requests, each sending the turn so far back
    assert len(sent) == 3
    assert [len(b["messages"]) for b in sent] == [1, 2, 2]
    first_back = sent[1]["messages"][-1]
    assert first_back["role"] == "assistant"
    assert [b["type"] for b in first_back["content"]] == ["server_tool_use", "text"]
    assert [b["type"] for b in sent[2]["messages"][-1]["content"]] == [
        "server_tool_use",
        "text",
        "server_tool_use",
        "text",
    ]
    # one coherent stream: one Start, one terminal, block indexes continuous
    check_protocol(events)
    assert sum(isinstance(e, Start) for e in events) == 1
    assert sum(isinstance(e, (Done, Error)) for e in events) == 1
    opaque = [e.index for e in events if isinstance(e, OpaqueBlock)]
    text = [e.index for e in events if isinstance(e, TextStart)]
    assert opaque == [0, 2, 4] and text == [1, 3, 5]
    done = events[-1]
    assert isinstance(done, Done) and done.paused is not True
    # usage is the sum of the three requests (input billed again each time)
    assert done.usage.input == 100 + 200 + 300
    assert done.usage.output == 10 + 20 + 30
    assert done.cost.total == pytest.approx((600 * 3.0 + 60 * 15.0) / 1e6)
    message = accumulate(events)
    assert message.text == "part 1. part 2. part 3. "


@pytest.mark.parametrize("shell", SHELLS)
def test_continuing_off_shows_the_pause_after_one_request(
    upstream: PausingUpstream, shell: str
) -> None:
    token = f"pause-off-{shell}"
    options = msgspec.structs.replace(FAST, pause_turn_continuations=0)
    events = run(shell, collect, claude(upstream, token), options)
    assert len(bodies(upstream, token)) == 1
    done = events[-1]
    assert isinstance(done, Done) and done.paused is True and done.usage.input == 100


@pytest.mark.parametrize("shell", SHELLS)
def test_the_bound_stops_continuing_and_says_so(upstream: PausingUpstream, shell: str) -> None:
    token = f"pause-bound-{shell}"
    options = msgspec.structs.replace(FAST, pause_turn_continuations=1)
    events = run(shell, collect, claude(upstream, token), options)
    assert len(bodies(upstream, token)) == 2
    done = events[-1]
    assert isinstance(done, Done) and done.paused is True
    assert done.usage.input == 100 + 200
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["part 1. ", "part 2. "]


RECORDED = CORPUS / "anthropic" / "pause-turn-web-search.sse"


class RecordedPause(FakeProvider):
    """A real paused turn (a long web-search turn, recorded), then a short ending."""

    def respond(self, sock: socket.socket, fault: str, provider: str, hit: int) -> bool:
        body = RECORDED.read_bytes() if hit == 1 else paused_body(hit, paused=False)
        self.register_body("recorded", body)
        return super().respond(sock, fault, "recorded", hit)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_recorded_pause_continues_with_a_request_the_sdk_accepts(shell: str) -> None:
    """The paused answer goes back whole (thinking and its signature, every server tool
    use and result) as the last assistant turn, in a request the Anthropic SDK's own
    types and the provider's published rules accept; the caller sees one stream."""
    corpus_dir()
    with RecordedPause() as fake:
        model = Model(
            id="claude-sonnet-4-6",
            provider="anthropic",
            api="anthropic",
            base_url=fake.base_url("ok", "recorded", f"recorded-{shell}"),
        )
        events = run(shell, collect, model)
        sent = [json.loads(r.body) for r in fake.requests]
    assert len(sent) == 2
    assert violations(model, sent[1]) == []
    back = sent[1]["messages"][-1]
    kinds = [block["type"] for block in back["content"]]
    assert (
        back["role"] == "assistant" and kinds[0] == "thinking" and back["content"][0]["signature"]
    )
    # paused with its last search not yet run: the continuation is where it runs
    assert kinds.count("web_search_tool_result") >= 10 and kinds[-1] == "server_tool_use"
    assert kinds.count("server_tool_use") == kinds.count("web_search_tool_result") + 1
    check_protocol(events)
    assert sum(isinstance(e, Start) for e in events) == 1
    done = events[-1]
    assert isinstance(done, Done) and done.paused is not True
    assert done.usage.input == 404500 + 200  # the recorded request's input, then ours
    assert accumulate(events).text.endswith("part 2. ")


def test_the_provider_marks_pause_turn_and_nothing_else() -> None:
    headers = [("content-type", "text/event-stream")]
    model = Model(id="claude-sonnet-4-6", provider="anthropic", api="anthropic", base_url="")
    paused = replay("anthropic", paused_body(1, paused=True), model=model, headers=headers)
    ended = replay("anthropic", paused_body(1, paused=False), model=model, headers=headers)
    assert isinstance(paused[-1], Done) and paused[-1].paused is True
    assert isinstance(ended[-1], Done) and ended[-1].paused is not True


def test_paused_travels_on_the_wire_and_is_absent_otherwise() -> None:
    """Unset, the field is never encoded: the wire of every other stream is unchanged."""
    assert b"paused" not in encode_event_json(Done())
    wire = encode_event_json(Done(paused=True))
    assert b'"paused":true' in wire
    decoded = decode_event_json(wire)
    assert isinstance(decoded, Done) and decoded.paused is True


def test_options_default_continues_a_bounded_number_of_times() -> None:
    assert Options().pause_turn_continuations == 5


def test_the_pause_survives_the_proxy_wire_and_text_tool_calls() -> None:
    """A streamfn proxy client, and the text tool-call transform, keep ``Done.paused``."""
    from streamfn.core._text_tools import text_tool_calls
    from streamfn.core.dialects.proxy import encode_proxy_events

    paused: list[Event] = [
        Start(),
        TextStart(0),
        TextDelta(0, "so far"),
        TextEnd(0),
        Done(paused=True),
    ]
    relayed = replay(
        "proxy", encode_proxy_events(paused), headers=[("content-type", "text/event-stream")]
    )
    assert isinstance(relayed[-1], Done) and relayed[-1].paused is True
    rewritten = text_tool_calls(paused)
    assert isinstance(rewritten[-1], Done) and rewritten[-1].paused is True


def test_the_anthropic_route_says_pause_turn_and_the_sdk_reads_it() -> None:
    """`streamfn serve`'s Anthropic dialect sends a pause it did not continue as
    ``pause_turn``: the Anthropic SDK's own stream accumulator reads that word, and our
    decoder reads it back as ``Done.paused``."""
    import anthropic

    from streamfn.core.dialects.anthropic import AnthropicEncoder

    events: list[Event] = [Start(), TextStart(0), TextDelta(0, "so far"), TextEnd(0)]
    encoder = AnthropicEncoder(message_id="msg_1", model="claude-sonnet-4-6")
    body = b"".join(encoder.encode(e) for e in [*events, Done(paused=True)])
    model = Model(id="claude-sonnet-4-6", provider="anthropic", api="anthropic", base_url="")
    back = replay("anthropic", body, model=model, headers=[("content-type", "text/event-stream")])
    assert isinstance(back[-1], Done) and back[-1].paused is True
    ended = b"".join(encoder.encode(e) for e in [Done()])
    assert b"pause_turn" not in ended

    with FakeProvider() as fake:
        fake.register_body("encoded", body)
        sdk = anthropic.Anthropic(
            api_key="k", base_url=fake.base_url("ok", "encoded", "sdk"), max_retries=0
        )
        with (
            sdk,
            sdk.messages.stream(
                model="claude-sonnet-4-6",
                max_tokens=10,
                messages=[{"role": "user", "content": "x"}],
            ) as stream,
        ):
            final = stream.get_final_message()
    assert final.stop_reason == "pause_turn"


def test_streams_that_cannot_pause_pass_through_untouched() -> None:
    """No fold, no renumbering, no extra layer where no provider pauses, where pausing
    is off, or where the request declares no server tool (Anthropic pauses only its
    server-side tool loop): the stage returns the inner batches themselves."""
    from streamfn.client._pause_turn import continue_paused_turns

    async def events() -> Any:
        yield Start()

    opened: list[Any] = []

    def open_events(model: Model, context: Any, options: Options) -> Any:
        opened.append(events())
        return opened[-1]

    gpt = Model(id="gpt-4o", provider="openai", api="openai-chat", base_url="")
    claude_model = Model(id="claude-sonnet-4-6", provider="anthropic", api="anthropic", base_url="")
    proxy = Model(id="m", provider="proxy", api="proxy", base_url="")
    functions_only = Context(messages=SEARCH.messages, tools=[Tool(name="f")])
    for model, context, options in [
        (gpt, SEARCH, Options()),
        (proxy, SEARCH, Options()),
        (claude_model, SEARCH, Options(pause_turn_continuations=0)),
        (claude_model, Context(), Options()),
        (claude_model, functions_only, Options()),
        (claude_model, SEARCH, Options(pause_turn_continuations=-1)),
        (claude_model, Context(), Options(extra_body={"tools": None, "metadata": {}})),
    ]:
        assert continue_paused_turns(open_events, model, context, options) is opened[-1]
    for context, options in [
        (SEARCH, Options()),
        # server tools the caller adds in the raw body are not ours to read: watched
        (Context(), Options(extra_body={"tools": [{"type": "web_fetch_20250910"}]})),
        (Context(), Options(extra_body={"mcp_servers": [{"type": "url", "url": "u"}]})),
    ]:
        assert (
            continue_paused_turns(open_events, claude_model, context, options) is not (opened[-1])
        )


@pytest.mark.parametrize("shell", SHELLS)
def test_a_request_without_server_tools_is_not_watched(
    upstream: PausingUpstream, shell: str
) -> None:
    """Without a server tool no turn can pause, so the stream is not folded or
    continued: a (never documented) pause would reach the caller as it came, from
    one request."""
    token = f"pause-plain-{shell}"
    events = run(shell, collect_plain, claude(upstream, token))
    assert len(bodies(upstream, token)) == 1
    check_protocol(events)
    done = events[-1]
    assert isinstance(done, Done) and done.paused is True and done.usage.input == 100


def test_serve_continues_a_pause_as_often_as_its_flag_says(upstream: PausingUpstream) -> None:
    """``streamfn serve --pause-continuations 1``: one continuation (two upstream
    requests, each billing the conversation), then the Anthropic client sees the pause."""
    import anthropic
    from loopback_server import KEY, serve_cli

    token = "pause-serve"
    args = ["--base-url", "anthropic=" + upstream.base_url("ok", "pausing", token)]
    with (
        serve_cli(
            [*args, "--pause-continuations", "1", "--allow-server-tools", "web_search"],
            {"ANTHROPIC_API_KEY": "k"},
        ) as url,
        anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0) as client,
    ):
        reply = client.messages.create(
            model="anthropic:claude-sonnet-4-6",
            max_tokens=10,
            messages=[{"role": "user", "content": "search"}],
            tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
        )
    assert len(bodies(upstream, token)) == 2 and reply.stop_reason == "pause_turn"


async def complete_plain(client: Any, model: Model, options: Options = FAST) -> Any:
    """The folded answer of one request without any server tool."""
    return await client.complete(model, Context.of("hi"), options)


@pytest.mark.parametrize("shell", SHELLS)
def test_complete_takes_a_pause_nobody_continued_for_an_incomplete_answer(
    upstream: PausingUpstream, shell: str
) -> None:
    """A paused turn that was not continued is not a finished answer: `complete()`
    says `length`, as the server's dialects do, never `stop`."""
    token = f"pause-complete-{shell}"
    message = run(shell, complete_plain, claude(upstream, token))
    assert len(bodies(upstream, token)) == 1
    assert message.stop_reason is StopReason.LENGTH


@pytest.mark.parametrize("shell", SHELLS)
def test_a_spending_cap_covers_the_continuations_of_a_paused_turn(
    upstream: PausingUpstream, shell: str
) -> None:
    """``max_cost`` is one cap for the whole call: the first request's reported cost
    ($0.00045: 100 input, 10 output tokens) leaves less than the continuation's input,
    so the continuation is not sent and the answer ends in a budget error."""
    token = f"pause-capped-{shell}"
    first = (100 * 3.0 + 10 * 15.0) / 1e6
    options = msgspec.structs.replace(FAST, max_cost=first + 1e-5)
    events = run(shell, collect, claude(upstream, token), options)
    assert len(bodies(upstream, token)) == 1
    error = events[-1]
    assert isinstance(error, Error) and error.kind == "budget", error
    assert "not sent" in error.message and "already spent" in error.message
    assert accumulate(events).text == "part 1. "
