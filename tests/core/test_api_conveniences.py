"""What users expect from the API: `complete()` raises, tool results from plain values,
`model(...)` for any endpoint, one base-URL convention, deep-merged ``extra_body``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import trio
from fake_provider import FakeProvider

import streamfn.io_asyncio as aio
import streamfn.io_trio as tio
from streamfn.core import (
    CompletionError,
    Context,
    ErrorKind,
    Model,
    Options,
    Tool,
    ToolCall,
    ToolResultMessage,
    UnknownModel,
    UserMessage,
    model,
    open_call,
)
from streamfn.core._messages import AssistantMessage, TextContent


@pytest.fixture(scope="module")
def fake() -> Any:
    with FakeProvider(stall=1.0) as server:
        yield server


def _complete(shell: str, m: Model, **kwargs: Any) -> Any:
    options = Options(api_key="sk-test", idle_timeout=5)
    if shell == "trio":
        return trio.run(lambda: tio.complete(m, Context.of("Hi"), options, **kwargs))
    return asyncio.run(aio.complete(m, Context.of("Hi"), options, **kwargs))


@pytest.mark.parametrize("shell", ["trio", "asyncio"])
def test_complete_raises_a_typed_error_carrying_the_event(fake: FakeProvider, shell: str) -> None:
    before = fake.hits("complete-" + shell)
    m = model(
        "openai:gpt-4o-mini", base_url=fake.base_url("401", "openai-chat", "complete-" + shell)
    )
    with pytest.raises(CompletionError) as caught:
        _complete(shell, m)
    assert caught.value.kind is ErrorKind.AUTH and caught.value.error.status == 401
    assert isinstance(caught.value.message, AssistantMessage)
    assert fake.hits("complete-" + shell) == before + 1  # an auth failure costs one request
    message = _complete(shell, m, raise_on_error=False)
    assert message.error_kind is ErrorKind.AUTH and message.text == ""
    ok = model("openai:gpt-4o-mini", base_url=fake.base_url("ok", "openai-chat"))
    assert _complete(shell, ok).text.startswith("Hello")


def _body(m: Model, context: Context, **options: Any) -> dict[str, Any]:
    request = open_call(m, context, Options(api_key="k", **options)).request
    return dict(json.loads(request.body))


def _tool_turn(result: ToolResultMessage) -> Context:
    call = ToolCall(id="call_1", name="weather", arguments={"city": "Paris"})
    return Context(
        messages=[
            UserMessage(content="Weather in Paris?"),
            AssistantMessage(content=[call], api="openai-chat", provider="openai"),
            result,
        ],
        tools=[Tool(name="weather")],
    )


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (ToolResultMessage(tool_call_id="call_1", tool_name="weather", content="sunny"), "sunny"),  # type: ignore[arg-type]
        (ToolResultMessage.of("call_1", "sunny", tool_name="weather"), "sunny"),
        (ToolResultMessage.of(ToolCall(id="call_1", name="weather"), {"temp": 21}), '{"temp":21}'),
        (ToolResultMessage.of("call_1", [1, 2], tool_name="weather"), "[1,2]"),
    ],
)
def test_tool_results_from_plain_values_reach_every_provider(
    result: ToolResultMessage, text: str
) -> None:
    assert result.content == [TextContent(text=text)]
    context = _tool_turn(result)
    sent = _body(model("openai:gpt-4o-mini"), context)["messages"][-1]
    assert sent == {"role": "tool", "tool_call_id": "call_1", "content": text}
    sent = _body(model("anthropic:claude-haiku-4-5"), context)["messages"][-1]
    assert sent["content"][0]["content"] == [{"type": "text", "text": text}]
    for name in ("openai-responses:gpt-5", "google:gemini-2.5-flash", "ollama:llama3.2"):
        assert text in _strings(_body(model(name), context)), name


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in _strings(item)]


def test_model_names_any_endpoint() -> None:
    assert model("openai-responses:gpt-5").api == "openai-responses"
    assert model("openai-responses:gpt-5").price_input == model("openai:gpt-5").price_input
    assert model("ollama:llama3.2").api == "ollama"
    assert model("gemini:gemini-2.5-flash") == model("google:gemini-2.5-flash")
    assert model("groq:brand-new").base_url == model("groq:llama-3.3-70b-versatile").base_url
    url = model("http://localhost:8080/v1", id="qwen")
    assert (url.api, url.id, url.base_url) == ("openai-chat", "qwen", "http://localhost:8080/v1")
    with pytest.raises(UnknownModel, match=r"known providers: .*openai"):
        model("opneai:gpt-4o")
    with pytest.raises(UnknownModel, match="base_url"):
        model("azure:my-deployment")


@pytest.mark.parametrize(
    ("name", "root", "expected"),
    [
        ("vllm:m", "http://h:8000", "http://h:8000/v1/chat/completions"),
        ("openai-responses:gpt-5", "http://h:8000", "http://h:8000/v1/responses"),
        ("anthropic:claude-haiku-4-5", "http://h:8000", "http://h:8000/v1/messages"),
        ("ollama:llama3.2", "http://h:11434", "http://h:11434/api/chat"),
        ("proxy:local", "http://h:8000", "http://h:8000/v1/stream"),
    ],
)
def test_one_base_url_convention_root_or_api_root(name: str, root: str, expected: str) -> None:
    """The server root and the API root with its version give the same URL, for every API."""
    versioned = root + ("/api" if name.startswith("ollama") else "/v1")
    for base in (root, root + "/", versioned, versioned + "/"):
        assert (
            open_call(
                model(name, base_url=base), Context.of("Hi"), Options(api_key="k")
            ).request.url
            == expected
        ), base


def test_gateway_paths_are_kept_for_openai_compatible_servers() -> None:
    m = model("groq:some-model")
    assert open_call(m, Context.of("Hi"), Options(api_key="k")).request.url == (
        "https://api.groq.com/openai/v1/chat/completions"
    )


def test_extra_body_is_deep_merged() -> None:
    context = Context(messages=[UserMessage(content="Hi")], tools=[Tool(name="weather")])
    server_tool = {"type": "web_search_preview"}
    body = _body(
        model("openai:gpt-4o-mini"),
        context,
        extra_body={
            "tools": [server_tool],
            "stream_options": {"extra": True},
            "temperature": None,
            "user": "u1",
        },
        temperature=0.5,
    )
    assert [t.get("type") for t in body["tools"]] == ["function", "web_search_preview"]
    assert body["stream_options"] == {"include_usage": True, "extra": True}
    assert "temperature" not in body and body["user"] == "u1"
