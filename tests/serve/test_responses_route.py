"""The Responses API and the token counts, served by `streamfn serve` to the official clients.

Real clients we did not write: the openai SDK (``responses.create`` streamed and
whole, ``responses.stream``, ``responses.parse`` with a Pydantic ``text_format``,
``responses.input_tokens.count``), the anthropic SDK (``messages.count_tokens``) and
the OpenAI Agents SDK's ``Runner`` finishing a function-tool loop, all against a
gateway whose upstream is Claude (the loopback fake provider speaking Anthropic).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend
from pydantic import BaseModel

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import Model
from streamfn.fuzz._fake_bodies import anthropic_body, sse

CLAUDE = "claude-sonnet-4-6"
TEXT = "Bonjour le monde — 東京!"  # the fake's Anthropic answer


def _tool_use_body(name: str, arguments: dict[str, Any]) -> bytes:
    """An Anthropic stream that ends its turn with one tool call."""
    message = {
        "id": "msg_tool",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 11, "output_tokens": 1},
    }
    block = {"type": "tool_use", "id": "toolu_01Weather", "name": name, "input": {}}
    delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
    return b"".join(
        [
            sse({"type": "message_start", "message": message}, "message_start"),
            sse(
                {"type": "content_block_start", "index": 0, "content_block": block},
                "content_block_start",
            ),
            sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"),
            sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 20},
                },
                "message_delta",
            ),
            sse({"type": "message_stop"}, "message_stop"),
        ]
    )


class Scripted(FakeProvider):
    """The fake provider, answering the requests of a token with a script of bodies."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: dict[str, list[bytes]] = {}

    def respond(self, sock: socket.socket, fault: str, provider: str, hit: int) -> bool:
        script = self.scripts.get(provider)
        if script is not None:
            self.register_body(f"{provider}-{hit}", script[min(hit, len(script)) - 1])
            return super().respond(sock, fault, f"{provider}-{hit}", hit)
        return super().respond(sock, fault, provider, hit)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Scripted]:
    with Scripted() as fake:
        fake.scripts["agent-loop"] = [
            _tool_use_body("get_weather", {"city": "Paris"}),
            anthropic_body(["It is 18C in Paris."]),
        ]
        fake.scripts["json-answer"] = [anthropic_body(['{"city": "Paris", "celsius": 18}'])]
        yield fake


def _claude(upstream: FakeProvider, token: str, body: str = "anthropic") -> Model:
    return Model(
        id=CLAUDE,
        provider="anthropic",
        api="anthropic",
        base_url=upstream.base_url("ok", body, token),
        max_output=64_000,
    )


@pytest.fixture(scope="module")
def gateway(shell: str, upstream: Scripted) -> Iterator[Server]:
    served = {
        "claude": _claude(upstream, "plain"),
        "claude-tools": _claude(upstream, f"loop-{shell}", "agent-loop"),  # a script per run
        "claude-json": _claude(upstream, "json", "json-answer"),
        "claude-cut": Model(
            id=CLAUDE,
            provider="anthropic",
            api="anthropic",
            base_url=upstream.base_url("truncated", "anthropic", "cut"),
        ),
        "groq-llama": Model(
            id="llama-3.3-70b",
            provider="groq",
            api="openai-chat",
            base_url=upstream.base_url("ok", "openai-chat", "g"),
        ),
    }
    environ = {"ANTHROPIC_API_KEY": "upstream-key", "GROQ_API_KEY": "upstream-key"}
    backend = provider_backend(environ, models=list(served.values()))
    backend.models.update(served)  # served under the short names too
    with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
        yield server


@pytest.fixture
def client(gateway: Server) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as sdk:
        yield sdk


def test_a_whole_response(client: openai.OpenAI) -> None:
    response = client.responses.create(model="claude", input="Hi", instructions="Be brief.")
    assert response.status == "completed"
    assert response.output_text == TEXT
    assert response.usage is not None and response.usage.output_tokens == 9


