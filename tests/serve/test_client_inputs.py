"""What a gateway client may not make the server do with its credentials (attacks found
in review): swap an allowed server tool for another, set a tool-level cache TTL, ask for
unbounded searches, make the upstream fetch an intranet or provider-file URL, or pin the
CPU with a small schema. Each is a 400 from the pure codec, before any upstream call:
`parse_request` is what the app runs first, so no backend is ever reached."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamfn.core._messages import ServerTool
from streamfn.core.catalogue._models import get_model
from streamfn.core.content._server_tools import tool_objects
from streamfn.core.serve._client_inputs import MAX_SERVER_TOOL_USES
from streamfn.core.serve._routes import parse_request
from streamfn.core.serve._status import HTTPError

WEB = frozenset({"web_search"})


def _native(tools: list[dict[str, Any]], content: Any = "hi") -> bytes:
    return json.dumps(
        {
            "model": "m",
            "context": {
                "messages": [{"type": "user", "content": content}],
                "tools": tools,
            },
        }
    ).encode()


def _refused(path: str, body: bytes, **kw: Any) -> str:
    with pytest.raises(HTTPError) as caught:
        parse_request(path, body, **kw)
    assert caught.value.status == 400
    return str(caught.value)


@pytest.mark.parametrize(
    "config",
    [
        {"type": "mcp", "server_url": "https://evil.example", "require_approval": "never"},
        {"name": "other"},
        {"vector_store_ids": ["vs_operator"]},
        {"container": "cntr_operator"},
        {"cache_ttl": "1h"},
    ],
)
def test_a_server_tool_config_cannot_swap_the_tool_or_reach_the_operators_things(
    config: dict[str, Any],
) -> None:
    body = _native([{"kind": "server", "type": "web_search", "config": config}])
    assert "cannot be set by a client" in _refused("/v1/stream", body, allow_server_tools=WEB)


def test_even_a_library_users_config_never_replaces_the_tools_type() -> None:
    from streamfn.core._messages import Context

    context = Context(
        messages=Context.of("hi").messages,
        tools=[ServerTool(type="web_search", config={"type": "mcp"})],
    )
    for name in ("google:gemini-2.5-flash", "anthropic:claude-sonnet-4-5"):
        (obj,) = tool_objects(get_model(name), context)
        assert obj.get("type") != "mcp"  # Gemini nests config inside googleSearch


def test_a_tool_level_cache_ttl_from_an_anthropic_client_is_dropped() -> None:
    body = json.dumps(
        {
            "model": "m",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [
                {
                    "type": "web_search_20250305",
                    "name": "web_search",
                    "max_uses": 2,
                    "cache_control": {"type": "ephemeral", "ttl": "1h"},
                }
            ],
        }
    ).encode()
    request = parse_request("/v1/messages", body, WEB)
    (tool,) = [t for t in request.context.tools if isinstance(t, ServerTool)]
    assert tool.config == {"max_uses": 2}


@pytest.mark.parametrize("uses", [MAX_SERVER_TOOL_USES + 1, 1000, 0, "3", 2.5])
def test_searches_per_request_are_capped(uses: Any) -> None:
    body = _native([{"kind": "server", "type": "web_search", "config": {"max_uses": uses}}])
    assert "max_uses" in _refused("/v1/stream", body, allow_server_tools=WEB)


def test_one_server_tool_of_each_type() -> None:
    tool = {"kind": "server", "type": "web_search"}
    assert "one server tool" in _refused(
        "/v1/stream", _native([tool, tool]), allow_server_tools=WEB
    )


def _image_url(url: str) -> bytes:
    return json.dumps(
        {
            "model": "m",
            "stream": True,
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": url}}],
                }
            ],
        }
    ).encode()


def test_input_urls_are_off_unless_the_operator_allows_them() -> None:
    body = _image_url("https://example.com/a.png")
    assert "--allow-input-urls" in _refused("/v1/chat/completions", body)
    request = parse_request("/v1/chat/completions", body, allow_input_urls=True)
    assert request.context.messages


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:8080/admin",
        "http://10.0.0.5/internal.png",
        "http://[::1]/x.png",
        "http://localhost/x.png",
        "https://generativelanguage.googleapis.com/v1beta/files/abc123",
    ],
)
def test_even_allowed_urls_never_name_this_network_or_a_providers_files(url: str) -> None:
    _refused("/v1/chat/completions", _image_url(url), allow_input_urls=True)


def test_a_small_schema_that_expands_exponentially_is_a_quick_400() -> None:
    n = 40  # each definition uses the next twice: 2**40 nodes once inlined
    defs = {
        f"A{i}": {
            "type": "object",
            "properties": {
                "x": {"$ref": f"#/$defs/A{i + 1}"},
                "y": {"$ref": f"#/$defs/A{i + 1}"},
            },
        }
        for i in range(n)
    }
    defs[f"A{n}"] = {"type": "string"}
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A0"}}, "$defs": defs}
    body = json.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": schema},
            },
        }
    ).encode()
    assert "nodes" in _refused("/v1/chat/completions", body)


def test_a_long_ref_chain_is_a_400_not_a_recursion_error() -> None:
    chain: dict[str, Any] = {f"B{i}": {"$ref": f"#/$defs/B{i + 1}"} for i in range(2000)}
    chain["B2000"] = {"type": "string"}
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/B0"}}, "$defs": chain}
    body = json.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": schema},
            },
        }
    ).encode()
    _refused("/v1/chat/completions", body)
