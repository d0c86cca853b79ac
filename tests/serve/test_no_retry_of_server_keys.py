"""A gateway whose own upstream key is missing or refused is misconfigured: the official
SDKs (which retry 408, 409, 429 and every 5xx) make exactly one request, and their
exception says the server is misconfigured and which variable its operator must set."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend, ServedModel
from streamfn.core import Model
from streamfn.core.catalogue._models import get_model

pytestmark = pytest.mark.usefixtures("shell")

HI: Any = [{"role": "user", "content": "hi"}]


class CountingApp(App):
    """The gateway, counting the HTTP requests that reach it."""

    requests = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.requests += 1
        await super().__call__(scope, receive, send)


@pytest.fixture
def keyless() -> Iterator[tuple[Server, CountingApp]]:
    """No upstream key at all; one configured model whose key variable is unset too."""
    team = ServedModel(
        name="team", model=get_model("openai:gpt-4o-mini"), api_key_env="TEAM_A_OPENAI_KEY"
    )
    app = CountingApp(
        RouterBackend(None, provider_backend(environ={}, served=[team])),
        ServerConfig(api_key=KEY),
    )
    with Server(app) as server:
        yield server, app


@pytest.fixture
def refused(fake_upstream: FakeProvider) -> Iterator[tuple[Server, CountingApp]]:
    """Keys set, but the upstream answers every request 401."""
    models = [
        Model(
            id="gpt-4o-mini",
            provider="openai",
            api="openai-chat",
            base_url=fake_upstream.base_url("401", "openai-chat", "refused-openai"),
        ),
        Model(
            id="claude-sonnet-4-5",
            provider="anthropic",
            api="anthropic",
            base_url=fake_upstream.base_url("401", "anthropic", "refused-anthropic"),
        ),
    ]
    environ = {"OPENAI_API_KEY": "sk-server-key-123456", "ANTHROPIC_API_KEY": "sk-ant-123456789"}
    backend = provider_backend(environ=environ, models=models, registry=False)
    app = CountingApp(RouterBackend(None, backend), ServerConfig(api_key=KEY))
    with Server(app) as server:
        yield server, app


def _openai(server: Server, model: str, stream: bool) -> openai.APIStatusError:
    # the SDK's default retry policy (2 retries), as a user has it
    with (
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY) as client,
        pytest.raises(openai.InternalServerError) as caught,
    ):
        if stream:
            with client.chat.completions.create(model=model, messages=HI, stream=True) as s:
                list(s)
        else:
            client.chat.completions.create(model=model, messages=HI)
    return caught.value


def _anthropic(server: Server, model: str, stream: bool) -> anthropic.APIStatusError:
    with (
        anthropic.Anthropic(base_url=server.url, api_key=KEY) as client,
        pytest.raises(anthropic.InternalServerError) as caught,
    ):
        if stream:
            with client.messages.stream(model=model, max_tokens=10, messages=HI) as s:
                list(s)
        else:
            client.messages.create(model=model, max_tokens=10, messages=HI)
    return caught.value


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("sdk", "model", "variable"),
    [
        ("openai", "openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("anthropic", "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai", "team", "TEAM_A_OPENAI_KEY"),  # a gateway configuration's own variable
    ],
)
def test_a_keyless_gateway_is_asked_once_and_names_the_variable(
    keyless: tuple[Server, CountingApp], sdk: str, model: str, variable: str, stream: bool
) -> None:
    server, app = keyless
    error = (_openai if sdk == "openai" else _anthropic)(server, model, stream)
    assert app.requests == 1  # no retry by the SDK
    assert error.status_code == 502
    assert error.response.headers["x-should-retry"] == "false"
    message = str(error)
    assert "misconfigured" in message and f"must set {variable}" in message


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("sdk", "model", "variable", "token"),
    [
        ("openai", "openai:gpt-4o-mini", "OPENAI_API_KEY", "refused-openai"),
        ("anthropic", "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY", "refused-anthropic"),
    ],
)
def test_a_key_the_upstream_refuses_is_asked_once_and_names_the_variable(
    refused: tuple[Server, CountingApp],
    fake_upstream: FakeProvider,
    sdk: str,
    model: str,
    variable: str,
    token: str,
    stream: bool,
) -> None:
    server, app = refused
    before = fake_upstream.hits(token)
    error = (_openai if sdk == "openai" else _anthropic)(server, model, stream)
    assert app.requests == 1
    assert fake_upstream.hits(token) - before == 1  # and one upstream request for it
    assert error.status_code == 502
    assert error.response.headers["x-should-retry"] == "false"
    message = str(error)
    assert "misconfigured" in message and "refused" in message and variable in message
    assert "Incorrect API key" not in message  # the upstream's words stay in the log