def test_a_streamed_response_every_event_typed(client: openai.OpenAI) -> None:
    events = list(client.responses.create(model="claude", input="Hi", stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == TEXT
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_the_stream_helper_folds_the_final_response(client: openai.OpenAI) -> None:
    with client.responses.stream(model="claude", input="Hi") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text == TEXT


class Weather(BaseModel):
    city: str
    celsius: int


def test_parse_with_a_pydantic_text_format(client: openai.OpenAI, upstream: Scripted) -> None:
    before = len(upstream.requests)
    parsed = client.responses.parse(model="claude-json", input="Weather?", text_format=Weather)
    assert parsed.output_parsed == Weather(city="Paris", celsius=18)
    [sent] = [json.loads(r.body) for r in upstream.requests[before:]]
    assert sent["output_config"]["format"]["type"] == "json_schema"  # the client's schema, sent on


def test_a_cut_answer_is_never_completed(client: openai.OpenAI) -> None:
    with pytest.raises(openai.APIStatusError) as whole:
        client.responses.create(model="claude-cut", input="Hi")
    assert whole.value.status_code == 502
    try:
        events = list(client.responses.create(model="claude-cut", input="Hi", stream=True))
    except openai.APIStatusError as refused:  # cut before any output: an HTTP error
        assert refused.status_code == 502
    else:
        kinds = [e.type for e in events]
        assert "response.completed" not in kinds and kinds[-1] in ("error", "response.failed")


def test_state_is_refused_by_name(client: openai.OpenAI) -> None:
    for extra in ({"store": True}, {"previous_response_id": "resp_1"}):
        with pytest.raises(openai.BadRequestError, match="keeps no conversations"):
            client.responses.create(model="claude", input="Hi", **extra)  # type: ignore[call-overload]
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="nosuch", input="Hi")


def test_the_agents_sdk_finishes_a_function_tool_loop(gateway: Server, upstream: Scripted) -> None:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # the SDK's tracing would send spans to OpenAI
    asked: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        asked.append(city)
        return "18C and sunny"

    async def run() -> Any:
        async with openai.AsyncOpenAI(
            base_url=gateway.url + "/v1", api_key=KEY, max_retries=0
        ) as sdk:
            model = OpenAIResponsesModel(model="claude-tools", openai_client=sdk)
            tools = [get_weather]
            agent = Agent(name="weather", instructions="Be brief.", model=model, tools=tools)
            return await Runner.run(agent, "What is the weather in Paris?")

    before = len(upstream.requests)
    result = asyncio.run(run())
    assert asked == ["Paris"]
    assert result.final_output == "It is 18C in Paris."
    first, second = (json.loads(r.body) for r in upstream.requests[before:])
    assert first["tools"][0]["name"] == "get_weather"
    results = [
        b
        for m in second["messages"]
        for b in m["content"]
        if isinstance(m["content"], list) and b.get("type") == "tool_result"
    ]
    assert results and "18C and sunny" in json.dumps(results)


def test_the_openai_sdk_counts_input_tokens(client: openai.OpenAI, upstream: Scripted) -> None:
    before = len(upstream.requests)
    counted = client.responses.input_tokens.count(model="claude", input="How big is this prompt?")
    [sent] = upstream.requests[before:]
    assert sent.path.endswith("/v1/messages/count_tokens")
    assert counted.input_tokens == len(sent.body) // 4  # what the fake counted


def test_the_anthropic_sdk_counts_tokens_or_says_it_estimated(
    gateway: Server, upstream: Scripted
) -> None:
    sdk = anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0)
    question = [{"role": "user", "content": "How big is this prompt?"}]
    before = len(upstream.requests)
    raw = sdk.messages.with_raw_response.count_tokens(model="claude", messages=question)  # type: ignore[arg-type]
    [sent] = upstream.requests[before:]
    assert raw.parse().input_tokens == len(sent.body) // 4
    assert raw.headers["x-streamfn-token-count"] == "counted"
    # Groq has no counting endpoint: an estimate, said in the header, and no upstream request
    before = len(upstream.requests)
    raw = sdk.messages.with_raw_response.count_tokens(model="groq-llama", messages=question)  # type: ignore[arg-type]
    assert raw.parse().input_tokens > 0
    assert raw.headers["x-streamfn-token-count"] == "estimated"
    assert len(upstream.requests) == before
