"""Every request body a provider receives is one it accepts, checked by oracles we did not write.

The matrix: conversations begun on every wire format (text, whitespace-only
text, signed thinking, parallel tool calls, tool results with text, an image
and an error, a closed turn, an aborted turn) or on the target itself, plus a
one-turn context, continued on every target (each wire format and provider
quirk, known models and unknown members of known families), with every
thinking level, every tool choice, with and without sampling knobs. Each body
is validated by `request_oracles.violations`: the official SDK request type of
its wire format (or botocore's ConverseStream shape) and the published
cross-field rules.
"""

from __future__ import annotations

import itertools
import json
import logging
from typing import Any, Literal

import msgspec
import pytest
from request_oracles import PNG, build_body, violations
from test_convert import turn

from streamfn.core import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    Options,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    get_model,
)
from streamfn.core.catalogue._capabilities import capabilities_for
from streamfn.core.content._cache_points import CachePoint
from streamfn.core.json._structured import ANSWER_TOOL, StructuredOutputUnsupported

TOOLS = [
    Tool(
        name="weather",
        description="Weather for a city",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": ["string", "null"], "enum": ["c", "f", None]},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    ),
    Tool(name="clock"),
]


#: Where conversations begin: one model per wire format (and per kind of reasoning it returns).
SOURCES = [
    get_model("anthropic:claude-sonnet-4-5"),
    get_model("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    Model(id="o3", provider="openai", api="openai-responses", base_url="x", reasoning=True),
    get_model("deepseek:deepseek-reasoner"),
    get_model("mistral:magistral-medium-latest"),
    get_model("google:gemini-3-pro-preview"),
    Model(id="qwen3", provider="ollama", api="ollama", base_url="", reasoning=True),
]

#: Every wire format and provider quirk, known models and unknown members of known families.
TARGETS = [
    get_model("openai:gpt-4o"),
    get_model("openai:gpt-5"),
    get_model("openai:gpt-5.1"),
    get_model("openai:o4-mini"),
    Model(id="gpt-4o", provider="azure", api="openai-chat", base_url="https://r.openai.azure.com"),
    get_model("mistral:mistral-large-latest"),
    get_model("mistral:magistral-medium-latest"),
    get_model("xai:grok-4"),
    get_model("xai:grok-3-mini"),
    get_model("groq:openai/gpt-oss-120b"),
    get_model("groq:llama-3.3-70b-versatile"),
    get_model("deepseek:deepseek-reasoner"),
    get_model("deepseek:deepseek-chat"),
    get_model("openrouter:anthropic/claude-sonnet-4.5"),
    get_model("zai:glm-4.6"),
    Model(id="gpt-5", provider="openai", api="openai-responses", base_url="x", reasoning=True),
    Model(id="o3", provider="openai", api="openai-responses", base_url="x", reasoning=True),
    Model(id="gpt-4.1", provider="openai", api="openai-responses", base_url="x"),
    get_model("anthropic:claude-sonnet-4-5"),
    get_model("anthropic:claude-opus-4-1"),
    get_model("anthropic:claude-3-5-haiku-latest"),
    Model(
        id="claude-haiku-4-5-20251001",
        provider="anthropic",
        api="anthropic",
        base_url="x",
        max_output=64_000,
        reasoning=True,
    ),  # an unknown id of a known family
    get_model("google:gemini-3-pro-preview"),
    Model(
        id="gemini-3-flash-preview", provider="google", api="gemini", base_url="x", reasoning=True
    ),  # an unknown id of a known family
    get_model("google:gemini-2.5-pro"),
    get_model("google:gemini-2.5-flash"),
    get_model("google:gemini-2.0-flash"),
    Model(id="qwen3", provider="ollama", api="ollama", base_url="", reasoning=True),
    get_model("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    get_model("bedrock:us.anthropic.claude-opus-4-1-20250805-v1:0"),
    get_model("bedrock:us.amazon.nova-pro-v1:0"),
    get_model("bedrock:us.meta.llama3-3-70b-instruct-v1:0"),
    # The 2026 generations as an id nobody listed: reasoning flag unset, default limits.
    Model(id="gpt-5.5", provider="openai", api="openai-chat", base_url="x"),
    Model(id="gpt-5.5", provider="openai", api="openai-responses", base_url="x"),
    Model(id="gpt-5.2-codex", provider="openai", api="openai-responses", base_url="x"),
    Model(id="gpt-5.2-pro", provider="openai", api="openai-responses", base_url="x"),
    Model(id="gpt-5-pro", provider="openai", api="openai-responses", base_url="x"),
    Model(id="claude-opus-4-6", provider="anthropic", api="anthropic", base_url="x"),
    Model(id="claude-sonnet-4-6", provider="anthropic", api="anthropic", base_url="x"),
    Model(id="claude-opus-4-7", provider="anthropic", api="anthropic", base_url="x"),
    Model(
        id="eu.anthropic.claude-opus-4-1-20250805-v1:0",
        provider="bedrock",
        api="bedrock",
        base_url="",
        max_output=32_000,
    ),
    Model(id="global.anthropic.claude-opus-4-7", provider="bedrock", api="bedrock", base_url=""),
    Model(id="gemini-3.1-pro-preview", provider="google", api="gemini", base_url="x"),
]

#: Tool-call ids the way each wire format makes them.
_IDS = {
    "anthropic": ("toolu_01A09q90qw90lq917835lq9", "toolu_01B"),
    "bedrock": ("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "tooluse_x"),
    "openai-responses": (
        "call_a1B2c3|fc_0123456789abcdef0123456789abcdef0123456789abcdef",
        "call_2",
    ),
    "openai-chat": ("call_00_5w4vFqBbWw0KTbYgyY0xw5Dy", "call_01_Xx"),
    "gemini": ("call_resp-abc_0", "call_resp-abc_1"),
    "ollama": ("ollama_call_0", "ollama_call_1"),
}


def _signature(source: Model, kind: str) -> str | None:
    if source.api in ("anthropic", "bedrock"):
        return "EqQBCkYIBxgCKkBsig" if kind == "thinking" else None
    if source.api == "openai-responses" and kind == "thinking":
        return json.dumps(
            {
                "type": "reasoning",
                "encrypted_content": "gAAAAB",
                "summary": [{"type": "summary_text", "text": "Look it up."}],
            }
        )
    if source.api == "gemini" and kind in ("thinking", "call"):
        return "CiQBjz1rX6ZoAxmP"
    return None


def _tool_turn(source: Model, step: str) -> AssistantMessage:
    first, second = (i + step for i in _IDS.get(source.api, _IDS["openai-chat"]))
    if source.provider == "mistral":
        first, second = "D681PevK" + step, "Xq9mW2bZ" + step
    thinking = ThinkingContent(thinking="Two lookups.", signature=_signature(source, "thinking"))
    return turn(
        source,
        thinking,
        TextContent(text="\n\n"),
        TextContent(text="Let me check."),
        ToolCall(
            id=first,
            name="weather",
            arguments={"city": "Paris"},
            arguments_json='{"city": "Paris"}',
            signature=_signature(source, "call"),
        ),
        ToolCall(id=second, name="clock", arguments={}, arguments_json="{}"),
        stop=StopReason.TOOL_USE,
    )


def _results(message: AssistantMessage) -> list[ToolResultMessage]:
    first, second = message.tool_calls
    return [
        ToolResultMessage(
            tool_call_id=first.id,
            tool_name=first.name,
            content=[TextContent(text="18C, sunny"), ImageContent(data=PNG, mime_type="image/png")],
        ),
        ToolResultMessage(
            tool_call_id=second.id,
            tool_name=second.name,
            content=[TextContent(text="clock unavailable")],
            is_error=True,
        ),
    ]


def _question() -> UserMessage:
    return UserMessage(
        content=[
            TextContent(text="Weather and time in Paris?"),
            TextContent(text=" \n"),
            ImageContent(data=PNG, mime_type="image/png"),
        ]
    )


def begun_on(source: Model) -> Context:
    """A conversation begun on ``source``: a closed tool loop, an aborted turn, then
    a second tool loop being continued (its results are the last messages)."""
    first, second = _tool_turn(source, "1"), _tool_turn(source, "2")
    aborted = turn(
        source,
        TextContent(text="Let me"),
        ToolCall(id="call_cut", name="weather", arguments_json='{"ci'),
        stop=StopReason.ABORTED,
    )
    return Context(
        messages=[
            _question(),
            first,
            *_results(first),
            turn(source, TextContent(text="It is 18C; the clock failed.")),
            UserMessage(content="And tomorrow?"),
            aborted,
            UserMessage(content="Hello? Same again."),
            second,
            *_results(second),
        ],
        system_prompt="Be brief.",
        tools=TOOLS,
    )


def all_contexts(target: Model) -> dict[str, Context]:
    out = {"one turn": Context(messages=[_question()], tools=TOOLS)}
    for source in [*SOURCES, target]:  # begun elsewhere, and on the target itself
        out[f"begun on {source.key}"] = begun_on(source)
    return out


THINKING: list[Options] = [
    Options(),
    Options(thinking=ThinkingLevel.OFF),
    Options(thinking=ThinkingLevel.MINIMAL),
    Options(thinking=ThinkingLevel.MEDIUM),
    Options(thinking=ThinkingLevel.HIGH),
    Options(thinking=ThinkingLevel.XHIGH),
    Options(thinking_budget=500),
]
TOOL_CHOICES: list[str | None] = [None, "auto", "none", "required", "weather"]
SAMPLING: list[dict[str, Any]] = [
    {},
    {"temperature": 0.7, "top_p": 0.9, "top_k": 40, "stop": ["END"], "seed": 7, "max_tokens": 1000},
]


@pytest.mark.parametrize("target", TARGETS, ids=lambda m: f"{m.api}-{m.provider}-{m.id}")
def test_every_body_is_accepted(target: Model, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="streamfn")  # the remedies' warnings are expected
    failures: list[str] = []
    count = 0
    for (name, context), base, choice, knobs in itertools.product(
        all_contexts(target).items(), THINKING, TOOL_CHOICES, SAMPLING
    ):
        options = Options(
            thinking=base.thinking,
            thinking_budget=base.thinking_budget,
            tool_choice=choice,
            **knobs,
        )
        body = build_body(target, context, options)
        count += 1
        for problem in violations(target, body):
            failures.append(f"{name} | {options!r}: {problem}")
    assert not failures, f"{len(failures)} of {count} bodies refused:\n" + "\n".join(failures[:15])


#: one target per oracle (Mistral has its own SDK type)
ONE_PER_ORACLE = [
    next(m for m in TARGETS if m.api == api and provider in ("", m.provider))
    for api, provider in [
        ("openai-chat", "openai"),
        ("openai-chat", "mistral"),
        ("openai-responses", ""),
        ("anthropic", ""),
        ("gemini", ""),
        ("ollama", ""),
        ("bedrock", ""),
    ]
]


@pytest.mark.parametrize("target", ONE_PER_ORACLE, ids=lambda m: f"{m.api}-{m.provider}")
def test_every_oracle_refuses_an_unknown_field(target: Model) -> None:
    """The oracles are not vacuous: each wire format's refuses a field its API lacks,
    at the top and inside a message."""
    body = build_body(target, all_contexts(target)["one turn"])
    assert violations(target, body) == []
    assert violations(target, {**body, "bogus": 1})
    listed = "contents" if target.api == "gemini" else "messages"
    listed = "input" if target.api == "openai-responses" else listed
    inner = [{**body[listed][0], "bogus": 1}, *body[listed][1:]]
    assert violations(target, {**body, listed: inner})


# ---------------------------------------------------------------------------
# Structured output and prompt caching: the same matrix, with a schema and cache marks
# ---------------------------------------------------------------------------


class _Day(msgspec.Struct):
    date: str
    high: float


class _Forecast(msgspec.Struct):
    """A type (converted with msgspec.json.schema: $refs, an optional field)."""

    city: str
    days: list[_Day]
    unit: Literal["c", "f"] | None = None


#: A dict schema that qualifies for OpenAI's strict mode.
_STRICT = {
    "title": "weather report",
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["sun", "rain"]}},
    },
    "required": ["city", "tags"],
}

_CACHES: list[Any] = [
    None,
    "auto",
    [CachePoint("tools", ttl="1h"), CachePoint(-1)],
    [CachePoint("tools", ttl="1h"), CachePoint(0, ttl="1h"), CachePoint(-2), CachePoint(-1)],
]


def _schema_sent(target: Model, body: dict[str, Any]) -> bool:
    """Whether the body carries the schema by the target's mechanism."""
    mode = capabilities_for(target).structured_output
    if mode == "tool":
        tools = body.get("tools") or body.get("toolConfig", {}).get("tools", [])
        names = [t.get("name") or t.get("toolSpec", {}).get("name") for t in tools]
        choice = body.get("tool_choice") or body.get("toolConfig", {}).get("toolChoice")
        return ANSWER_TOOL in names and ANSWER_TOOL in json.dumps(choice)
    fields = {
        "openai-chat": lambda b: b["response_format"]["json_schema"]["schema"],
        "openai-responses": lambda b: b["text"]["format"]["schema"],
        "anthropic": lambda b: b["output_config"]["format"]["schema"],
        "bedrock": lambda b: b["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"],
        "gemini": lambda b: b["generationConfig"][
            "responseSchema" if mode == "openapi" else "responseJsonSchema"
        ],
        "ollama": lambda b: b["format"],
    }
    return bool(fields[target.api](body))


def _marks(body: dict[str, Any]) -> int:
    text = json.dumps(body)
    return text.count('"cache_control"') + text.count('"cachePoint"')


@pytest.mark.parametrize("target", TARGETS, ids=lambda m: f"{m.api}-{m.provider}-{m.id}")
def test_structured_and_cached_bodies_are_accepted(
    target: Model, caplog: pytest.LogCaptureFixture
) -> None:
    """Every target's body with a response schema (a type and a strict dict) and each
    cache setting passes its SDK type and the published rules (4 breakpoints, TTL order,
    strict-mode schemas, which Claude has structured outputs); the schema travels by
    the target's mechanism, and the marks are where the provider has a prompt cache."""
    caplog.set_level(logging.ERROR, logger="streamfn")
    failures: list[str] = []
    contexts = all_contexts(target)
    for (name, context), schema, cache, base in itertools.product(
        list(contexts.items())[:4], [_Forecast, _STRICT], _CACHES, THINKING[::3]
    ):
        if len(context.messages) == 1 and cache is _CACHES[-1]:
            continue  # marks two turns; a one-turn context has one (tests/test_cache_points.py)
        options = Options(response_schema=schema, cache=cache, thinking=base.thinking)
        if capabilities_for(target).structured_output == "none":
            with pytest.raises(StructuredOutputUnsupported, match=target.key):
                build_body(target, context, options)
            continue
        body = build_body(target, context, options)
        problems = violations(target, body)
        if not _schema_sent(target, body):
            problems.append("the schema is not in the body")
        cacheable = target.api in ("anthropic", "bedrock") and (
            capabilities_for(target).cache_breakpoints > 0
        )
        if (_marks(body) > 0) != (cacheable and cache is not None):
            problems.append(f"{_marks(body)} cache marks")
        if target.provider == "openai" and ("prompt_cache_key" in body) != (cache is not None):
            problems.append("prompt_cache_key")
        failures += [f"{name} | {schema} {cache}: {p}" for p in problems]
    assert not failures, "\n".join(failures[:15])
