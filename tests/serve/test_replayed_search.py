"""An Anthropic client sends back the web-search blocks `streamfn serve` gave it.

The anthropic SDK is the client: it reads a real recorded web search (relayed by the
gateway from a loopback upstream) and sends the turn back as the Messages API
expects. The blocks reach an Anthropic upstream as the SDK parsed them, another
upstream goes without them, and a server that does not allow web search refuses
them with a 400 naming the fix, with no upstream request. Then the attacker's side,
on the pure codec: nothing but the documented shape passes, so no field, tool or
cache TTL the server's policy refuses elsewhere rides in on a replayed block.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from corpus_support import CORPUS, corpus_dir
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import Model
from streamfn.core._messages import AssistantMessage, OpaqueContent
from streamfn.core.catalogue._models import openai_compatible
from streamfn.core.serve._routes import parse_request
from streamfn.core.serve._status import HTTPError

RECORDING = CORPUS / "anthropic" / "thinking-web-search.sse"
SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
REPLAYED = ("server_tool_use", "web_search_tool_result")
QUESTION = {"role": "user", "content": "What's the weather in San Francisco?"}
FOLLOW_UP = {"role": "user", "content": "And tomorrow?"}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


def _gateway(upstream: FakeProvider, claude_url: str, **config: Any) -> Server:
    models = [
        Model(id="claude-search", provider="anthropic", api="anthropic", base_url=claude_url),
        openai_compatible("fake-gpt", upstream.base_url("ok", "openai-chat", "replay-gpt")),
    ]
    backend = provider_backend(
        environ={"ANTHROPIC_API_KEY": "upstream-key"}, models=models, registry=False
    )
    return Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY, **config)))


def _sent(upstream: FakeProvider, token: str) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in upstream.requests if token in r.path]


def _search_blocks(message: anthropic.types.Message) -> list[dict[str, Any]]:
    blocks = [b.model_dump(mode="json", exclude_none=True) for b in message.content]
    return [b for b in blocks if b["type"] in REPLAYED]


def test_an_anthropic_client_replays_its_web_search_turn(upstream: FakeProvider) -> None:
    corpus_dir()
    claude_url = upstream.serve(RECORDING.read_bytes(), token="replay-claude")
    with (
        _gateway(upstream, claude_url, allow_server_tools=("web_search",)) as gateway,
        anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as claude,
    ):
        first = claude.messages.create(
            model="anthropic:claude-search",
            max_tokens=1000,
            messages=[QUESTION],
            tools=[SEARCH_TOOL],  # type: ignore[list-item]
        )
        # the SDK's own reading of what the gateway relayed is the oracle
        searches = _search_blocks(first)
        assert [b["type"] for b in searches] == [*REPLAYED, *REPLAYED]
        with claude.messages.stream(
            model="anthropic:claude-search",
            max_tokens=1000,
            messages=[QUESTION],
            tools=[SEARCH_TOOL],  # type: ignore[list-item]
        ) as stream:
            assert _search_blocks(stream.get_final_message()) == searches
        assert searches[0]["input"] == {"query": "San Francisco weather today"}
        turn = [QUESTION, {"role": "assistant", "content": first.content}, FOLLOW_UP]

        claude.messages.create(
            model="anthropic:claude-search",
            max_tokens=1000,
            messages=turn,  # type: ignore[arg-type]
            tools=[SEARCH_TOOL],  # type: ignore[list-item]
        )
        sent = _sent(upstream, "replay-claude")[-1]["messages"][1]["content"]
        assert [b for b in sent if b["type"] in REPLAYED] == searches  # as they came

        # another upstream cannot take them: they are left out, the answer stays
        claude.messages.create(
            model="openai-compatible:fake-gpt",
            max_tokens=100,
            messages=turn,  # type: ignore[arg-type]
        )
        [gpt] = _sent(upstream, "replay-gpt")
        sent_gpt = json.dumps(gpt)
        assert "srvtoolu_" not in sent_gpt and "encrypted_content" not in sent_gpt
        answer = first.content[-1].text  # type: ignore[union-attr]
        assert json.dumps(answer)[1:-1] in sent_gpt

    before = len(upstream.requests)
    with (
        _gateway(upstream, claude_url) as closed,
        anthropic.Anthropic(base_url=closed.url, api_key=KEY, max_retries=0) as claude,
        pytest.raises(
            anthropic.BadRequestError, match=r"web search is off.*--allow-server-tools web_search"
        ),
    ):
        claude.messages.create(
            model="anthropic:claude-search",
            max_tokens=1000,
            messages=turn,  # type: ignore[arg-type]
        )
    assert len(upstream.requests) == before  # the bill: no upstream request


# -- the attacker's side, on the codec ----------------------------------------------

WEB = frozenset({"web_search"})
SEARCH: dict[str, Any] = {
    "type": "server_tool_use",
    "id": "srvtoolu_01",
    "name": "web_search",
    "input": {"query": "weather"},
}
RESULT: dict[str, Any] = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_01",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://example.com/weather",
            "title": "Weather",
            "encrypted_content": "EroTCioIBxgC",
            "page_age": "2 days ago",
        }
    ],
}


def _body(*blocks: dict[str, Any]) -> bytes:
    turn = [*blocks, {"type": "text", "text": "Sunny."}]
    return json.dumps(
        {
            "model": "m",
            "max_tokens": 10,
            "messages": [QUESTION, {"role": "assistant", "content": turn}, FOLLOW_UP],
        }
    ).encode()


def _replayed(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    request = parse_request("/v1/messages", _body(*blocks), WEB)
    [turn] = [m for m in request.context.messages if isinstance(m, AssistantMessage)]
    opaque = [b for b in turn.content if isinstance(b, OpaqueContent)]
    assert all(b.provider == "anthropic" for b in opaque)
    return [json.loads(b.json) for b in opaque]


def _refused(*blocks: dict[str, Any], allowed: frozenset[str] = WEB) -> str:
    with pytest.raises(HTTPError) as caught:
        parse_request("/v1/messages", _body(*blocks), allowed)
    assert caught.value.status == 400
    return str(caught.value)


def _with(block: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(block)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


def test_documented_blocks_pass_as_they_are_and_a_search_error_too() -> None:
    assert _replayed(SEARCH, RESULT) == [SEARCH, RESULT]
    error = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
    assert _replayed(SEARCH, _with(RESULT, ("content",), error))[1]["content"] == error
    no_age = _with(RESULT, ("content", 0, "page_age"), None)
    assert "page_age" not in _replayed(SEARCH, no_age)[1]["content"][0]


def test_a_client_cache_ttl_and_a_direct_caller_are_dropped() -> None:
    marked = _with(SEARCH, ("cache_control",), {"type": "ephemeral", "ttl": "1h"})
    direct = _with(RESULT, ("caller",), {"type": "direct"})
    assert _replayed(marked, direct) == [SEARCH, RESULT]
    request = parse_request("/v1/messages", _body(marked, RESULT), WEB)
    assert request.options.cache == "auto"  # the server's own 5-minute marks


def test_without_web_search_allowed_the_blocks_are_a_400_naming_the_fix() -> None:
    message = _refused(SEARCH, RESULT, allowed=frozenset({"code_execution"}))
    assert "--allow-server-tools web_search" in message and "leave" in message


@pytest.mark.parametrize(
    ("block", "words"),
    [
        # another server tool: reaches URLs, containers, the operator's files
        (_with(SEARCH, ("name",), "web_fetch"), "only 'web_search'"),
        (_with(SEARCH, ("name",), "code_execution"), "only 'web_search'"),
        (_with(SEARCH, ("input", "url"), "http://169.254.169.254/"), "'url'"),
        (_with(SEARCH, ("input",), "weather"), "wrong type"),
        (_with(SEARCH, ("caller",), {"type": "code_execution_20250825", "tool_id": "x"}), "caller"),
        # fields smuggled beside the documented ones
        (_with(SEARCH, ("citations",), [{"type": "char_location"}]), "'citations'"),
        (SEARCH | {"extra_body": {"model": "other"}}, "'extra_body'"),
    ],
)
def test_a_search_carries_nothing_but_a_query(block: dict[str, Any], words: str) -> None:
    assert words in _refused(block, RESULT)


@pytest.mark.parametrize(
    ("block", "words"),
    [
        (_with(RESULT, ("tool_use_id",), "srvtoolu_other"), "answers no web_search"),
        (_with(RESULT, ("content", 0, "source"), {"type": "file", "file_id": "f"}), "'source'"),
        (_with(RESULT, ("content", 0, "type"), "document"), "web_search_result"),
        (_with(RESULT, ("content", 0, "url"), 7), "wrong type"),
        (_with(RESULT, ("content",), {"type": "text", "text": "x"}), "'text'"),
        (
            _with(RESULT, ("content",), {"type": "web_search_tool_result_error", "error_code": 1}),
            "web_search_tool_result_error",
        ),
        (_with(RESULT, ("content",), "pages"), "must be a list"),
        (_with(RESULT, ("content", 0), "page"), "web_search_result"),
    ],
)
def test_a_result_carries_nothing_but_pages_of_a_search_it_answers(
    block: dict[str, Any], words: str
) -> None:
    assert words in _refused(SEARCH, block)


@pytest.mark.parametrize("code", [[], {"a": 1}, 5, None])
def test_a_search_error_code_of_any_other_json_type_is_a_400_not_a_crash(code: Any) -> None:
    error = {"type": "web_search_tool_result_error", "error_code": code}
    assert "not a web_search_tool_result_error" in _refused(
        SEARCH, _with(RESULT, ("content",), error)
    )


def test_a_result_before_its_search_or_in_a_user_turn_is_refused() -> None:
    assert "answers no web_search" in _refused(RESULT, SEARCH)
    body = json.dumps(
        {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [RESULT]}]}
    ).encode()
    with pytest.raises(HTTPError, match="in a user message"):
        parse_request("/v1/messages", body, WEB)


@pytest.mark.parametrize(
    "kind", ["code_execution_tool_result", "web_fetch_tool_result", "mcp_tool_use"]
)
def test_other_server_tool_blocks_stay_refused(kind: str) -> None:
    assert "unsupported block type" in _refused({"type": kind, "tool_use_id": "srvtoolu_01"})


def test_a_native_client_replays_the_same_blocks_under_the_same_rules() -> None:
    """The server's native stream gives a streamfn client the blocks as `OpaqueContent`."""

    def native(*blocks: dict[str, Any], provider: str = "anthropic") -> bytes:
        opaque = [
            {"type": "opaque", "provider": provider, "block_type": b["type"], "json": json.dumps(b)}
            for b in blocks
        ]
        messages = [
            {"type": "user", "content": "hi"},
            {"type": "assistant", "content": [*opaque, {"type": "text", "text": "Sunny."}]},
            {"type": "user", "content": "go on"},
        ]
        return json.dumps({"model": "m", "context": {"messages": messages}}).encode()

    marked = _with(SEARCH, ("cache_control",), {"type": "ephemeral", "ttl": "1h"})
    request = parse_request("/v1/stream", native(marked, RESULT), WEB)
    turn = request.context.messages[1]
    assert isinstance(turn, AssistantMessage)
    kept = [json.loads(b.json) for b in turn.content if isinstance(b, OpaqueContent)]
    assert kept == [SEARCH, RESULT]
    for body, allowed, words in [
        (native(SEARCH, RESULT), frozenset(), "web search is off"),
        (native(SEARCH, RESULT | {"extra_body": {}}), WEB, "'extra_body'"),
        (native(SEARCH, RESULT, provider="gemini"), WEB, "opaque 'server_tool_use' blocks"),
        (native({"type": "mcp_tool_use", "id": "x"}), WEB, "opaque 'mcp_tool_use' blocks"),
    ]:
        with pytest.raises(HTTPError, match=words):
            parse_request("/v1/stream", body, allowed)
