"""`streamfn serve` and what clients send beyond text: image URLs, documents, server tools.

Real clients (the official openai and anthropic SDKs) talk to the gateway,
which talks to a loopback fake provider; what reaches the upstream is read
from the fake's request log. The bill is counted: a client request carrying a
server tool the operator did not allow is a 400 naming it, and the upstream
sees zero requests. URLs go through to the provider untouched (the provider
fetches them; the gateway never does) and only ``http(s)`` ones.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server

from streamfn.asgi import ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import Model
from streamfn.core.catalogue._models import openai_compatible
from streamfn.io_asyncio._backends import ProviderBackend
from streamfn.io_asyncio._server import App

PDF = b"%PDF-1.4\n%%EOF\n"
IMAGE_URL = "https://example.com/cat.png"
SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


def _gateway(upstream: FakeProvider, token: str, **config: Any) -> Server:
    models = [
        openai_compatible("fake-gpt", upstream.base_url("ok", "openai-chat", token + "-openai")),
        Model(
            id="claude-fake",
            provider="anthropic",
            api="anthropic",
            base_url=upstream.base_url("ok", "anthropic", token + "-anthropic"),
        ),
    ]
    backend = ProviderBackend(environ={"ANTHROPIC_API_KEY": "upstream-key"}, models=models)
    config = ServerConfig(api_key=KEY, **config)
    return Server(App(RouterBackend(None, backend), config, resolver=_public_dns))


def _public_dns(name: str) -> list[str]:
    """DNS as the server would see it (these tests run without a network): example.com
    resolves to a public address, other names to nothing."""
    return ["93.184.215.14"] if name == "example.com" else []


@pytest.fixture(scope="module")
def gateway(upstream: FakeProvider) -> Iterator[Server]:
    with _gateway(upstream, "gw-in", allow_input_urls=True) as server:
        yield server


@pytest.fixture(scope="module")
def open_gateway(upstream: FakeProvider) -> Iterator[Server]:
    with _gateway(upstream, "gw-open", allow_server_tools=("web_search",)) as server:
        yield server


def _sent(upstream: FakeProvider, token: str) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in upstream.requests if token in r.path]


def _user(*blocks: dict[str, Any]) -> list[Any]:
    return [{"role": "user", "content": [{"type": "text", "text": "Describe"}, *blocks]}]


def test_a_client_server_tool_is_a_400_and_nothing_goes_upstream(
    gateway: Server, upstream: FakeProvider
) -> None:
    before = len(upstream.requests)
    with (
        anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as claude,
        pytest.raises(anthropic.BadRequestError, match=r"web_search.*allow-server-tools"),
    ):
        claude.messages.create(
            model="anthropic:claude-fake",
            max_tokens=50,
            messages=_user(),
            tools=[SEARCH],  # type: ignore[list-item]
        )
    with (
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as gpt,
        pytest.raises(openai.BadRequestError, match="web_search"),
    ):
        gpt.chat.completions.create(
            model="anthropic:claude-fake",
            messages=[{"role": "user", "content": "hi"}],
            web_search_options={},
        )
    native = {
        "model": "anthropic:claude-fake",
        "context": {
            "messages": [{"type": "user", "content": "hi"}],
            "tools": [{"kind": "server", "type": "code_execution"}],
        },
    }
    answer = httpx.post(
        gateway.url + "/v1/stream", json=native, headers={"authorization": f"Bearer {KEY}"}
    )
    assert answer.status_code == 400
    assert "code_execution" in answer.text
    assert len(upstream.requests) == before  # the bill: zero upstream requests


def test_an_allowed_server_tool_reaches_the_provider_in_its_own_form(
    open_gateway: Server, upstream: FakeProvider
) -> None:
    with anthropic.Anthropic(base_url=open_gateway.url, api_key=KEY, max_retries=0) as claude:
        claude.messages.create(
            model="anthropic:claude-fake",
            max_tokens=50,
            messages=_user(),
            tools=[SEARCH],  # type: ignore[list-item]
        )
    sent = _sent(upstream, "gw-open-anthropic")
    assert len(sent) == 1
    assert sent[0]["tools"] == [SEARCH]


def test_openai_clients_send_image_urls_and_files_through(
    gateway: Server, upstream: FakeProvider
) -> None:
    file_data = "data:application/pdf;base64," + base64.b64encode(PDF).decode()
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as gpt:
        gpt.chat.completions.create(
            model="anthropic:claude-fake",
            messages=_user(
                {"type": "image_url", "image_url": {"url": IMAGE_URL}},
                {"type": "file", "file": {"file_data": file_data, "filename": "report.pdf"}},
            ),
        )
        with pytest.raises(openai.BadRequestError, match="file_id"):
            gpt.chat.completions.create(
                model="anthropic:claude-fake",
                messages=_user({"type": "file", "file": {"file_id": "file-someone-elses"}}),
            )
        with pytest.raises(openai.BadRequestError, match="http"):
            gpt.chat.completions.create(
                model="anthropic:claude-fake",
                messages=_user({"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}),
            )
    content = _sent(upstream, "gw-in-anthropic")[-1]["messages"][0]["content"]
    assert content[1] == {"type": "image", "source": {"type": "url", "url": IMAGE_URL}}
    assert content[2] == {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(PDF).decode(),
        },
        "title": "report.pdf",
    }


def test_anthropic_clients_send_documents_and_a_kind_the_upstream_lacks_is_a_400(
    gateway: Server, upstream: FakeProvider
) -> None:
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "notes"},
    }
    url_document = {
        "type": "document",
        "source": {"type": "url", "url": "https://example.com/a.pdf"},
    }
    image = {"type": "image", "source": {"type": "url", "url": IMAGE_URL}}
    with anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as claude:
        claude.messages.create(
            model="anthropic:claude-fake", max_tokens=50, messages=_user(document, image)
        )
        content = _sent(upstream, "gw-in-anthropic")[-1]["messages"][0]["content"]
        assert content[1]["source"] == {"type": "text", "media_type": "text/plain", "data": "notes"}
        assert content[2] == image
        before = len(upstream.requests)
        # an OpenAI-compatible upstream takes no documents by URL: a 400 that says so
        with pytest.raises(anthropic.BadRequestError, match=r"document_url.*from_bytes"):
            claude.messages.create(
                model="openai-compatible:fake-gpt", max_tokens=50, messages=_user(url_document)
            )
        assert len(upstream.requests) == before


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/chat/completions",
            {
                "messages": _user(
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}}
                )
            },
        ),
        (
            "/v1/chat/completions",
            {"messages": _user({"type": "file", "file": {"file_data": "data:;base64,"}})},
        ),
        (
            "/v1/messages",
            {
                "max_tokens": 5,
                "messages": _user(
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "", "data": "AA=="},
                    }
                ),
            },
        ),
        (
            "/v1/messages",
            {
                "max_tokens": 5,
                "messages": _user(
                    {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": ""},
                    }
                ),
            },
        ),
        (
            "/v1/messages",
            {
                "max_tokens": 5,
                "messages": _user(),
                "tools": [{"type": "bash_20250124", "name": "bash"}],
            },
        ),
    ],
)
def test_malformed_parts_are_400s_naming_the_field(
    gateway: Server, upstream: FakeProvider, path: str, body: dict[str, Any]
) -> None:
    before = len(upstream.requests)
    answer = httpx.post(
        gateway.url + path,
        json={"model": "anthropic:claude-fake", **body},
        headers={"authorization": f"Bearer {KEY}", "x-api-key": KEY},
    )
    assert answer.status_code == 400, answer.text
    assert "messages[0].content[1]" in answer.text or "tools[0]" in answer.text
    assert len(upstream.requests) == before


def test_an_unknown_server_tool_type_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from test_serve_cli import _serve

    assert _serve("--no-local", "--allow-server-tools", "web_search,websearch") == 2
    assert "--allow-server-tools: unknown type 'websearch'" in capsys.readouterr().err
