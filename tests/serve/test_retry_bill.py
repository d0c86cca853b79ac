"""The retry bill across layers: how many upstream requests one client call costs.

The real ``streamfn serve`` in front of a loopback upstream that answers 429
(Retry-After: 0) to every request, counted there, called by the official
openai and anthropic SDKs with their default retries (3 attempts each). The
server sends each client request upstream once by default and passes the 429
and its Retry-After through, so the bill is the client's own attempts, not
the product of both layers' (3 x 3 = 9 before).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import anthropic
import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend, serve_cli

from streamfn.asgi import App, ServerConfig

USER = [{"role": "user", "content": "hi"}]
#: what the SDKs do by default: one request and 2 retries
SDK_ATTEMPTS = 3


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def serve(upstream: FakeProvider) -> Iterator[str]:
    """``streamfn serve --no-local`` with openai:* and anthropic:* sent to the 429 upstream."""
    args = [
        "--base-url",
        "openai=" + upstream.base_url("429", "openai-chat", "bill-openai") + "/v1",
        "--base-url",
        "anthropic=" + upstream.base_url("429", "anthropic", "bill-anthropic"),
    ]
    env = {"OPENAI_API_KEY": "sk-upstream", "ANTHROPIC_API_KEY": "sk-ant-upstream"}
    with serve_cli(args, env) as url:
        yield url


def test_one_openai_sdk_call_costs_its_own_attempts_upstream(
    serve: str, upstream: FakeProvider
) -> None:
    before = upstream.hits("bill-openai")
    with (
        openai.OpenAI(base_url=serve + "/v1", api_key=KEY) as client,  # default retries
        pytest.raises(openai.RateLimitError),
    ):
        client.chat.completions.create(model="openai:gpt-4o-mini", messages=USER)  # type: ignore[arg-type]
    assert upstream.hits("bill-openai") - before == SDK_ATTEMPTS


def test_one_anthropic_sdk_call_costs_its_own_attempts_upstream(
    serve: str, upstream: FakeProvider
) -> None:
    before = upstream.hits("bill-anthropic")
    with (
        anthropic.Anthropic(base_url=serve, api_key=KEY) as client,  # default retries
        pytest.raises(anthropic.RateLimitError),
    ):
        client.messages.create(
            model="anthropic:claude-haiku-4-5",
            max_tokens=10,
            messages=USER,  # type: ignore[arg-type]
        )
    assert upstream.hits("bill-anthropic") - before == SDK_ATTEMPTS


def test_a_client_that_does_not_retry_costs_one_request_and_gets_retry_after(
    serve: str, upstream: FakeProvider
) -> None:
    before = upstream.hits("bill-openai")
    host, port = serve.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    body = json.dumps({"model": "openai:gpt-4o-mini", "messages": USER})
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    conn.request("POST", "/v1/chat/completions", body, headers)
    response = conn.getresponse()
    reply = json.loads(response.read())
    conn.close()
    assert response.status == 429 and response.getheader("retry-after") == "0"
    assert reply["error"]["type"] == "rate_limit_exceeded"
    assert upstream.hits("bill-openai") - before == 1


def test_server_attempts_multiply_the_clients_when_an_operator_turns_them_on(
    upstream: FakeProvider,
) -> None:
    """The documented worst case: N server attempts x the client's attempts."""
    url = upstream.base_url("429", "openai-chat", "bill-times-two") + "/v1"
    backend = provider_backend(
        {"OPENAI_API_KEY": "sk-upstream"}, base_urls={"openai": url}, upstream_attempts=2
    )
    with (
        Server(App(backend, ServerConfig(api_key=KEY))) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=1) as client,
        pytest.raises(openai.RateLimitError),
    ):
        client.chat.completions.create(model="openai:gpt-4o-mini", messages=USER)  # type: ignore[arg-type]
    assert upstream.hits("bill-times-two") == 2 * 2
