"""`streamfn serve` as a gateway: a client in one dialect, an upstream in another.

The official anthropic SDK streams from an OpenAI-format upstream and the
official openai SDK from an Anthropic-format upstream, through the server,
our asyncio shell and a loopback fake provider.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import Model
from streamfn.core.catalogue._models import openai_compatible

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

USER = [{"role": "user", "content": "Say hello"}]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream: FakeProvider) -> Iterator[Server]:
    models = [
        openai_compatible("fake-gpt", upstream.base_url("ok", "openai-chat", "gw-openai")),
        Model(
            id="claude-fake",
            provider="anthropic",
            api="anthropic",
            base_url=upstream.base_url("ok", "anthropic", "gw-anthropic"),
        ),
    ]
    backend = provider_backend(environ={"ANTHROPIC_API_KEY": "upstream-key"}, models=models)
    with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
        yield server


def test_an_anthropic_client_streams_from_an_openai_format_upstream(
    gateway: Server, upstream: FakeProvider
) -> None:
    with (
        anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as client,
        client.messages.stream(
            model="openai-compatible:fake-gpt",
            max_tokens=50,
            messages=USER,  # type: ignore[arg-type]
        ) as stream,
    ):
        final = stream.get_final_message()
    assert final.content[0].type == "text"
    assert final.content[0].text == "Hello, world — café 🙂!"
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (5, 8)
    sent = [r for r in upstream.requests if "gw-openai" in r.path][-1]
    assert sent.path.endswith("/chat/completions")
    body = json.loads(sent.body)
    assert body["messages"][-1] == {"role": "user", "content": "Say hello"}
    assert body["stream"] is True


def test_an_openai_client_streams_from_an_anthropic_format_upstream(
    gateway: Server, upstream: FakeProvider
) -> None:
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client:
        parts = [
            chunk.choices[0].delta.content or ""
            for chunk in client.chat.completions.create(
                model="anthropic:claude-fake",
                messages=USER,
                stream=True,  # type: ignore[arg-type]
            )
            if chunk.choices
        ]
    assert "".join(parts)
    sent = [r for r in upstream.requests if "gw-anthropic" in r.path][-1]
    assert sent.path.endswith("/v1/messages")
    assert sent.headers.get("x-api-key") == "upstream-key"
    assert json.loads(sent.body)["messages"][0]["role"] == "user"


def test_the_gateway_lists_its_own_models_first(gateway: Server) -> None:
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client:
        ids = [m.id for m in client.models.list()]
    assert ids[:2] == ["openai-compatible:fake-gpt", "anthropic:claude-fake"]
