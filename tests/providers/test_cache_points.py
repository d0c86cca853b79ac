"""Prompt caching: the request bodies each provider gets for ``Options.cache``, the
limits and errors, and cache reads/writes in usage and cost on every wire format.

The bodies are also checked against the SDK types (and the 4-breakpoint, TTL-order
rules) in test_request_conformance.py; here, where the marks go."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from request_oracles import build_body, violations

from streamfn.core import (
    AssistantMessage,
    Context,
    Done,
    Model,
    Options,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    get_model,
    open_call,
)
from streamfn.core.content._cache_points import CachePoint
from streamfn.core.wire._eventstream import encode_message
from streamfn.core.wire._sse import encode_sse

CLAUDE = get_model("anthropic:claude-sonnet-4-5")
BEDROCK = get_model("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0")
LLAMA = get_model("bedrock:us.meta.llama3-3-70b-instruct-v1:0")
OPENAI = get_model("openai:gpt-4o")
RESPONSES = Model(id="gpt-4.1", provider="openai", api="openai-responses", base_url="x")
GEMINI = get_model("google:gemini-2.5-flash")

TOOLS = [Tool(name="weather", parameters={"type": "object", "properties": {}})]


def _conversation() -> Context:
    """Two user turns around a tool loop whose assistant turn ends with signed thinking
    before its call (a thinking block takes no cache mark)."""
    call = ToolCall(id="toolu_1", name="weather", arguments={})
    assistant = AssistantMessage(
        content=[ThinkingContent(thinking="hm", signature="sig"), TextContent(text="Let me look."),
                 call],
        api="anthropic", provider="anthropic", model=CLAUDE.id,
    )  # fmt: skip
    return Context(
        system_prompt="You are a forecaster. " * 10,
        tools=TOOLS,
        messages=[
            UserMessage(content="Weather in Paris?"),
            assistant,
            ToolResultMessage.of(call, "18C"),
            UserMessage(content=[TextContent(text="And tomorrow?")]),
        ],
    )


def test_anthropic_auto_marks_tools_system_and_the_last_turn() -> None:
    body = build_body(CLAUDE, _conversation(), Options(cache="auto"))
    ephemeral = {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == ephemeral
    assert body["system"] == [
        {"type": "text", "text": "You are a forecaster. " * 10, "cache_control": ephemeral}
    ]
    assert body["messages"][-1]["content"] == [
        {"type": "text", "text": "And tomorrow?", "cache_control": ephemeral}
    ]
    assert json.dumps(body).count("cache_control") == 3
    assert violations(CLAUDE, body) == []


def test_anthropic_explicit_points_with_ttls_and_thinking_skipped() -> None:
    points = [CachePoint("tools", ttl="1h"), CachePoint(1, ttl="1h"), CachePoint(-1)]
    body = build_body(CLAUDE, _conversation(), Options(cache=points))
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert isinstance(body["system"], str)  # not marked: left as it was
    assistant = body["messages"][1]["content"]
    assert [b.get("cache_control") for b in assistant] == [
        None,
        None,
        {"type": "ephemeral", "ttl": "1h"},
    ]  # the tool_use, never the thinking block
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert violations(CLAUDE, body) == []


def test_off_and_unset_send_no_marks() -> None:
    for cache in (None, "off"):
        body = build_body(CLAUDE, _conversation(), Options(cache=cache))
        assert "cache_control" not in json.dumps(body)


def test_bedrock_auto_inserts_cache_points() -> None:
    body = build_body(BEDROCK, _conversation(), Options(cache="auto"))
    point = {"cachePoint": {"type": "default"}}
    assert body["system"][-1] == point and body["toolConfig"]["tools"][-1] == point
    assert body["messages"][-1]["content"][-1] == point
    assert json.dumps(body).count("cachePoint") == 3
    assert violations(BEDROCK, {**body}) == []
    hour = build_body(BEDROCK, _conversation(), Options(cache=[CachePoint("system", ttl="1h")]))
    assert hour["system"][-1] == {"cachePoint": {"type": "default", "ttl": "1h"}}


def test_a_bedrock_model_without_a_prompt_cache_gets_no_marks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert "cachePoint" not in json.dumps(build_body(LLAMA, _conversation(), Options(cache="auto")))
    with caplog.at_level(logging.WARNING, logger="streamfn"):
        body = build_body(LLAMA, _conversation(), Options(cache=[CachePoint("system")]))
    assert "cachePoint" not in json.dumps(body)
    assert "no prompt cache" in caplog.text and LLAMA.key in caplog.text


@pytest.mark.parametrize(
    ("points", "error"),
    [
        ([CachePoint("tools"), CachePoint("system"), CachePoint(0), CachePoint(1),
          CachePoint(-1)], "5 breakpoints, but anthropic takes at most 4"),
        ([CachePoint("system"), CachePoint(-1, ttl="1h")], r"1h breakpoint at \d comes after a 5m"),
        ([CachePoint(9)], r"CachePoint\(9\) is outside the \d turns"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("target", [CLAUDE, BEDROCK], ids=lambda m: m.api)
def test_explicit_points_a_provider_would_refuse_are_clear_errors(
    target: Model, points: list[CachePoint], error: str
) -> None:
    error = error.replace("anthropic", target.provider)
    with pytest.raises(ValueError, match=error):
        open_call(target, _conversation(), Options(cache=points))


def test_a_point_on_a_missing_system_prompt_is_an_error() -> None:
    with pytest.raises(ValueError, match="no system"):
        open_call(CLAUDE, Context.of("hi"), Options(cache=[CachePoint("system")]))
    # auto just leaves out what is not there
    body = build_body(CLAUDE, Context.of("hi"), Options(cache="auto"))
    assert json.dumps(body).count("cache_control") == 1


@pytest.mark.parametrize("target", [OPENAI, RESPONSES], ids=lambda m: m.api)
def test_openai_prompt_cache_key_is_derived_deterministically_or_given(target: Model) -> None:
    context = _conversation()
    key = build_body(target, context, Options(cache="auto"))["prompt_cache_key"]
    assert key == build_body(target, context, Options(cache="auto"))["prompt_cache_key"]
    assert key.startswith("streamfn-")
    other = Context(messages=context.messages, tools=context.tools, system_prompt="Other.")
    assert build_body(target, other, Options(cache="auto"))["prompt_cache_key"] != key
    # the next turn of the same conversation keeps the key (same prefix, same cache)
    longer = Context(
        messages=[*context.messages, UserMessage(content="More?")],
        tools=context.tools,
        system_prompt=context.system_prompt,
    )
    assert build_body(target, longer, Options(cache="auto"))["prompt_cache_key"] == key
    given = build_body(target, context, Options(cache="auto", cache_key="tenant-7"))
    assert given["prompt_cache_key"] == "tenant-7"
    assert build_body(target, context, Options(cache_key="tenant-7"))["prompt_cache_key"] == (
        "tenant-7"
    )
    for options in (Options(), Options(cache="off", cache_key="tenant-7")):
        assert "prompt_cache_key" not in build_body(target, context, options)


def test_compatible_servers_and_gemini_get_nothing_to_refuse() -> None:
    mistral = get_model("mistral:mistral-large-latest")
    body = build_body(mistral, _conversation(), Options(cache="auto"))
    assert "prompt_cache_key" not in body and violations(mistral, body) == []
    plain = build_body(GEMINI, _conversation(), Options())
    assert build_body(GEMINI, _conversation(), Options(cache="auto")) == plain


# -- cache reads and writes in usage and cost, per wire format ----------------------------


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    return encode_sse(json.dumps(data), event=event)


def _anthropic() -> bytes:
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 2000,
             "cache_read_input_tokens": 3000}  # fmt: skip
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": usage}
    return b"".join(
        [
            _sse({"type": "message_start", "message": message}, "message_start"),
            _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                  "usage": {"output_tokens": 5}}, "message_delta"),
            _sse({"type": "message_stop"}, "message_stop"),
        ]
    )  # fmt: skip


def _bedrock() -> bytes:
    headers = {":content-type": "application/json", ":message-type": "event"}
    usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 5015,
             "cacheReadInputTokens": 3000, "cacheWriteInputTokens": 2000}  # fmt: skip
    return encode_message(
        {**headers, ":event-type": "messageStop"}, b'{"stopReason": "end_turn"}'
    ) + encode_message(
        {**headers, ":event-type": "metadata"}, json.dumps({"usage": usage}).encode()
    )


def _openai() -> bytes:
    usage = {"prompt_tokens": 3010, "completion_tokens": 5, "total_tokens": 3015,
             "prompt_tokens_details": {"cached_tokens": 3000}}  # fmt: skip
    return b"".join(
        [
            _sse({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            _sse({"id": "c", "choices": [], "usage": usage}),
            b"data: [DONE]\n\n",
        ]
    )


def _gemini() -> bytes:
    usage = {"promptTokenCount": 3010, "candidatesTokenCount": 5, "totalTokenCount": 3015,
             "cachedContentTokenCount": 3000}  # fmt: skip
    candidate = {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
    return _sse({"candidates": [candidate], "usageMetadata": usage})


@pytest.mark.parametrize(
    ("target", "body", "ctype", "write"),
    [
        (CLAUDE, _anthropic, "text/event-stream", 2000),
        (BEDROCK, _bedrock, "application/vnd.amazon.eventstream", 2000),
        (OPENAI, _openai, "text/event-stream", 0),
        (GEMINI, _gemini, "text/event-stream", 0),  # implicit caching: reads only
    ],
    ids=lambda v: getattr(v, "api", None),
)
def test_cache_reads_and_writes_are_split_and_priced(
    target: Model, body: Any, ctype: str, write: int
) -> None:
    call = open_call(target, Context.of("hi"), Options(cache="auto", api_key="k"))
    events = call.receive_response(200, [("content-type", ctype)])
    events += call.receive_data(body()) + call.receive_eof()
    done = events[-1]
    assert isinstance(done, Done), events
    usage, cost = done.usage, done.cost
    assert (usage.input, usage.cache_read, usage.cache_write) == (10, 3000, write)
    assert target.price_cache_read < target.price_input  # the catalogue prices reads lower
    assert cost.cache_read == pytest.approx(3000 * target.price_cache_read / 1e6)
    assert cost.cache_write == pytest.approx(write * target.price_cache_write / 1e6)
    assert cost.input == pytest.approx(10 * target.price_input / 1e6)


def test_a_cache_setting_that_means_nothing_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match='use "off", "auto"'):
        Options(cache="on")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="CachePoint"):
        Options(cache=["system"])  # type: ignore[list-item]
