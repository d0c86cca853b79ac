"""Images by URL and bytes, documents, and server tools, in every wire format.

Each request body is validated by the oracles of `request_oracles` (the
official SDK request types, botocore's ConverseStream shape): every input
kind a model declares it takes, and every server tool it offers, next to a
function tool and with ``extra_body`` deep-merged. A kind or tool it cannot
take is an `UnsupportedInput` naming the provider, the kind and the remedy,
raised before anything is sent (the shell opens no connection).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from fake_provider import FakeProvider
from request_oracles import PNG, build_body, violations
from test_request_conformance import ONE_PER_ORACLE, TOOLS

from streamfn.core import (
    Context,
    DocumentContent,
    ImageContent,
    Model,
    Options,
    ServerTool,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    open_call,
)
from streamfn.core._wire_formats import API_NAMES, wire_format
from streamfn.core.content._documents import INPUT_KINDS, UnsupportedInput, input_kind, inputs_for
from streamfn.core.content._server_tools import SERVER_TOOL_TYPES, server_tools_for
from streamfn.io_asyncio import Client

#: each wire format's server-tool config keys, as its room says
CONFIG_KEYS = {api: wire_format(api).server_tool_keys for api in API_NAMES}
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"

#: one part of each input kind
PARTS: dict[str, ImageContent | DocumentContent] = {
    "image": ImageContent(data=PNG, mime_type="image/png"),
    "image_url": ImageContent.from_url("https://example.com/cat.png"),
    "document": DocumentContent.from_bytes(PDF, title="Q3 report (final)"),
    "document_url": DocumentContent.from_url("https://example.com/paper.pdf", title="Paper"),
}
#: config each format's SDK type accepts, per server tool type
CONFIG: dict[str, dict[str, dict[str, Any]]] = {
    "anthropic": {"web_search": {"max_uses": 3, "allowed_domains": ["example.com"]}},
    "openai-responses": {"web_search": {"search_context_size": "low"}},
    "openai-chat": {"web_search": {"search_context_size": "low"}},
    "gemini": {},
}


def _ids(model: Model) -> str:
    return f"{model.api}-{model.provider}"


def _question(*parts: ImageContent | DocumentContent) -> UserMessage:
    return UserMessage(content=[TextContent(text="What does this show?"), *parts])


@pytest.mark.parametrize("target", ONE_PER_ORACLE, ids=_ids)
def test_every_input_kind_a_model_takes_is_a_body_its_api_accepts(target: Model) -> None:
    takes = inputs_for(target)
    assert "image" in takes
    parts = [PARTS[kind] for kind in INPUT_KINDS if kind in takes]
    if "document" in takes:
        parts.append(DocumentContent.from_bytes(b"plain notes", "text/plain", title="notes"))
    context = Context(messages=[_question(*parts)], tools=TOOLS)
    body = build_body(target, context)
    assert violations(target, body) == []
    sent = json.dumps(body)
    for kind in takes:
        part = PARTS[kind]
        assert (part.url or part.data) in sent, f"{kind} did not reach the body"


@pytest.mark.parametrize("target", ONE_PER_ORACLE, ids=_ids)
def test_a_kind_the_model_cannot_take_is_refused_by_name(target: Model) -> None:
    refused = [kind for kind in INPUT_KINDS if kind not in inputs_for(target)]
    for kind in refused:
        with pytest.raises(UnsupportedInput) as caught:
            open_call(target, Context(messages=[_question(PARTS[kind])]), Options(api_key="k"))
        message = str(caught.value)
        assert target.provider in message and kind in message
        assert "from_bytes" in message or "extract" in message


@pytest.mark.parametrize("target", ONE_PER_ORACLE, ids=_ids)
def test_server_tools_sit_beside_function_tools(target: Model) -> None:
    offered = server_tools_for(target)
    config = CONFIG.get(target.api, {})
    tools = [*TOOLS, *(ServerTool(type=t, config=config.get(t, {})) for t in offered)]
    context = Context(messages=[_question()], tools=tools)
    if not offered:
        assert target.api in ("bedrock", "ollama") or target.provider == "mistral"
    for options in (Options(), Options(tool_choice="auto")):
        body = build_body(target, context, options)
        assert violations(target, body) == []
    for kind in SERVER_TOOL_TYPES:
        if kind not in offered:
            lone = Context(messages=[_question()], tools=[ServerTool(type=kind)])
            with pytest.raises(UnsupportedInput, match=rf"{target.provider}.*{kind}"):
                open_call(target, lone, Options(api_key="k"))


def _anthropic() -> Model:
    return next(m for m in ONE_PER_ORACLE if m.api == "anthropic")


def test_server_tools_map_to_each_format_and_extra_body_still_merges() -> None:
    by_api = {m.api: m for m in ONE_PER_ORACLE}
    context = Context(
        messages=[_question()],
        tools=[*TOOLS, ServerTool(type="web_search", config={"max_uses": 2})],
    )
    fetch = {"type": "web_fetch_20250910", "name": "web_fetch"}
    body = build_body(by_api["anthropic"], context, Options(extra_body={"tools": [fetch]}))
    assert [t.get("type") for t in body["tools"]] == [
        None,
        None,
        "web_search_20250305",
        fetch["type"],
    ]
    assert body["tools"][2]["max_uses"] == 2
    assert violations(by_api["anthropic"], body) == []
    search = Context(messages=[_question()], tools=[ServerTool(type="web_search")])
    code = Context(messages=[_question()], tools=[ServerTool(type="code_execution")])
    assert build_body(by_api["openai-responses"], code)["tools"] == [
        {"type": "code_interpreter", "container": {"type": "auto"}}
    ]
    assert build_body(by_api["gemini"], search)["tools"] == [{"googleSearch": {}}]
    assert build_body(by_api["gemini"], code)["tools"] == [{"codeExecution": {}}]
    chat = next(m for m in ONE_PER_ORACLE if m.api == "openai-chat" and m.provider == "openai")
    assert build_body(chat, search)["web_search_options"] == {}
    assert "tools" not in build_body(chat, search)


def test_document_forms_per_format() -> None:
    by_api = {m.api: m for m in ONE_PER_ORACLE}
    doc = DocumentContent.from_bytes(PDF, title="Q3 report (final)")
    context = Context(messages=[_question(doc)])
    part = build_body(by_api["bedrock"], context)["messages"][0]["content"][1]
    assert part == {
        "document": {
            "format": "pdf",
            "name": "Q3 report (final)",
            "source": {"bytes": base64.b64encode(PDF).decode()},
        }
    }
    part = build_body(by_api["anthropic"], context)["messages"][0]["content"][1]
    assert part["source"] == {
        "type": "base64",
        "media_type": "application/pdf",
        "data": base64.b64encode(PDF).decode(),
    }
    chat = next(m for m in ONE_PER_ORACLE if m.api == "openai-chat" and m.provider == "openai")
    part = build_body(chat, context)["messages"][0]["content"][1]
    assert part["file"]["file_data"].startswith("data:application/pdf;base64,")
    url = Context(messages=[_question(PARTS["document_url"])])
    assert build_body(by_api["openai-responses"], url)["input"][0]["content"][1] == {
        "type": "input_file",
        "file_url": "https://example.com/paper.pdf",
    }
    assert build_body(by_api["gemini"], url)["contents"][0]["parts"][1] == {
        "fileData": {"fileUri": "https://example.com/paper.pdf", "mimeType": "application/pdf"}
    }


def test_documents_in_tool_results_only_where_the_format_has_room() -> None:
    result = ToolResultMessage(tool_call_id="c1", tool_name="fetch", content=[PARTS["document"]])
    from test_convert import turn

    for target in ONE_PER_ORACLE:
        if "document" not in inputs_for(target):
            continue
        call = turn(target, ToolCall(id="c1", name="fetch"), stop=StopReason.TOOL_USE)
        context = Context(messages=[_question(), call, result], tools=TOOLS)
        if target.api == "anthropic":
            assert violations(target, build_body(target, context)) == []
        else:
            with pytest.raises(UnsupportedInput, match="tool results"):
                open_call(target, context, Options(api_key="k"))


def test_parts_need_exactly_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ImageContent(data=PNG, mime_type="image/png", url="https://example.com/a.png")
    with pytest.raises(ValueError, match="exactly one"):
        DocumentContent()
    with pytest.raises(ValueError, match="mime_type"):
        ImageContent(data=PNG)
    assert input_kind(ImageContent.from_bytes(b"\x89PNG", "image/png")) == "image"


def test_refusal_happens_before_any_connection() -> None:
    """An image URL to Ollama: the shell raises and the fake provider sees nothing."""
    with FakeProvider() as fake:
        model = Model(
            id="llava", provider="ollama", api="ollama", base_url=fake.base_url("ok", "ollama")
        )
        context = Context(messages=[_question(PARTS["image_url"])])

        async def attempt() -> None:
            async with Client() as client, client.stream(model, context, Options()) as events:
                async for _ in events:
                    pass

        with pytest.raises(UnsupportedInput, match=r"ollama.*image_url"):
            asyncio.run(attempt())
        assert fake.requests == []
        assert fake.connections == 0


# ---------------------------------------------------------------------------
# Server-tool config keys: each provider's own, refused before sending otherwise
# ---------------------------------------------------------------------------


def _sdk_keys() -> dict[tuple[str, str], frozenset[str]]:
    """The fields of each SDK's tool type, besides the type and name we set."""
    import typing

    from anthropic.types import CodeExecutionTool20250825Param, WebSearchTool20250305Param
    from google.genai import types as genai
    from openai.types.chat.completion_create_params import WebSearchOptions
    from openai.types.responses.tool_param import CodeInterpreter
    from openai.types.responses.web_search_tool_param import WebSearchToolParam
    from pydantic.alias_generators import to_camel

    def fields(typed: Any) -> frozenset[str]:
        return frozenset(typing.get_type_hints(typed)) - {"type", "name"}

    def camel(model: Any) -> frozenset[str]:
        return frozenset(to_camel(name) for name in model.model_fields)

    return {
        ("anthropic", "web_search"): fields(WebSearchTool20250305Param),
        ("anthropic", "code_execution"): fields(CodeExecutionTool20250825Param),
        ("openai-responses", "web_search"): fields(WebSearchToolParam),
        ("openai-responses", "code_execution"): fields(CodeInterpreter),
        ("openai-chat", "web_search"): fields(WebSearchOptions),
        ("gemini", "web_search"): camel(genai.GoogleSearch),
        ("gemini", "code_execution"): camel(genai.ToolCodeExecution),
    }


