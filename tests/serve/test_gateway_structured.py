"""`streamfn serve`: what a client may ask for structured output and prompt caching.

A client's ``response_format`` json_schema (OpenAI dialect), ``output_config.format``
and ``cache_control`` (Anthropic dialect) become `Options.response_schema` and
``cache="auto"``; the server places the cache marks itself with the 5-minute TTL (a
client's 1-hour TTL would bill the operator twice the input price for writes), and
each request costs exactly one upstream request.
"""

from __future__ import annotations

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
from streamfn.core import Model
from streamfn.core.json._structured import ANSWER_TOOL
from streamfn.core.serve._inbound import (
    BadRequest,
    parse_anthropic_request,
    parse_native_request,
    parse_openai_request,
)
from streamfn.io_asyncio._backends import ProviderBackend
from streamfn.io_asyncio._server import App

SCHEMA = {
    "type": "object",
    "properties": {"greeting": {"type": "string"}},
    "required": ["greeting"],
    "additionalProperties": False,
}
USER = [{"role": "user", "content": "Say hello"}]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream: FakeProvider) -> Iterator[Server]:
    models = [
        Model(  # an older Claude: structured output through the forced answer tool
            id="claude-3-5-haiku-fake",
            provider="anthropic",
            api="anthropic",
            base_url=upstream.base_url("ok", "anthropic", "gw-structured"),
        ),
        Model(  # no JSON-schema output: a schema is refused before any upstream request
            id="deepseek-chat",
            provider="deepseek",
            api="openai-chat",
            base_url=upstream.base_url("ok", "openai-chat", "gw-structured-deepseek"),
        ),
    ]
    environ = {"ANTHROPIC_API_KEY": "upstream-key", "DEEPSEEK_API_KEY": "upstream-key"}
    backend = ProviderBackend(environ=environ, models=models)
    with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
        yield server


def _sent(upstream: FakeProvider, before: int) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in upstream.requests[before:] if "gw-structured" in r.path]


def test_an_openai_client_s_json_schema_reaches_the_upstream_once(
    gateway: Server, upstream: FakeProvider
) -> None:
    before = len(upstream.requests)
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client:
        chunks = list(
            client.chat.completions.create(
                model="anthropic:claude-3-5-haiku-fake",
                messages=USER,  # type: ignore[arg-type]
                stream=True,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "hello", "schema": SCHEMA, "strict": True},
                },
            )
        )
    assert chunks
    (sent,) = _sent(upstream, before)  # one upstream request for one client request
    assert sent["tool_choice"] == {"type": "tool", "name": ANSWER_TOOL}
    assert sent["tools"][-1]["input_schema"] == SCHEMA


def test_an_anthropic_client_s_cache_marks_become_the_server_s_own(
    gateway: Server, upstream: FakeProvider
) -> None:
    before = len(upstream.requests)
    system = [{"type": "text", "text": "Be brief. " * 50, "cache_control": {"type": "ephemeral",
                                                                          "ttl": "1h"}}]  # fmt: skip
    with anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as client:
        client.messages.create(
            model="anthropic:claude-3-5-haiku-fake",
            max_tokens=50,
            system=system,  # type: ignore[arg-type]
            messages=USER,  # type: ignore[arg-type]
            output_config={"format": {"type": "json_schema", "schema": SCHEMA}},
        )
    (sent,) = _sent(upstream, before)
    assert sent["system"][-1]["cache_control"] == {"type": "ephemeral"}  # 5m: no 1h bill
    assert sent["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["tool_choice"]["name"] == ANSWER_TOOL


def test_inbound_requests_map_or_refuse_schemas_and_cache() -> None:
    openai_body = {"model": "m", "messages": USER}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}}
    parsed = parse_openai_request(json.dumps(openai_body | {"response_format": fmt}).encode())
    assert parsed.options.response_schema == SCHEMA and parsed.options.cache is None
    text = parse_openai_request(
        json.dumps(openai_body | {"response_format": {"type": "text"}}).encode()
    )
    assert text.options.response_schema is None
    remote = {"type": "object", "properties": {"a": {"$ref": "http://169.254.169.254/"}}}
    for bad in (
        {"type": "json_object"},
        {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array"}}},
        {"type": "json_schema", "json_schema": {"name": "x", "schema": remote}},
    ):
        with pytest.raises(BadRequest, match=r"request\.response_format"):
            parse_openai_request(json.dumps(openai_body | {"response_format": bad}).encode())
    anthropic_body = {"model": "m", "max_tokens": 5, "messages": USER}
    plain = parse_anthropic_request(json.dumps(anthropic_body).encode())
    assert plain.options.cache is None
    top = parse_anthropic_request(
        json.dumps(anthropic_body | {"cache_control": {"type": "ephemeral"}}).encode()
    )
    assert top.options.cache == "auto"
    with pytest.raises(BadRequest, match=r"output_config\.effort: .*adaptive"):
        parse_anthropic_request(  # an effort steers adaptive thinking; alone it is refused
            json.dumps(anthropic_body | {"output_config": {"effort": "max"}}).encode()
        )
    with pytest.raises(BadRequest, match="output_config: only 'format' and 'effort'"):
        parse_anthropic_request(
            json.dumps(anthropic_body | {"output_config": {"task_budget": 1}}).encode()
        )
    native = {"model": "m", "context": {"messages": [{"type": "user", "content": "hi"}]}}
    ok = parse_native_request(
        json.dumps(native | {"options": {"cache": "auto", "response_schema": SCHEMA}}).encode()
    )
    assert (ok.options.cache, ok.options.response_schema) == ("auto", SCHEMA)
    points = {"cache": [{"at": "system", "ttl": "1h"}]}
    with pytest.raises(BadRequest, match="explicit cache points are the server's choice"):
        parse_native_request(json.dumps(native | {"options": points}).encode())
    with pytest.raises(BadRequest, match="options"):
        parse_native_request(json.dumps(native | {"options": {"cache_key": "k"}}).encode())


def test_a_schema_for_a_model_without_schema_output_is_a_400_and_costs_nothing(
    gateway: Server, upstream: FakeProvider
) -> None:
    before = len(upstream.requests)
    fmt = {"type": "json_schema", "json_schema": {"name": "hello", "schema": SCHEMA}}
    with (
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client,
        pytest.raises(openai.BadRequestError, match="does not take a response schema"),
    ):
        client.chat.completions.create(
            model="deepseek:deepseek-chat",
            messages=USER,  # type: ignore[arg-type]
            response_format=fmt,  # type: ignore[arg-type]
        )
    assert len(upstream.requests) == before
