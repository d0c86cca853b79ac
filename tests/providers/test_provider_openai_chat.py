"""OpenAI Chat Completions and the compatible family: requests, streams, corpus, properties."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chunking import split_at
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
    Options,
    Start,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    open_call,
    replay,
)
from streamfn.core._accumulate import accumulate, check_protocol
from streamfn.core.dialects.openai_chat import build_request

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "openai-chat"
SSE = [("content-type", "text/event-stream")]


def model(provider: str = "openai", id: str = "gpt-4o-mini", **kw: Any) -> Model:
    base = kw.pop("base_url", f"https://{provider}.example/v1")
    return Model(id=id, provider=provider, api="openai-chat", base_url=base, **kw)


def request_body(m: Model, context: Context, options: Options | None = None) -> dict[str, Any]:
    req = build_request(m, context, options or Options(api_key="sk-test"))
    result: dict[str, Any] = json.loads(req.body)
    return result


def run(data: bytes, provider: str = "openai", chunks: list[int] | None = None) -> list[Event]:
    """Replay ``data`` cut at ``chunks`` (sorted cut offsets) or whole."""
    if chunks is None:
        return replay("openai-chat", data, provider=provider, headers=SSE)
    pieces = [p for p in split_at(data, chunks) if p]
    return replay("openai-chat", pieces, provider=provider, headers=SSE)


def fold(events: list[Event]) -> dict[str, Any]:
    """The final message (through the shared fold), flattened for comparisons."""
    message = accumulate(events)
    blocks: list[tuple[Any, ...]] = []
    for b in message.content:
        if isinstance(b, TextContent):
            blocks.append(("text", b.text))
        elif isinstance(b, ThinkingContent):
            blocks.append(("thinking", b.thinking, b.signature))
        elif isinstance(b, ToolCall):
            blocks.append(("tool", b.id, b.name, b.arguments_json))
    return {
        "blocks": blocks,
        "text": message.text,
        "thinking": message.thinking,
        "tools": [(c.id, c.name, c.arguments_json) for c in message.tool_calls],
        "calls": message.tool_calls,
        "usage": message.usage,
        "message": message,
    }


# --------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------

WEATHER = Tool(
    name="get_weather",
    description="Current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "units": {"enum": ["c", "f"]}},
        "required": ["city"],
    },
)


def test_request_minimal_openai() -> None:
    req = build_request(
        model(), Context.of("Hi", system_prompt="Be brief."), Options(api_key="sk-1")
    )
    assert req.method == "POST"
    assert req.url == "https://openai.example/v1/chat/completions"
    headers = dict(req.headers)
    assert headers["authorization"] == "Bearer sk-1"
    assert headers["content-type"] == "application/json"
    assert json.loads(req.body) == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert "sk-1" not in repr(req)


def test_request_multi_turn_images_tools_and_results() -> None:
    png = "iVBORw0KGgo="
    context = Context(
        system_prompt="sys",
        tools=[WEATHER],
        messages=[
            UserMessage(
                content=[
                    TextContent(text="What is here?"),
                    ImageContent(data=png, mime_type="image/png"),
                ]
            ),
            AssistantMessage(
                content=[
                    TextContent(text="Let me check."),
                    ToolCall(
                        id="call_1",
                        name="get_weather",
                        arguments={"city": "Paris"},
                        arguments_json='{"city": "Paris"}',
                    ),
                ],
                api="openai-chat",
                provider="openai",
                model="gpt-4o-mini",
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="get_weather",
                content=[TextContent(text="18C, cloudy")],
            ),
            UserMessage(content="Thanks"),
        ],
    )
    body_ = request_body(model(), context, Options(api_key="k", tool_choice="get_weather"))
    assert body_["messages"] == [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is here?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C, cloudy"},
        {"role": "user", "content": "Thanks"},
    ]
    assert body_["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert body_["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


def test_request_orphaned_tool_call_gets_a_result_and_bad_arguments_are_reencoded() -> None:
    context = Context(
        messages=[
            UserMessage(content="go"),
            AssistantMessage(
                content=[
                    ToolCall(
                        id="call_9",
                        name="f",
                        arguments={},
                        arguments_json='{"a": ',
                        parse_error="truncated",
                    )
                ],
                provider="openai",
                api="openai-chat",
                model="gpt-4o-mini",
            ),
            UserMessage(content="never mind"),
        ]
    )
    messages = request_body(model(), context)["messages"]
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert messages[2]["role"] == "tool" and messages[2]["tool_call_id"] == "call_9"
    assert messages[3] == {"role": "user", "content": "never mind"}


def test_request_tool_result_images_follow_as_a_user_turn() -> None:
    context = Context(
        messages=[
            UserMessage(content="shot"),
            AssistantMessage(
                content=[ToolCall(id="c1", name="screenshot")],
                provider="openai",
                api="openai-chat",
                model="gpt-4o-mini",
            ),
            ToolResultMessage(
                tool_call_id="c1",
                tool_name="screenshot",
                content=[
                    TextContent(text="done"),
                    ImageContent(data="AAAA", mime_type="image/jpeg"),
                ],
            ),
        ]
    )
    messages = request_body(model(), context)["messages"]
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": "done"}
    assert messages[3]["role"] == "user"
    assert messages[3]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/jpeg;base64,AAAA"},
    }


def test_request_generation_knobs() -> None:
    options = Options(
        api_key="k",
        temperature=0.2,
        top_p=0.9,
        max_tokens=256,
        stop=["END"],
        seed=7,
        n=2,
        tool_choice="required",
        extra_body={"user": "u-1", "logprobs": True},
    )
    context = Context(messages=[UserMessage(content="x")], tools=[WEATHER])
    openai = request_body(model(), context, options)
    assert openai["temperature"] == 0.2 and openai["top_p"] == 0.9
    assert openai["max_completion_tokens"] == 256 and "max_tokens" not in openai
    assert openai["stop"] == ["END"] and openai["seed"] == 7 and openai["n"] == 2
    assert openai["tool_choice"] == "required"
    assert openai["user"] == "u-1" and openai["logprobs"] is True
    groq = request_body(model("groq", "llama-3.3-70b-versatile"), context, options)
    assert groq["max_tokens"] == 256 and "max_completion_tokens" not in groq


def test_request_openai_reasoning_model() -> None:
    m = model(id="o4-mini", reasoning=True)
    options = Options(api_key="k", thinking=ThinkingLevel.HIGH, temperature=0.5, max_tokens=100)
    body_ = request_body(m, Context.of("q", system_prompt="rules"), options)
    assert body_["reasoning_effort"] == "high"
    assert body_["messages"][0] == {"role": "developer", "content": "rules"}
    assert "temperature" not in body_  # rejected by OpenAI reasoning models
    assert body_["max_completion_tokens"] == 100
    minimal = request_body(m, Context.of("q"), Options(thinking=ThinkingLevel.MINIMAL))
    assert minimal["reasoning_effort"] == "low"  # "minimal" came with gpt-5
    gpt5 = model(id="gpt-5", reasoning=True)
    minimal = request_body(gpt5, Context.of("q"), Options(thinking=ThinkingLevel.MINIMAL))
    assert minimal["reasoning_effort"] == "minimal"
    off = request_body(m, Context.of("q"), Options(thinking=ThinkingLevel.OFF))
    assert "reasoning_effort" not in off
    plain = request_body(model(), Context.of("q"), Options(thinking=ThinkingLevel.HIGH))
    assert "reasoning_effort" not in plain  # gpt-4o-mini has no reasoning knob


@pytest.mark.parametrize(
    ("provider", "level", "expected_fields"),
    [
        ("xai", ThinkingLevel.MEDIUM, {"reasoning_effort": "high"}),
        ("xai", ThinkingLevel.MINIMAL, {"reasoning_effort": "low"}),
        ("groq", ThinkingLevel.MINIMAL, {"reasoning_effort": "low"}),
        ("openrouter", ThinkingLevel.MEDIUM, {"reasoning": {"effort": "medium"}}),
        ("openrouter", ThinkingLevel.OFF, {"reasoning": {"enabled": False}}),
        ("zai", ThinkingLevel.HIGH, {"thinking": {"type": "enabled"}}),
        ("zai", ThinkingLevel.OFF, {"thinking": {"type": "disabled"}}),
        ("deepseek", ThinkingLevel.HIGH, {}),
    ],
)
def test_request_thinking_per_provider(
    provider: str, level: ThinkingLevel, expected_fields: dict[str, Any]
) -> None:
    model_id = "grok-3-mini" if provider == "xai" else "m"  # xAI: grok-3-mini's knob
    body_ = request_body(
        model(provider, model_id, reasoning=True), Context.of("q"), Options(thinking=level)
    )
    got = {k: body_[k] for k in ("reasoning_effort", "reasoning", "thinking") if k in body_}
    assert got == expected_fields


def test_request_openrouter_thinking_budget() -> None:
    body_ = request_body(
        model("openrouter", "anthropic/claude-sonnet-4.5", reasoning=True),
        Context.of("q"),
        Options(thinking=ThinkingLevel.LOW, thinking_budget=2048),
    )
    assert body_["reasoning"] == {"max_tokens": 2048}


def test_request_azure_deployment() -> None:
    m = model(
        "azure",
        "gpt-4o",
        base_url="https://res.openai.azure.com/",
        extra={"deployment": "prod-4o", "api_version": "2024-10-21"},
    )
    req = build_request(m, Context.of("hi"), Options(api_key="az-key", max_tokens=5))
    assert req.url == (
        "https://res.openai.azure.com/openai/deployments/prod-4o/chat/completions"
        "?api-version=2024-10-21"
    )
    headers = dict(req.headers)
    assert headers["api-key"] == "az-key" and "authorization" not in headers
    body_ = json.loads(req.body)
    assert "model" not in body_  # the deployment URL names it
    v1 = build_request(
        model("azure", "gpt-4o", base_url="https://res.openai.azure.com/openai/v1"),
        Context.of("hi"),
        Options(api_key="k"),
    )
    assert v1.url == "https://res.openai.azure.com/openai/v1/chat/completions"
    assert json.loads(v1.body)["model"] == "gpt-4o"


def test_request_mistral_quirks() -> None:
    context = Context(
        messages=[
            UserMessage(content="w"),
            AssistantMessage(
                content=[ToolCall(id="call_abc_very_long_id", name="weather", arguments={"c": 1})],
                provider="openai",
                api="openai-chat",
                model="gpt-4o",
            ),
            ToolResultMessage(
                tool_call_id="call_abc_very_long_id",
                tool_name="weather",
                content=[TextContent(text="sunny")],
            ),
        ]
    )
    body_ = request_body(model("mistral", "mistral-small-latest"), context)
    assert "stream_options" not in body_  # Mistral rejects unknown fields
    call_id = body_["messages"][1]["tool_calls"][0]["id"]
    assert len(call_id) == 9 and call_id.isalnum()
    assert body_["messages"][2] == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": "sunny",
        "name": "weather",
    }


def test_request_thinking_replay() -> None:
    turn = AssistantMessage(
        content=[ThinkingContent(thinking="because"), TextContent(text="4")],
        provider="deepseek",
        api="openai-chat",
        model="deepseek-reasoner",
    )
    context = Context(messages=[UserMessage(content="2+2"), turn, UserMessage(content="and 3+3")])
    same = request_body(model("deepseek", "deepseek-reasoner"), context)["messages"][1]
    assert same == {"role": "assistant", "content": "4", "reasoning_content": "because"}
    other = request_body(model("openai", "gpt-4o"), context)["messages"][1]
    assert other == {"role": "assistant", "content": "because4"}  # foreign thinking becomes text


def test_request_headers_and_base_url_overrides() -> None:
    m = model("openrouter", "x/y", headers={"HTTP-Referer": "https://app.example"})
    req = build_request(
        m,
        Context.of("q"),
        Options(api_key="k", base_url="http://127.0.0.1:9/v1/", headers={"X-Title": "t"}),
    )
    assert req.url == "http://127.0.0.1:9/v1/chat/completions"
    headers = dict(req.headers)
    assert headers["HTTP-Referer"] == "https://app.example" and headers["X-Title"] == "t"


def test_open_call_keyless_server_sends_no_authorization() -> None:
    from streamfn.core.catalogue._models import openai_compatible

    call = open_call(openai_compatible("qwen", "http://localhost:8000/v1"), Context.of("q"))
    assert "authorization" not in dict(call.request.headers)


# --------------------------------------------------------------------------
# Hand-made transcripts (what the corpus lacks)
# --------------------------------------------------------------------------


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def test_error_mid_stream_is_classified_and_keeps_text() -> None:
    events = run(transcript("error-mid-stream.sse"))
    check_protocol(events)
    err = events[-1]
    assert isinstance(err, Error) and err.kind == ErrorKind.NETWORK and err.retryable
    assert "server had an error" in err.message
    assert fold(events)["text"] == "Hello wor"


def test_rate_limit_in_stream_is_throttled() -> None:
    err = run(transcript("rate-limit-in-stream.sse"))[-1]
    assert isinstance(err, Error) and err.kind == ErrorKind.THROTTLED


def test_truncated_body_is_a_network_error() -> None:
    events = run(transcript("truncated.sse"))
    check_protocol(events)
    err = events[-1]
    assert isinstance(err, Error) and err.kind == ErrorKind.NETWORK
    assert "ended early" in err.message
    assert fold(events)["text"] == "The answer is"


def test_interleaved_parallel_tool_calls() -> None:
    events = run(transcript("parallel-tool-calls-interleaved.sse"))
    check_protocol(events)
    folded = fold(events)
    assert [(i, n, json.loads(a)) for i, n, a in folded["tools"]] == [
        ("call_a", "get_weather", {"city": "Zürich"}),
        ("call_b", "get_time", {"tz": "Europe/Paris"}),
    ]
    assert isinstance(events[-1], Done) and events[-1].stop_reason == StopReason.TOOL_USE
    assert events[-1].usage == Usage(input=80, output=30)


def test_crlf_framing_comments_and_cached_usage() -> None:
    data = transcript("crlf-framing.sse")
    assert b"\r\n" in data
    events = run(data)
    assert fold(events)["text"] == "Grüße aus 東京 🙂"
    done = events[-1]
    assert isinstance(done, Done)
    assert done.usage == Usage(input=6, cache_read=4, output=5)


def test_split_utf8_at_every_byte() -> None:
    data = transcript("crlf-framing.sse")
    one_byte = run(data, chunks=list(range(1, len(data))))
    assert one_byte == run(data)


def test_finish_reason_without_done_still_completes() -> None:
    events = run(transcript("finish-without-done.sse"), provider="vllm")
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == StopReason.STOP
    assert done.usage == Usage(input=3, output=1)


def test_azure_content_filter_ends_in_content_filter_error() -> None:
    events = run(transcript("azure-content-filter.sse"), provider="azure")
    check_protocol(events)
    err = events[-1]
    assert isinstance(err, Error) and err.kind == ErrorKind.CONTENT_FILTER
    assert fold(events)["text"] == "Here is how"


def test_parallel_calls_all_numbered_zero_are_split_by_id() -> None:
    folded = fold(run(transcript("tool-calls-all-index-zero.sse"), provider="openai-compatible"))
    assert [(i, json.loads(a)) for i, _, a in folded["tools"]] == [
        ("call_1", {"q": "a"}),
        ("call_2", {"q": "b"}),
    ]


def test_fragments_without_index_or_id_continue_the_last_call() -> None:
    events = run(transcript("tool-call-no-index-no-id.sse"), provider="openai-compatible")
    check_protocol(events)
    assert fold(events)["tools"] == [("call_0", "count", '{"n":3}')]


def test_alternating_reasoning_and_text_keep_their_order() -> None:
    events = run(transcript("reasoning-alternating.sse"), provider="deepseek")
    check_protocol(events)
    assert fold(events)["blocks"] == [
        ("thinking", "Let me think.", None),
        ("text", "First."),
        ("thinking", "More thought.", None),
        ("text", "Second."),
    ]
    assert events[-1].usage == Usage(input=12, output=40, reasoning=20)  # type: ignore[union-attr]


def test_http_429_is_throttled_with_retry_after() -> None:
    call = open_call(model(), Context.of("q"), Options(api_key="k"))
    assert (
        call.receive_response(
            429, [("content-type", "application/json"), ("retry-after-ms", "1500")]
        )
        == []
    )
    call.receive_data(
        b'{"error":{"message":"Rate limit reached for gpt-4o-mini on requests per min (RPM)",'
        b'"type":"requests","param":null,"code":"rate_limit_exceeded"}}'
    )
    events = call.receive_eof()
    err = events[-1]
    assert isinstance(events[0], Start)
    assert isinstance(err, Error) and err.kind == ErrorKind.THROTTLED and err.retry_after == 1.5


def test_cost_is_priced_with_the_model() -> None:
    m = model(price_input=1.0, price_output=2.0, price_cache_read=0.5)
    call = open_call(m, Context.of("q"), Options(api_key="k"))
    events = call.receive_response(200, SSE) + call.receive_data(transcript("crlf-framing.sse"))
    done = events[-1]
    assert isinstance(done, Done)
    assert done.cost.total == pytest.approx((6 * 1.0 + 5 * 2.0 + 4 * 0.5) / 1e6)


def test_large_answer_hits_the_content_cap() -> None:
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 1000 + b'"}}]}\n\n'
    events = replay(
        "openai-chat", chunk * 10, headers=SSE, options=Options(api_key="k", max_content_bytes=5000)
    )
    err = events[-1]
    assert isinstance(err, Error) and err.kind == ErrorKind.LIMIT


# --------------------------------------------------------------------------
# Corpus conformance: every recorded openai-chat stream
# --------------------------------------------------------------------------

_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_use"}
# The .chunks.txt fixtures have no SSE framing; their framed .sse copies are replayed instead.
SSE_ENTRIES = [
    p
    for p in corpus_entries("openai-chat")
    if p.values[0] is None or str(p.values[0]["file"]).endswith(".sse")
]


@pytest.mark.parametrize("entry", SSE_ENTRIES)
def test_corpus_conformance(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    provider = entry["provider"]
    data = body(entry)
    events = replay("openai-chat", data, provider=provider)
    check_protocol(events)

    exp = expected(entry)
    assert exp is not None
    choice = exp["choices"][0]  # n > 1: only choice 0 is streamed (module docstring)
    folded = fold(events)
    # Refusals are streamed as text (module docstring), so text = content + refusal.
    assert folded["text"] == (choice["content"] or "") + (choice.get("refusal") or "")
    assert folded["thinking"] == (choice.get("reasoning") or "")
    assert [(c.id, c.name, c.arguments) for c in folded["calls"]] == [
        (t["id"], t["name"], json.loads(t["arguments"] or "{}")) for t in choice["tool_calls"]
    ]
    assert all(c.parse_error is None for c in folded["calls"])
    terminal = events[-1]
    if exp.get("errors"):
        # An error inside the stream ends it, even after a finish reason. The
        # reducer also records OpenRouter's finish_reason "length" before its
        # error chunk ("Token limit reached"); the error is what a caller must see.
        assert isinstance(terminal, Error) and terminal.kind == ErrorKind.INVALID_REQUEST
        assert exp["errors"][0]["message"] in terminal.message
    else:
        assert isinstance(terminal, Done)
        assert terminal.stop_reason == _FINISH[choice["finish_reason"]]
    usage = exp.get("usage")
    got = folded["usage"] or Usage()
    if usage is None:
        # Azure filter captures and Groq's error carry no usage.
        assert got.total == 0
        return
    prompt = usage["prompt_tokens"]
    completion = usage["completion_tokens"]
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    assert got.input + got.cache_read + got.cache_write == prompt
    assert got.cache_read == cached
    if usage["total_tokens"] == prompt + completion + reasoning and reasoning:
        # xAI counts reasoning outside completion_tokens; our output includes it.
        assert got.output == completion + reasoning
    else:
        assert got.output == completion
    assert got.reasoning == min(reasoning, got.output)


def test_corpus_openrouter_anthropic_signature_is_kept() -> None:
    entry = next(
        (
            p.values[0]
            for p in SSE_ENTRIES
            if p.values[0] and "claude-reasoning" in p.values[0]["file"]
        ),
        None,
    )
    entry = require_corpus(entry)
    thinking = [
        b for b in fold(replay("openai-chat", body(entry), provider="openrouter"))["blocks"]
    ]
    assert thinking[0][0] == "thinking" and thinking[0][2] and thinking[0][2].startswith("Et0B")


# --------------------------------------------------------------------------
# Properties over generated wire transcripts
# --------------------------------------------------------------------------

_texts = st.text(min_size=1, max_size=12)
_names = st.sampled_from(["get_weather", "search", "lookup", "run_code"])
_args = st.dictionaries(
    st.text(min_size=1, max_size=6),
    st.one_of(st.integers(-5, 5), st.text(max_size=8), st.booleans()),
    max_size=3,
)


def _chunk(choices: list[dict[str, Any]], ascii_only: bool, **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-gen", "object": "chat.completion.chunk", "choices": choices, **extra}


@st.composite
def wire_transcripts(draw: st.DrawFn) -> tuple[bytes, dict[str, Any]]:
    """A valid streamed completion, randomly composed, and what it should fold to."""
    runs: list[tuple[str, list[str]]] = []
    kind = draw(st.sampled_from(["text", "thinking"]))
    for _ in range(draw(st.integers(0, 4))):
        runs.append((kind, draw(st.lists(_texts, min_size=1, max_size=4))))
        kind = "text" if kind == "thinking" else "thinking"
    calls = []
    for i in range(draw(st.integers(0, 3))):
        args = json.dumps(draw(_args), ensure_ascii=draw(st.booleans()))
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(args) - 1)), max_size=4)))
        fragments = [f for f in split_at(args, cuts) if f]
        calls.append(
            {"id": f"call_{i}x", "name": draw(_names), "args": args, "fragments": fragments}
        )
    thinking_field = draw(st.sampled_from(["reasoning_content", "reasoning"]))
    repeat_ids = draw(st.booleans())

    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    for kind, pieces in runs:
        for piece in pieces:
            deltas.append({"content": piece} if kind == "text" else {thinking_field: piece})
    # Interleave the calls' fragments, each call's own order kept, first fragments in call order.
    queues = [[(c, j) for j in range(len(c["fragments"]))] for c in calls]
    started = 0
    while any(queues):
        ready = [q for q in queues[: started + 1] if q]
        queue = draw(st.sampled_from(ready))
        call, j = queue.pop(0)
        number = calls.index(call)
        started = max(started, number + 1)
        fragment: dict[str, Any] = {
            "index": number,
            "function": {"arguments": call["fragments"][j]},
        }
        if j == 0:
            fragment.update(id=call["id"], type="function")
            fragment["function"]["name"] = call["name"]
        elif repeat_ids:
            fragment["id"] = call["id"]
        deltas.append({"tool_calls": [fragment]})
    finish = "tool_calls" if calls else draw(st.sampled_from(["stop", "length"]))
    prompt, completion = draw(st.integers(0, 10_000)), draw(st.integers(0, 10_000))
    cached, reasoning = draw(st.integers(0, prompt)), draw(st.integers(0, completion))
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    ascii_only = draw(st.booleans())
    objs = [_chunk([{"index": 0, "delta": d, "finish_reason": None}], ascii_only) for d in deltas]
    if draw(st.booleans()):
        objs.append(_chunk([{"index": 0, "delta": {}, "finish_reason": finish}], ascii_only))
        objs.append(_chunk([], ascii_only, usage=usage))
    else:  # Mistral/DeepSeek style: usage in the finish chunk
        objs.append(
            _chunk([{"index": 0, "delta": {}, "finish_reason": finish}], ascii_only, usage=usage)
        )
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    lines: list[str] = []
    for obj in objs:
        if draw(st.integers(0, 9)) == 0:
            lines += [": keep-alive", ""]
        lines += ["data: " + json.dumps(obj, ensure_ascii=ascii_only), ""]
    lines += ["data: [DONE]", ""]
    data = (eol.join(lines) + eol).encode()
    blocks: list[tuple[Any, ...]] = [
        ("text", "".join(p)) if k == "text" else ("thinking", "".join(p), None) for k, p in runs
    ]
    order = sorted(calls, key=lambda c: calls.index(c))
    blocks += [("tool", c["id"], c["name"], c["args"]) for c in order]
    intent = {
        "blocks": blocks,
        "stop": _FINISH[finish],
        "usage": Usage(
            input=prompt - cached,
            cache_read=cached,
            output=completion,
            reasoning=reasoning,
        ),
    }
    return data, intent


def _cuts(data: bytes) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(1, max(1, len(data) - 1)), max_size=30).map(sorted)


@given(wire_transcripts(), st.data())
def test_any_chunking_gives_the_intended_stream(
    generated: tuple[bytes, dict[str, Any]], data: st.DataObject
) -> None:
    raw, intent = generated
    whole = run(raw)
    check_protocol(whole)
    assert run(raw, chunks=data.draw(_cuts(raw))) == whole
    folded = fold(whole)
    assert folded["blocks"] == intent["blocks"]
    done = whole[-1]
    assert isinstance(done, Done)
    assert done.stop_reason == intent["stop"]
    assert done.usage == intent["usage"]


@given(wire_transcripts(), st.data())
def test_property_mutated_streams_end_in_a_typed_terminal(
    generated: tuple[bytes, dict[str, Any]], data: st.DataObject
) -> None:
    raw, _ = generated
    mutation = data.draw(st.sampled_from(["truncate", "flip", "drop_line", "garbage"]))
    if mutation == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    elif mutation == "flip":
        for _ in range(data.draw(st.integers(1, 5))):
            pos = data.draw(st.integers(0, len(raw) - 1))
            raw = raw[:pos] + bytes([raw[pos] ^ data.draw(st.integers(1, 255))]) + raw[pos + 1 :]
    elif mutation == "drop_line":
        lines = raw.split(b"\n")
        del lines[data.draw(st.integers(0, len(lines) - 1))]
        raw = b"\n".join(lines)
    else:
        pos = data.draw(st.integers(0, len(raw)))
        raw = raw[:pos] + data.draw(st.binary(min_size=1, max_size=40)) + raw[pos:]
    events = run(raw, chunks=data.draw(_cuts(raw)) if raw else None)
    check_protocol(events)
    assert isinstance(events[-1], (Done, Error))
    if isinstance(events[-1], Error):
        assert events[-1].kind is not None


def test_decoder_rejects_malformed_chunk_as_protocol_error() -> None:
    events = run(b'data: {"choices": [{"index": "zero"}]}\n\ndata: [DONE]\n\n')
    err = events[-1]
    assert isinstance(err, Error) and err.kind == ErrorKind.PROTOCOL


def test_events_roundtrip_msgspec() -> None:
    events = run(transcript("parallel-tool-calls-interleaved.sse"))
    encoded = msgspec.json.encode(events)
    assert msgspec.json.decode(encoded, type=list[Event]) == events


# --------------------------------------------------------------------------
# The built-in catalogue
# --------------------------------------------------------------------------


def test_catalog_is_consistent() -> None:
    from streamfn.core._wire_formats import API_NAMES
    from streamfn.core.catalogue._catalog import BUILTIN_MODELS
    from streamfn.core.catalogue._models import get_model

    keys = [m.key for m in BUILTIN_MODELS]
    assert len(keys) == len(set(keys)), "one entry per provider:id"
    for m in BUILTIN_MODELS:
        assert m.api in API_NAMES
        # Azure's address is the caller's resource; every other provider has one
        assert m.base_url.startswith("https://") or m.provider == "azure", m.key
        assert min(m.price_input, m.price_output, m.price_cache_read) >= 0, m.key
        assert m.max_output > 0 and m.source, m.key
    assert get_model("openai:gpt-4o-mini").price_input == 0.15
    assert {m.provider for m in BUILTIN_MODELS} >= {
        "openai", "anthropic", "google", "vertex", "mistral", "xai", "groq", "deepseek",
        "openrouter", "zai", "bedrock", "azure",
    }  # fmt: skip


def test_catalog_models_price_a_real_stream() -> None:
    from streamfn.core import get_model

    m = get_model("deepseek:deepseek-reasoner")
    events = replay("openai-chat", transcript("reasoning-alternating.sse"), model=m, headers=SSE)
    done = events[-1]
    assert isinstance(done, Done)
    assert m.price_input > 0 and m.price_output > 0
    expected = (12 * m.price_input + 40 * m.price_output) / 1e6
    assert done.cost.total == pytest.approx(expected)


def test_done_without_finish_reason_ends_as_stop() -> None:
    data = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
    done = run(data)[-1]
    assert isinstance(done, Done) and done.stop_reason == StopReason.STOP


def _openai_chat_providers() -> list[str]:
    """Every provider the library speaks Chat Completions to: the catalogue's sources,
    the registry's models and the local servers without catalogue entries."""
    from streamfn.core.catalogue._catalog_build import catalog_sources
    from streamfn.core.catalogue._models import _ENDPOINTS, list_models

    names = {name for name, api in catalog_sources().values() if api == "openai-chat"}
    names |= {m.provider for m in list_models() if m.api == "openai-chat"}
    names |= {name for name, (api, _) in _ENDPOINTS.items() if api == "openai-chat"}
    return sorted(names)


