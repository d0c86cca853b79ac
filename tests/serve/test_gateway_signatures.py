"""Signatures and the 2026 thinking knobs survive a round trip through `streamfn serve`.

A Gemini 3 client (here the official openai SDK, on the OpenAI-compatible
route) gets a function call with its thought signature in
``extra_content.google.thought_signature``, replays the turn, and the body the
gateway sends upstream carries that signature, not Google's stand-in dummy.
An Anthropic client replaying signed thinking likewise gets it to the upstream
as a thinking block. What reaches the upstream is read from the loopback fake
provider's request log.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server

from streamfn.asgi import ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import (
    Context,
    Model,
    Options,
    TextContent,
    Tool,
    ToolCallEnd,
    ToolCallStart,
    ToolResultMessage,
    UserMessage,
)
from streamfn.core.catalogue._models import openai_compatible
from streamfn.core.dialects.gemini._request import DUMMY_THOUGHT_SIGNATURE
from streamfn.core.dialects.openai_chat import OpenAIChatEncoder
from streamfn.fuzz._fake_bodies import sse
from streamfn.io_asyncio import Client
from streamfn.io_asyncio._backends import ProviderBackend
from streamfn.io_asyncio._server import App

SIGNATURE = "CiQBjz1rX6ZoAxmPsignedByGemini"
THINKING_SIGNATURE = "EqQBCkYIBxgCKkBsignedByClaude"
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def _gemini_call_body() -> bytes:
    part = {"functionCall": {"name": "weather", "args": {"city": "Paris"}}}
    chunk = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{**part, "thoughtSignature": SIGNATURE}]},
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
        "responseId": "resp-sig",
        "modelVersion": "gemini-3-pro-preview",
    }
    return sse(chunk)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream: FakeProvider) -> Iterator[Server]:
    models = [
        Model(
            id="gemini-3-pro-preview",
            provider="google",
            api="gemini",
            base_url=upstream.serve(_gemini_call_body(), token="sig-gemini"),
        ),
        Model(
            id="claude-sonnet-4-5",
            provider="anthropic",
            api="anthropic",
            base_url=upstream.base_url("ok", "anthropic", "sig-anthropic"),
        ),
        Model(
            id="claude-opus-4-6",
            provider="anthropic",
            api="anthropic",
            base_url=upstream.base_url("ok", "anthropic", "effort-anthropic"),
            max_output=128_000,
        ),
        Model(
            id="gpt-5.5",
            provider="openai",
            api="openai-chat",
            base_url=upstream.base_url("ok", "openai-chat", "effort-openai"),
        ),
    ]
    environ = {
        "GEMINI_API_KEY": "upstream-key",
        "ANTHROPIC_API_KEY": "upstream-key",
        "OPENAI_API_KEY": "upstream-key",
    }
    backend = ProviderBackend(environ=environ, models=models)
    with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
        yield server


def _sent(upstream: FakeProvider, token: str) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in upstream.requests if token in r.path]


def test_a_gemini_3_turn_replayed_through_the_openai_route_keeps_its_signature(
    gateway: Server, upstream: FakeProvider
) -> None:
    question: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client:
        first = client.chat.completions.create(
            model="google:gemini-3-pro-preview", messages=question, tools=TOOLS
        )
        (call,) = first.choices[0].message.tool_calls or []
        carried = (call.model_extra or {})["extra_content"]
        assert carried == {"google": {"thought_signature": SIGNATURE}}
        replayed = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{**call.model_dump(exclude_none=True), "extra_content": carried}],
        }
        result = {"role": "tool", "tool_call_id": call.id, "content": "18C"}
        client.chat.completions.create(
            model="google:gemini-3-pro-preview",
            messages=[*question, replayed, result],  # type: ignore[list-item]
            tools=TOOLS,
        )
    body = _sent(upstream, "sig-gemini")[-1]
    model_turn = next(c for c in body["contents"] if c["role"] == "model")
    (part,) = [p for p in model_turn["parts"] if "functionCall" in p]
    assert part["thoughtSignature"] == SIGNATURE
    assert part["thoughtSignature"] != DUMMY_THOUGHT_SIGNATURE


def test_the_streamed_tool_call_carries_its_signature() -> None:
    encoder = OpenAIChatEncoder(response_id="chatcmpl-1", model="m", created=1)
    encoder.encode(ToolCallStart(0, "call_1", "weather"))
    frame = encoder.encode(ToolCallEnd(0, signature=SIGNATURE))
    chunk = json.loads(frame.removeprefix(b"data: "))
    (call,) = chunk["choices"][0]["delta"]["tool_calls"]
    assert call == {"index": 0, "extra_content": {"google": {"thought_signature": SIGNATURE}}}
    assert encoder.encode(ToolCallEnd(1)) == b""  # nothing to say without a signature


def test_signed_thinking_replayed_through_the_anthropic_route_reaches_claude(
    gateway: Server, upstream: FakeProvider
) -> None:
    messages: list[Any] = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": THINKING_SIGNATURE},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "P"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}],
        },
    ]
    with anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as client:
        client.messages.create(
            model="anthropic:claude-sonnet-4-5",
            max_tokens=2000,
            messages=messages,
            thinking={"type": "enabled", "budget_tokens": 1024},
            tools=[{"name": "weather", "input_schema": {"type": "object"}}],
        )
    body = _sent(upstream, "sig-anthropic")[-1]
    first = body["messages"][1]["content"][0]
    assert first == {"type": "thinking", "thinking": "Look it up.", "signature": THINKING_SIGNATURE}
    assert body["thinking"]["type"] == "enabled"  # kept on: the tool turn starts signed


def test_a_streamfn_client_of_the_gateway_keeps_the_signature_both_ways(
    gateway: Server, upstream: FakeProvider
) -> None:
    """streamfn itself on the OpenAI-compatible route: the decoder reads the carrier into
    `ToolCall.signature` and the request builder sends it back the same way."""
    model = openai_compatible("google:gemini-3-pro-preview", gateway.url + "/v1")
    tool = Tool(name="weather", parameters=TOOLS[0]["function"]["parameters"])
    context = Context(messages=[UserMessage(content="Weather in Paris?")], tools=[tool])

    async def main() -> None:
        async with Client(environ={}) as client:
            first = await client.complete(model, context, Options(api_key=KEY))
            (call,) = first.tool_calls
            assert call.signature == SIGNATURE
            result = ToolResultMessage(
                tool_call_id=call.id, tool_name="weather", content=[TextContent(text="18C")]
            )
            follow_up = Context(messages=[*context.messages, first, result], tools=[tool])
            await client.complete(model, follow_up, Options(api_key=KEY))

    asyncio.run(main())
    body = _sent(upstream, "sig-gemini")[-1]
    model_turn = next(c for c in body["contents"] if c["role"] == "model")
    (part,) = [p for p in model_turn["parts"] if "functionCall" in p]
    assert part["thoughtSignature"] == SIGNATURE


def _ask_opus(gateway: Server, **knobs: Any) -> None:
    """One Claude Opus 4.6 request through the gateway with these thinking knobs."""
    with anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as client:
        client.messages.create(
            model="anthropic:claude-opus-4-6",
            max_tokens=4000,
            messages=[{"role": "user", "content": "Why is the sky blue?"}],
            **knobs,
        )


def test_an_anthropic_client_s_adaptive_thinking_and_effort_reach_claude(
    gateway: Server, upstream: FakeProvider
) -> None:
    _ask_opus(gateway, thinking={"type": "adaptive"}, output_config={"effort": "max"})
    with pytest.raises(anthropic.BadRequestError, match="effort"):
        _ask_opus(gateway, output_config={"effort": "warp"}, thinking={"type": "adaptive"})
    body = _sent(upstream, "effort-anthropic")[-1]
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "max"}  # max -> xhigh -> Opus 4.6's max


def test_an_anthropic_client_s_thinking_display_reaches_claude(
    gateway: Server, upstream: FakeProvider
) -> None:
    _ask_opus(gateway, thinking={"type": "adaptive", "display": "omitted"})
    with pytest.raises(anthropic.BadRequestError, match=r"thinking\.display"):
        _ask_opus(gateway, thinking={"type": "adaptive", "display": "hidden"})
    sent = _sent(upstream, "effort-anthropic")[-1]["thinking"]
    assert sent == {"type": "adaptive", "display": "omitted"}


@pytest.mark.parametrize(("asked", "sent"), [("xhigh", "xhigh"), ("none", "none")])
def test_an_openai_client_s_reasoning_effort_reaches_gpt_5x(
    gateway: Server, upstream: FakeProvider, asked: str, sent: str
) -> None:
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client:
        client.chat.completions.create(
            model="openai:gpt-5.5",
            messages=[{"role": "user", "content": "hi"}],
            reasoning_effort=asked,  # type: ignore[arg-type]
        )
    assert _sent(upstream, "effort-openai")[-1]["reasoning_effort"] == sent
