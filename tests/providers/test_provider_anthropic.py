"""Anthropic Messages: requests, hand-made transcripts, the corpus, and properties."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chunking import bytewise, split_at
from corpus_support import body, corpus_entries, expected, require_corpus
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import (
    AssistantMessage,
    Context,
    Done,
    Error,
    ErrorKind,
    Event,
    ImageContent,
    Model,
    OpaqueContent,
    Options,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    list_models,
    replay,
)
from streamfn.core._accumulate import accumulate, check_protocol
from streamfn.core._classify import classify_http_error
from streamfn.core.dialects.anthropic import build_request, open_call
from streamfn.core.wire import encode_sse

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "anthropic"
SSE = [("content-type", "text/event-stream; charset=utf-8")]


def claude(**kw: Any) -> Model:
    base = kw.pop("base_url", "https://api.anthropic.com")
    return Model(
        id=kw.pop("id", "claude-sonnet-4-5"),
        provider="anthropic",
        api="anthropic",
        base_url=base,
        max_output=kw.pop("max_output", 8192),
        **kw,
    )


def request_body(context: Context, options: Options | None = None, **kw: Any) -> dict[str, Any]:
    req = build_request(claude(**kw), context, options or Options(api_key="sk-ant-test"))
    result: dict[str, Any] = json.loads(req.body)
    return result


def run(data: bytes | list[bytes]) -> list[Event]:
    return replay("anthropic", data, provider="anthropic", headers=SSE)


def transcript(name: str) -> list[Event]:
    return run((TRANSCRIPTS / name).read_bytes())


def assistant(*content: Any, model_id: str = "claude-sonnet-4-5", **kw: Any) -> AssistantMessage:
    return AssistantMessage(
        content=list(content), api="anthropic", provider="anthropic", model=model_id, **kw
    )


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def test_request_url_headers_and_minimal_body() -> None:
    req = build_request(
        claude(headers={"anthropic-beta": "interleaved-thinking-2025-05-14"}),
        Context.of("Hi"),
        Options(api_key="sk-ant-secret", headers={"x-trace": "1"}),
    )
    assert req.method == "POST"
    assert req.url == "https://api.anthropic.com/v1/messages"
    headers = dict(req.headers)
    assert headers["x-api-key"] == "sk-ant-secret"
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert headers["x-trace"] == "1"
    assert "sk-ant-secret" not in repr(req)
    assert json.loads(req.body) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "stream": True,
        "messages": [{"role": "user", "content": "Hi"}],
    }


def test_base_url_ending_in_v1_is_not_doubled() -> None:
    req = build_request(claude(base_url="http://127.0.0.1:9/v1/"), Context.of("x"), Options())
    assert req.url == "http://127.0.0.1:9/v1/messages"
    assert "x-api-key" not in dict(req.headers)


def test_request_system_sampling_stop_and_tools() -> None:
    weather = Tool(
        name="get_weather",
        description="Weather for a city",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )
    ctx = Context(
        system_prompt="Be brief.",
        messages=[UserMessage(content="Weather?")],
        tools=[weather, Tool(name="noop")],
    )
    body = request_body(
        ctx,
        Options(
            temperature=0.2, top_p=0.9, top_k=40, max_tokens=300, stop=["END"], tool_choice="auto"
        ),
        id="claude-sonnet-4-0",  # Claude 4.5 takes one of temperature and top_p
    )
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 300
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.2, 0.9, 40)
    assert body["stop_sequences"] == ["END"]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": weather.parameters,
        },
        {"name": "noop", "input_schema": {"type": "object", "properties": {}}},
    ]
    assert body["tool_choice"] == {"type": "auto"}


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
)
def test_tool_choice(choice: str, wire: dict[str, str]) -> None:
    ctx = Context(messages=[UserMessage(content="x")], tools=[Tool(name="get_weather")])
    assert request_body(ctx, Options(tool_choice=choice))["tool_choice"] == wire


def test_tool_choice_needs_tools() -> None:
    assert "tool_choice" not in request_body(Context.of("x"), Options(tool_choice="auto"))


def test_thinking_forces_default_temperature_and_room_above_budget() -> None:
    body = request_body(
        Context.of("Think"),
        Options(thinking=ThinkingLevel.MEDIUM, temperature=0.3, top_k=5, max_tokens=2000),
        max_output=64_000,
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_240}
    assert "temperature" not in body and "top_k" not in body
    assert body["max_tokens"] == 10_240 + 2000  # max_tokens counts thinking too


def test_thinking_budget_explicit_and_capped_by_model_output() -> None:
    body = request_body(
        Context.of("x"), Options(thinking_budget=6000, max_tokens=4000), max_output=8000
    )
    assert body["thinking"]["budget_tokens"] == 6000
    assert body["max_tokens"] == 8000  # above the budget, within the model
    body = request_body(Context.of("x"), Options(thinking_budget=2000, max_tokens=5000))
    assert body["max_tokens"] == 5000  # already above the budget: unchanged


def test_thinking_off_sends_nothing() -> None:
    body = request_body(Context.of("x"), Options(thinking=ThinkingLevel.OFF, temperature=0.5))
    assert "thinking" not in body and body["temperature"] == 0.5


def test_images_tool_results_merge_and_thinking_replay() -> None:
    ctx = Context(
        messages=[
            UserMessage(
                content=[
                    TextContent(text="What is this?"),
                    TextContent(text=""),
                    ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
                ]
            ),
            assistant(
                ThinkingContent(thinking="Two lookups.", signature="sig-1"),
                ThinkingContent(thinking="", signature="enc-data", redacted=True),
                TextContent(text="Checking."),
                ToolCall(id="toolu_1", name="a", arguments={"x": 1}),
                ToolCall(id="toolu_2", name="b", arguments={}),
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(
                tool_call_id="toolu_1", tool_name="a", content=[TextContent(text="1")]
            ),
            ToolResultMessage(
                tool_call_id="toolu_2",
                tool_name="b",
                content=[TextContent(text="boom")],
                is_error=True,
            ),
            UserMessage(content="And now?"),
        ]
    )
    messages = request_body(ctx)["messages"]
    assert messages[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            },
        ],
    }
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Two lookups.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "enc-data"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"x": 1}},
            {"type": "tool_use", "id": "toolu_2", "name": "b", "input": {}},
        ],
    }
    # Both results in ONE user turn, then the next user message on its own.
    assert messages[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "1"}],
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": [{"type": "text", "text": "boom"}],
                "is_error": True,
            },
        ],
    }
    assert messages[3] == {"role": "user", "content": "And now?"}
    assert len(messages) == 4


def test_opaque_blocks_go_back_verbatim_and_foreign_ids_are_normalized() -> None:
    server_block = (
        '{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}'
    )
    ctx = Context(
        messages=[
            UserMessage(content="q"),
            assistant(
                OpaqueContent(
                    provider="anthropic", block_type="server_tool_use", json=server_block
                ),
                OpaqueContent(provider="openai", block_type="web_search_call", json="{}"),
                TextContent(text="done"),
            ),
            UserMessage(content="again"),
            AssistantMessage(
                content=[ToolCall(id="call_abc|item_9", name="f", arguments={})],
                api="openai-responses",
                provider="openai",
                model="gpt-5",
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(tool_call_id="call_abc|item_9", tool_name="f"),
        ]
    )
    req = build_request(claude(), ctx, Options())
    assert server_block.encode() in req.body  # byte for byte
    messages = json.loads(req.body)["messages"]
    assert messages[1]["content"] == [json.loads(server_block), {"type": "text", "text": "done"}]
    call_id = messages[3]["content"][0]["id"]
    assert call_id != "call_abc|item_9"
    assert all(c.isalnum() or c in "_-" for c in call_id)
    assert messages[4]["content"][0]["tool_use_id"] == call_id


def test_extra_body_merges() -> None:
    body = request_body(Context.of("x"), Options(extra_body={"metadata": {"user_id": "u1"}}))
    assert body["metadata"] == {"user_id": "u1"}


def test_models_are_priced_in_the_catalogue() -> None:
    models = list_models("anthropic")
    assert models and all(m.api == "anthropic" and m.price_input > 0 for m in models)
    sonnet = next(m for m in models if m.id == "claude-sonnet-4-5")
    assert (sonnet.price_cache_read, sonnet.price_cache_write) == (0.3, 3.75)


# ---------------------------------------------------------------------------
# Hand-made transcripts
# ---------------------------------------------------------------------------


def test_overloaded_mid_stream_is_a_retryable_network_error() -> None:
    events = transcript("error-overloaded-mid-stream.sse")
    check_protocol(events)
    error = events[-1]
    assert isinstance(error, Error)
    assert error.kind == ErrorKind.NETWORK and error.retryable
    assert error.status is None  # the stream itself was a 200
    assert "Overloaded" in error.message
    assert accumulate(events).text == "Hello wor"  # what came before is kept
    assert error.usage == Usage(input=10, output=1)


def test_rate_limit_in_stream_is_throttled() -> None:
    error = transcript("rate-limit-in-stream.sse")[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.THROTTLED


def test_truncated_body_ends_early() -> None:
    events = transcript("truncated.sse")
    check_protocol(events)
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.NETWORK
    assert "ended early" in events[-1].message


def test_message_stop_is_the_terminal_marker() -> None:
    events = transcript("no-message-stop.sse")
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.NETWORK
    assert accumulate(events).text == "Done soon"


def test_max_tokens_mid_tool_call_closes_the_call() -> None:
    events = transcript("max-tokens-mid-tool.sse")
    check_protocol(events)
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == StopReason.LENGTH
    call = accumulate(events).tool_calls[0]
    assert call.arguments_json == '{"query": "weat'
    assert call.parse_error is not None  # the fold reports the cut-off JSON


def test_parallel_tool_calls_interleaved_by_index() -> None:
    events = transcript("parallel-tool-use-interleaved.sse")
    check_protocol(events)
    calls = accumulate(events).tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("toolu_A", "get_weather", {"city": "Paris"}),
        ("toolu_B", "get_time", {"tz": "Europe/Paris"}),
    ]
    assert isinstance(events[-1], Done) and events[-1].stop_reason == StopReason.TOOL_USE


def test_crlf_framing_and_non_ascii() -> None:
    data = (TRANSCRIPTS / "crlf-framing.sse").read_bytes()
    assert b"\r\n\r\n" in data
    events = run(data)
    assert accumulate(events).text == "café 🙂"
    # Split inside the multi-byte characters: same events.
    assert run(bytewise(data)) == events


def test_refusal_is_a_content_filter_error_keeping_the_text() -> None:
    events = transcript("refusal.sse")
    check_protocol(events)
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.CONTENT_FILTER
    assert accumulate(events).text == "I can"
    assert error.usage is not None and error.usage.output == 5


def test_context_window_exceeded_stop_reason() -> None:
    error = transcript("context-window-exceeded.sse")[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.CONTEXT_OVERFLOW


def test_pause_turn_is_a_stop_with_the_server_block_kept() -> None:
    events = transcript("pause-turn.sse")
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == StopReason.STOP
    block = accumulate(events).content[0]
    assert isinstance(block, OpaqueContent) and block.block_type == "server_tool_use"
    assert json.loads(block.json)["input"] == {"query": "x"}


def test_unknown_events_and_deltas_are_ignored() -> None:
    events = transcript("unknown-events-ignored.sse")
    check_protocol(events)
    assert isinstance(events[-1], Done)
    assert accumulate(events).text == "Cited."


def test_thinking_signature_redacted_and_stop_sequence() -> None:
    events = transcript("thinking-signature-stop-sequence.sse")
    message = accumulate(events)
    assert message.content == [
        ThinkingContent(thinking="Let me think.", signature="EqQBCkYI"),
        ThinkingContent(thinking="", signature="EmwKAhgBEgy3va3pzix", redacted=True),
        TextContent(text="Answer"),
    ]
    assert message.stop_reason == StopReason.STOP
    call = open_call(claude(), Context.of("x"), Options())
    call.receive_response(200, SSE)
    call.receive_data((TRANSCRIPTS / "thinking-signature-stop-sequence.sse").read_bytes())
    assert call.response_id == "msg_T1"  # on the call: Start goes out before the id is known


def test_delta_for_the_wrong_block_kind_is_a_protocol_error() -> None:
    events = transcript("delta-type-mismatch.sse")
    check_protocol(events)
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.PROTOCOL


def test_usage_message_delta_overrides_message_start_and_prices() -> None:
    m = claude(price_input=3, price_output=15, price_cache_read=0.3, price_cache_write=3.75)
    frames = [
        encode_sse(
            json.dumps(
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_1",
                        "usage": {
                            "input_tokens": 100,
                            "cache_read_input_tokens": 1000,
                            "cache_creation_input_tokens": 0,
                            "output_tokens": 1,
                        },
                    },
                }
            ),
            event="message_start",
        ),
        encode_sse(
            json.dumps(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"input_tokens": 120, "output_tokens": 50},
                }
            ),
            event="message_delta",
        ),
        encode_sse('{"type":"message_stop"}', event="message_stop"),
    ]
    done = replay("anthropic", b"".join(frames), model=m, headers=SSE)[-1]
    assert isinstance(done, Done)
    assert done.usage == Usage(input=120, cache_read=1000, output=50)
    assert done.cost.total == pytest.approx((120 * 3 + 1000 * 0.3 + 50 * 15) / 1e6)


def test_http_errors_are_classified_from_real_bodies() -> None:
    # Bodies as Anthropic documents them (docs.anthropic.com/en/api/errors).
    def error(status: int, kind: str, message: str) -> Error:
        body = json.dumps({"type": "error", "error": {"type": kind, "message": message}})
        call = open_call(claude(), Context.of("x"), Options(api_key="k"))
        call.receive_response(status, [("content-type", "application/json")])
        call.receive_data(body.encode())
        out = call.receive_eof()[-1]
        assert isinstance(out, Error)
        return out

    assert error(529, "overloaded_error", "Overloaded").kind == ErrorKind.NETWORK
    assert (
        error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ).kind
        == ErrorKind.THROTTLED
    )
    assert error(401, "authentication_error", "invalid x-api-key").kind == ErrorKind.AUTH
    assert (
        error(
            400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
        ).kind
        == ErrorKind.CONTEXT_OVERFLOW
    )
    assert (
        error(
            400,
            "invalid_request_error",
            "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`.",
        ).kind
        == ErrorKind.INVALID_REQUEST
    )
    assert (
        error(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
        ).kind
        == ErrorKind.AUTH
    )
    retry = classify_http_error(
        429,
        [("retry-after", "17")],
        b'{"type":"error","error":{"type":"rate_limit_error","message":"x"}}',
    )
    assert retry.retry_after == 17.0


# ---------------------------------------------------------------------------
# Corpus conformance
# ---------------------------------------------------------------------------


def _frame_chunks(text: str) -> bytes:
    """Frame a Vercel ``*.chunks.txt`` fixture the way the corpus framed its .sse copy."""
    return b"".join(
        encode_sse(line, event=json.loads(line)["type"])
        for line in text.splitlines()
        if line.strip()
    )


@pytest.mark.parametrize("entry", corpus_entries("anthropic"))
def test_corpus_conformance(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    data = body(entry)
    if entry["file"].endswith(".chunks.txt"):
        # The unframed fixture: framed here, it must decode exactly like the corpus's copy.
        copy = {**entry, "file": entry["file"].replace(".chunks.txt", ".sse")}
        assert run(_frame_chunks(data.decode())) == run(body(copy))
        return
    events = run(data)
    check_protocol(events)
    assert isinstance(events[-1], Done), events[-1]
    want = expected(entry)
    assert want is not None
    message = accumulate(events)
    got_blocks: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent):
            got_blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                got_blocks.append({"type": "redacted_thinking", "data": block.signature})
            else:
                got_blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
        elif isinstance(block, ToolCall):
            got_blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
        elif isinstance(block, OpaqueContent):
            got_blocks.append(json.loads(block.json))
    want_blocks: list[dict[str, Any]] = []
    for wire_block in want["content"]:
        wanted = dict(wire_block)
        if wanted["type"] == "text":
            # Citations are not carried by the event protocol (see the module docstring).
            wanted.pop("citations", None)
        if wanted["type"] == "tool_use":
            wanted.pop("caller", None)  # an additive field of the start block, not streamed
        want_blocks.append(wanted)
    for got, want_block in zip(got_blocks, want_blocks, strict=True):
        if want_block["type"] in ("text", "thinking", "redacted_thinking", "tool_use"):
            assert got == want_block
        else:
            # Server blocks: carried whole. The reducer dropped fields it did not know
            # (e.g. "caller"), so compare what it kept.
            assert {k: got[k] for k in want_block} == want_block
    usage = want["usage"]
    assert message.usage.input == usage["input_tokens"]
    assert message.usage.output == usage["output_tokens"]
    assert message.usage.cache_read == (usage.get("cache_read_input_tokens") or 0)
    assert message.usage.cache_write == (usage.get("cache_creation_input_tokens") or 0)
    stop = {
        "end_turn": StopReason.STOP,
        "tool_use": StopReason.TOOL_USE,
        "pause_turn": StopReason.LENGTH,  # the turn is not over: the fold says incomplete
        "max_tokens": StopReason.LENGTH,
    }[want["stop_reason"]]
    assert message.stop_reason == stop
    done = events[-1]
    assert (done.paused is True) == (want["stop_reason"] == "pause_turn")


# ---------------------------------------------------------------------------
# Properties over generated transcripts
# ---------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_args = st.dictionaries(
    st.text(st.characters(codec="ascii", categories=["L"]), min_size=1, max_size=5),
    st.one_of(st.integers(-5, 5), _text, st.booleans(), st.none()),
    max_size=3,
)


@st.composite
def _fragments(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    return split_at(text, cuts)


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[bytes, list[dict[str, Any]], StopReason, Usage]:
    """A valid Anthropic body, the blocks it means, its stop reason and usage."""
    kinds = draw(
        st.lists(st.sampled_from(["text", "thinking", "redacted", "tool", "server"]), max_size=5)
    )
    blocks: list[dict[str, Any]] = []
    schedules: list[list[dict[str, Any]]] = []
    for index, kind in enumerate(kinds):
        start: dict[str, Any]
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            text = draw(_text)
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": t} for t in draw(_fragments(text))]
            blocks.append({"type": "text", "text": text})
        elif kind == "thinking":
            text, sig = draw(_text), draw(st.text("abcXYZ012+/=", min_size=1, max_size=12))
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": t} for t in draw(_fragments(text))]
            deltas += [{"type": "signature_delta", "signature": sig}]
            blocks.append({"type": "thinking", "thinking": text, "signature": sig})
        elif kind == "redacted":
            secret = draw(st.text("abcXYZ012+/=", min_size=1, max_size=12))
            start = {"type": "redacted_thinking", "data": secret}
            blocks.append({"type": "redacted_thinking", "data": secret})
        elif kind == "tool":
            args = draw(_args)
            raw = json.dumps(args, ensure_ascii=False)
            start = {"type": "tool_use", "id": f"toolu_{index}", "name": "f", "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": t} for t in draw(_fragments(raw))
            ]
            blocks.append({"type": "tool_use", "id": f"toolu_{index}", "name": "f", "input": args})
        else:
            args = draw(_args)
            raw = json.dumps(args, ensure_ascii=False)
            start = {
                "type": "server_tool_use",
                "id": f"srv_{index}",
                "name": "web_search",
                "input": {},
            }
            deltas = [
                {"type": "input_json_delta", "partial_json": t} for t in draw(_fragments(raw))
            ]
            blocks.append({**start, "input": args})
        schedule = [{"type": "content_block_start", "index": index, "content_block": start}]
        schedule += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        schedule.append({"type": "content_block_stop", "index": index})
        schedules.append(schedule)
    # Interleave the blocks (parallel tool calls), keeping starts in index order.
    frames: list[dict[str, Any]] = []
    positions = [0] * len(schedules)
    started = 0
    while any(p < len(s) for p, s in zip(positions, schedules, strict=True)):
        ready = [
            i
            for i, s in enumerate(schedules)
            if positions[i] < len(s) and (positions[i] > 0 or i == started)
        ]
        i = draw(st.sampled_from(ready))
        if positions[i] == 0:
            started += 1
        if kinds[i] == "server":
            # Anthropic streams a server block start to stop; its content index is
            # taken at its stop (see the module docstring), so it is not interleaved.
            frames.extend(schedules[i])
            positions[i] = len(schedules[i])
            continue
        frames.append(schedules[i][positions[i]])
        positions[i] += 1
        if draw(st.booleans()) and draw(st.booleans()):
            frames.append({"type": "ping"})
    wire_stop, stop = draw(
        st.sampled_from(
            [
                ("end_turn", StopReason.STOP),
                ("stop_sequence", StopReason.STOP),
                ("tool_use", StopReason.TOOL_USE),
                ("max_tokens", StopReason.LENGTH),
            ]
        )
    )
    if stop == StopReason.STOP and any(b["type"] == "tool_use" for b in blocks):
        stop = StopReason.TOOL_USE  # a turn that ended with tool calls, whatever the wire said
    inp, out, cached = (
        draw(st.integers(0, 10**6)),
        draw(st.integers(0, 10**5)),
        draw(st.integers(0, 999)),
    )
    head: dict[str, Any] = {
        "type": "message_start",
        "message": {
            "id": "msg_gen",
            "usage": {"input_tokens": inp, "cache_read_input_tokens": cached, "output_tokens": 1},
        },
    }
    tail: list[dict[str, Any]] = [
        {
            "type": "message_delta",
            "delta": {"stop_reason": wire_stop},
            "usage": {"output_tokens": out},
        },
        {"type": "message_stop"},
    ]
    crlf = draw(st.booleans())
    data = b"".join(
        encode_sse(json.dumps(f, ensure_ascii=False), event=f["type"])
        for f in [head, *frames, *tail]
    )
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    return data, blocks, stop, Usage(input=inp, cache_read=cached, output=out)


def _as_wire(message: AssistantMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                out.append({"type": "redacted_thinking", "data": block.signature})
            else:
                out.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
        elif isinstance(block, ToolCall):
            out.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
        elif isinstance(block, OpaqueContent):
            out.append(json.loads(block.json))
    return out


@given(transcripts(), st.lists(st.integers(0, 10**6), max_size=8))
def test_any_chunking_gives_the_intended_stream(
    case: tuple[bytes, list[dict[str, Any]], StopReason, Usage], cuts: list[int]
) -> None:
    data, blocks, stop, usage = case
    whole = run(data)
    offsets = sorted({c % (len(data) + 1) for c in cuts})
    pieces = split_at(data, offsets)
    assert run(pieces) == whole
    check_protocol(whole)
    done = whole[-1]
    assert isinstance(done, Done)
    assert done.stop_reason == stop and done.usage == usage
    assert _as_wire(accumulate(whole)) == blocks


@given(transcripts(), st.data())
def test_mutated_transcripts_end_in_a_typed_error_never_an_exception(
    case: tuple[bytes, list[dict[str, Any]], StopReason, Usage], data: st.DataObject
) -> None:
    raw = case[0]
    mutation = data.draw(st.sampled_from(["truncate", "flip", "drop_line"]))
    if mutation == "truncate":
        cut = data.draw(st.integers(0, len(raw) - 1))
        mutated = raw[:cut]
    elif mutation == "flip":
        at = data.draw(st.integers(0, len(raw) - 1))
        mutated = raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1 :]
    else:
        lines = raw.split(b"\n")
        drop = data.draw(st.integers(0, len(lines) - 1))
        mutated = b"\n".join(lines[:drop] + lines[drop + 1 :])
    events = run(mutated)
    check_protocol(events)  # still one valid stream, whatever the damage
    last = events[-1]
    if mutation == "truncate" and not raw[:cut].rstrip().endswith(b'"message_stop"}'):
        assert isinstance(last, Error) and last.kind is not None


def test_no_exception_escapes_on_garbage() -> None:
    for junk in (
        b"data: {not json}\n\n",
        b"data: []\n\n",
        b'data: {"type": 5}\n\n',
        b"\xff\xfe\n\n",
    ):
        events = run(junk)
        check_protocol(events)
        assert isinstance(events[-1], Error)


def test_start_event_names_the_call() -> None:
    events = replay("anthropic", b"", model=claude(), headers=SSE)
    assert msgspec.structs.asdict(events[0])["api"] == "anthropic"


def test_a_run_stops_where_the_content_cap_ends_the_stream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the one-by-one path stops at the delta over the cap; a run must not go on
    # decoding what follows (here a block started twice: a "malformed" warning)
    def frame(obj: dict[str, Any]) -> bytes:
        return encode_sse(json.dumps(obj))

    head = frame({"type": "message_start", "message": {"id": "m", "model": "x", "usage": {}}})
    start = frame({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})
    deltas = [
        frame(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
        )
        for t in ("aaaa", "bbbb")
    ]
    outcomes = []
    for reads in ([head, start, *deltas, start], [head + start, b"".join([*deltas, start])]):
        call = open_call(claude(), Context.of("q"), Options(api_key="k", max_content_bytes=6))
        events = call.receive_response(200, SSE)
        for read in reads:
            events += call.receive_data(read)
        outcomes.append(events)
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[1][-1], Error) and "max_content_bytes" in outcomes[1][-1].message
    assert "malformed" not in caplog.text