def test_every_openai_chat_provider_is_tested_for_the_tool_use_stop() -> None:
    # the parametrization below must not shrink to nothing (or to OpenAI alone)
    assert {"openai", "azure", "vllm", "llamacpp", "groq", "mistral"} <= set(
        _openai_chat_providers()
    )


@pytest.mark.parametrize("provider", _openai_chat_providers())
@pytest.mark.parametrize("finish", ["stop", None, "eos", "tool_calls"])
def test_a_turn_that_ended_with_complete_tool_calls_is_tool_use(
    provider: str, finish: str | None
) -> None:
    # vLLM, llama.cpp and several hosted servers end a tool-calling turn with "stop"
    # (or no finish reason, or a word of their own): an agent loop branching on
    # tool_use must see tool_use all the same
    end = {"index": 0, "delta": {}, "finish_reason": finish}
    data = (
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
        b'"id":"call_1","function":{"name":"get_weather","arguments":"{\\"city\\":"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
        b'"function":{"arguments":"\\"Paris\\"}"}}]}}]}\n\n'
        b"data: " + json.dumps({"choices": [end]}).encode() + b"\n\ndata: [DONE]\n\n"
    )
    events = run(data, provider=provider)
    check_protocol(events)
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason == StopReason.TOOL_USE
    assert fold(events)["tools"] == [("call_1", "get_weather", '{"city":"Paris"}')]