def test_the_config_keys_table_is_the_sdks_tool_fields() -> None:
    sdk = _sdk_keys()
    ours = {(api, kind): keys for api, kinds in CONFIG_KEYS.items() for kind, keys in kinds.items()}
    assert set(ours) == set(sdk)
    for where, keys in ours.items():
        assert keys <= sdk[where], (where, keys - sdk[where])
    assert "max_uses" in ours["anthropic", "web_search"]
    assert all("max_uses" not in keys for where, keys in ours.items() if where[0] != "anthropic")


@pytest.mark.parametrize(
    "target",
    [
        Model(id="gpt-5", provider="openai", api="openai-responses", base_url="x"),
        Model(id="gpt-4o-search-preview", provider="openai", api="openai-chat", base_url="x"),
        Model(id="gemini-2.5-flash", provider="google", api="gemini", base_url="x"),
    ],
    ids=lambda m: m.api,
)
def test_max_uses_is_refused_before_sending_where_the_tool_has_none(target: Model) -> None:
    context = Context(
        messages=[_question()], tools=[ServerTool(type="web_search", config={"max_uses": 3})]
    )
    with pytest.raises(UnsupportedInput) as refused:
        open_call(target, context, Options(api_key="k"))
    message = str(refused.value)
    assert "'max_uses'" in message and target.provider in message
    for accepted in CONFIG_KEYS[target.api]["web_search"]:
        assert accepted in message  # the keys it does take


def test_each_provider_takes_its_own_keys() -> None:
    per_api = {
        "openai-responses": {"search_context_size": "low"},
        "openai-chat": {"search_context_size": "low"},
        "gemini": {"excludeDomains": ["example.com"]},
        "anthropic": {"max_uses": 2, "allowed_domains": ["example.com"]},
    }
    targets = {
        "openai-responses": Model(
            id="gpt-5", provider="openai", api="openai-responses", base_url="x"
        ),
        "openai-chat": Model(id="gpt-4o", provider="openai", api="openai-chat", base_url="x"),
        "gemini": Model(id="gemini-2.5-flash", provider="google", api="gemini", base_url="x"),
        "anthropic": _anthropic(),
    }
    for api, config in per_api.items():
        context = Context(
            messages=[_question()], tools=[ServerTool(type="web_search", config=config)]
        )
        body = build_body(targets[api], context)
        assert violations(targets[api], body) == [], api
    code = Context(
        messages=[_question()],
        tools=[
            ServerTool(
                type="code_execution", config={"container": {"type": "auto", "memory_limit": "4g"}}
            )
        ],
    )
    body = build_body(targets["openai-responses"], code)
    assert body["tools"][0]["container"]["memory_limit"] == "4g"  # the caller's container wins
