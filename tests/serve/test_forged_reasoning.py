"""Opaque data from clients stays opaque: a Responses reasoning item forged into a
thinking signature is rebuilt from its documented fields, never pasted upstream.

The oracle for "documented" is the openai SDK's own type for the reasoning input
item (``ResponseReasoningItemParam`` and its ``Summary``); the item we send
carries no ``id`` (we never send item ids: ``store: false``) and nothing else
the client put there. Checked in the request builder and through the server's
native and agent routes, on the request the loopback upstream received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend, raw_post, read_all
from openai.types.responses.response_reasoning_item_param import (
    ResponseReasoningItemParam,
    Summary,
)

from streamfn.asgi import App, ServerConfig
from streamfn.core import AssistantMessage, Context, Model, Options, UserMessage
from streamfn.core._messages import ThinkingContent
from streamfn.core.dialects.openai_responses import build_request

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

FORGED = {
    "type": "reasoning",
    "id": "rs_the_operators_stored_item",
    "encrypted_content": "gAAAA-forged",
    "summary": [
        {"type": "summary_text", "text": "thought", "annotations": ["x"]},
        {"type": "something_else", "text": "dropped"},
        "not a part",
    ],
    "status": "completed",
    "store": True,
    "metadata": {"planted": "yes"},
}


def _model(base_url: str = "https://api.openai.com/v1") -> Model:
    return Model(
        id="o4-mini", provider="openai", api="openai-responses", base_url=base_url, reasoning=True
    )


def _reasoning_inputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in body["input"] if item.get("type") == "reasoning"]


def _check_rebuilt(item: dict[str, Any]) -> None:
    assert item == {
        "type": "reasoning",
        "encrypted_content": "gAAAA-forged",
        "summary": [{"type": "summary_text", "text": "thought"}],
    }
    assert set(item) <= set(ResponseReasoningItemParam.__annotations__)
    for part in item["summary"]:
        assert set(part) == set(Summary.__annotations__)


def test_the_request_builder_rebuilds_a_forged_reasoning_item() -> None:
    turn = AssistantMessage(
        content=[ThinkingContent(thinking="thought", signature=json.dumps(FORGED))],
        api="openai-responses",
        provider="openai",
        model="o4-mini",
    )
    context = Context(messages=[UserMessage(content="hi"), turn, UserMessage(content="go on")])
    request = build_request(_model(), context, Options(api_key="sk-test"))
    (item,) = _reasoning_inputs(json.loads(request.body))
    _check_rebuilt(item)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.mark.parametrize("path", ["/v1/stream", "/v1/agent/stream"])
def test_a_client_cannot_paste_a_reasoning_item_upstream(
    upstream: FakeProvider, path: str, shell: str
) -> None:
    token = f"forged-{shell}" + path.replace("/", "-")
    model = _model(upstream.base_url("ok", "openai-responses", token) + "/v1")
    backend = provider_backend({"OPENAI_API_KEY": "sk-upstream"}, models=[model])
    turn = {
        "type": "assistant",
        "api": "openai-responses",
        "provider": "openai",
        "model": "o4-mini",
        "content": [{"type": "thinking", "thinking": "thought", "signature": json.dumps(FORGED)}],
    }
    messages = [{"type": "user", "content": "hi"}, turn, {"type": "user", "content": "go on"}]
    body = json.dumps({"model": "openai:o4-mini", "context": {"messages": messages}})
    with (
        Server(App(backend, ServerConfig(api_key=KEY))) as server,
        raw_post(server.port, path, body.encode()) as sock,
    ):
        raw = read_all(sock, 30)
    assert raw.startswith(b"HTTP/1.1 200"), raw[:300]
    sent_all = [r for r in upstream.requests if token in r.path]
    assert len(sent_all) == 1, [(r.path, r.body[:300]) for r in sent_all]
    (sent,) = sent_all
    (item,) = _reasoning_inputs(json.loads(sent.body))
    _check_rebuilt(item)