@pytest.mark.parametrize("finish", ["length", "content_filter"])
def test_tool_calls_do_not_hide_a_length_stop_or_a_filter(finish: str) -> None:
    # a length stop may have cut the arguments; a filtered answer is an error
    data = (
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
        b'"id":"call_1","function":{"name":"f","arguments":"{"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"' + finish.encode() + b'"}]}'
        b"\n\ndata: [DONE]\n\n"
    )
    last = run(data)[-1]
    if finish == "length":
        assert isinstance(last, Done) and last.stop_reason == StopReason.LENGTH
    else:
        assert isinstance(last, Error) and last.kind == ErrorKind.CONTENT_FILTER


def test_unknown_event_types_are_ignored_and_string_errors_classified() -> None:
    data = (
        b"event: ping\ndata: {}\n\n"
        b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
        b'data: {"error":"upstream connect error or disconnect/reset before headers"}\n\n'
    )
    events = run(data, provider="openai-compatible")
    check_protocol(events)
    err = events[-1]
    assert isinstance(err, Error) and err.kind is not None
    assert "upstream connect error" in err.message
    assert fold(events)["text"] == "a"


def test_groq_event_error_with_rate_limit_status_is_throttled() -> None:
    data = (
        b"event: error\n"
        b'data: {"error":{"message":"Rate limit reached for model `llama-3.3-70b-versatile`",'
        b'"type":"tokens","code":"rate_limit_exceeded","status_code":429}}\n\n'
    )
    err = run(data, provider="groq")[-1]
    assert isinstance(err, Error) and err.kind == ErrorKind.THROTTLED and err.status == 429


def test_a_chunk_id_of_another_type_reads_alike_one_event_per_read_or_in_a_run() -> None:
    # once the response id is known the hot loop of a run decodes no "id": a chunk
    # read alone must not be refused for one either (a fault under one chunking only)
    frames = [
        b'data: {"id":"a","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n',
        b'data: {"id":5,"choices":[{"index":0,"delta":{"content":"y"}}]}\n\n',
        b'data: {"id":6,"choices":[{"index":0,"delta":{"content":"z"}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
    ]

    def events(reads: list[bytes]) -> list[Any]:
        call = open_call(model(), Context.of("q"), Options(api_key="k"))
        out = call.receive_response(200, SSE)
        for read in reads:
            out += call.receive_data(read)
        return out + call.receive_eof()

    one_by_one = events(frames)
    assert one_by_one == events([b"".join(frames)]) == events([frames[0], b"".join(frames[1:])])
    assert isinstance(one_by_one[-1], Done)
