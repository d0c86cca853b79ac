"""The thirteen request classes providers refused, one test each, named after
the provider's error; plus the capability data behind them.

Each test builds the request, checks it with the oracles of `request_oracles`
(SDK types, botocore, published rules), checks the remedy and its warning,
and checks that the oracle does refuse the body as it was before the fix, so
none of these tests can pass without the fix.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

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
from streamfn.core.catalogue._capabilities import Capabilities, capabilities_for
from streamfn.core.dialects.gemini._response import DUMMY_THOUGHT_SIGNATURE

CLAUDE = get_model("anthropic:claude-sonnet-4-5")
CLAUDE_4 = get_model("anthropic:claude-sonnet-4-0")
OPUS_41 = get_model("anthropic:claude-opus-4-1")
BEDROCK_CLAUDE = get_model("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0")
GPT = get_model("openai:gpt-4o")
WEATHER = Tool(
    name="weather",
    description="Weather for a city",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": ["string", "null"], "enum": ["c", "f", None]},
            "days": {"type": "integer", "enum": [1, 3, 7]},
        },
        "required": ["city"],
    },
)


def accepted(model: Model, body: dict[str, Any]) -> dict[str, Any]:
    assert violations(model, body) == []
    return body


def refused(model: Model, body: dict[str, Any], needle: str) -> None:
    problems = violations(model, body)
    assert any(needle in p for p in problems), problems


def warned(caplog: pytest.LogCaptureFixture, model: Model, option: str) -> None:
    messages = [r.getMessage() for r in caplog.records if r.name == "streamfn"]
    assert any(model.key in m and option in m for m in messages), messages


def tool_turn(
    source: Model, *extra: Any, ids: tuple[str, str] = ("call_1", "call_2")
) -> AssistantMessage:
    return turn(
        source,
        *extra,
        TextContent(text="Checking."),
        ToolCall(id=ids[0], name="weather", arguments={"city": "Paris"}),
        ToolCall(id=ids[1], name="weather", arguments={"city": "Lyon"}),
        stop=StopReason.TOOL_USE,
    )


def loop(
    source: Model, *extra: Any, image: bool = False, ids: tuple[str, str] = ("call_1", "call_2")
) -> Context:
    """A tool loop begun on ``source`` and being continued (its results come last)."""
    first: list[Any] = [TextContent(text="18C")]
    if image:
        first.append(ImageContent(data=PNG, mime_type="image/png"))
    return Context(
        messages=[
            UserMessage(content="Weather in Paris and Lyon?"),
            tool_turn(source, *extra, ids=ids),
            ToolResultMessage(tool_call_id=ids[0], tool_name="weather", content=first),
            ToolResultMessage(
                tool_call_id=ids[1],
                tool_name="weather",
                content=[TextContent(text="unavailable")],
                is_error=True,
            ),
        ],
        tools=[WEATHER],
    )


# 1 ---------------------------------------------------------------------------


@pytest.mark.parametrize("target", [CLAUDE, BEDROCK_CLAUDE], ids=lambda m: m.api)
def test_when_thinking_is_enabled_a_final_assistant_message_must_start_with_a_thinking_block(
    target: Model, caplog: pytest.LogCaptureFixture
) -> None:
    options = Options(thinking=ThinkingLevel.HIGH)
    body = accepted(target, build_body(target, loop(GPT), options))
    # the remedy: thinking is off for this one request, with a warning naming it
    assert "thinking" not in body and "thinking" not in body.get("additionalModelRequestFields", {})
    warned(caplog, target, "thinking")
    with_thinking = copy.deepcopy(body)
    thinking = {"type": "enabled", "budget_tokens": 2048}
    if target.api == "anthropic":
        with_thinking["thinking"] = thinking
    else:
        with_thinking["additionalModelRequestFields"] = {"thinking": thinking}
    refused(target, with_thinking, "must start with a thinking block")
    # the loop begun on the target itself, with its signed thinking, keeps thinking on
    own = ThinkingContent(thinking="Two calls.", signature="EqQBCkYIBxgC")
    body = accepted(target, build_body(target, loop(target, own), options))
    assert "thinking" in json.dumps(body)


# 2 ---------------------------------------------------------------------------


def test_messages_with_role_tool_must_be_a_response_to_a_preceding_message_with_tool_calls() -> (
    None
):
    body = accepted(GPT, build_body(GPT, loop(GPT, image=True)))
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "tool", "tool", "user"]  # images after both results
    assert body["messages"][-1]["content"][1]["type"] == "image_url"
    before = copy.deepcopy(body)  # how it was: the image turn between the two tool messages
    before["messages"].insert(3, before["messages"].pop())
    refused(GPT, before, "must be followed by tool messages")


# 3 ---------------------------------------------------------------------------


def test_model_does_not_support_parameter_reasoning_effort(
    caplog: pytest.LogCaptureFixture,
) -> None:
    grok4, mini = get_model("xai:grok-4"), get_model("xai:grok-3-mini")
    options = Options(thinking=ThinkingLevel.MEDIUM, stop=["END"])
    body = accepted(grok4, build_body(grok4, Context.of("hi"), options))
    assert "reasoning_effort" not in body and "stop" not in body
    warned(caplog, grok4, "thinking")
    warned(caplog, grok4, "stop")
    refused(
        grok4, {**body, "reasoning_effort": "high"}, "does not support parameter reasoningEffort"
    )
    # grok-3-mini takes low or high: medium goes up to high
    assert accepted(mini, build_body(mini, Context.of("hi"), options))["reasoning_effort"] == "high"
    said = [r.getMessage() for r in caplog.records if r.name == "streamfn"]
    assert f"{grok4.key}: thinking=medium has no effort knob on this model; not sent" in said
    assert f"{mini.key}: thinking=medium is not an effort this model takes; sent high" in said


# 4 ---------------------------------------------------------------------------


def test_missing_reasoning_content_field_in_the_assistant_message() -> None:
    reasoner = get_model("deepseek:deepseek-reasoner")
    foreign = ThinkingContent(thinking="Two calls.", signature="EqQBCkYIBxgC")
    body = accepted(reasoner, build_body(reasoner, loop(CLAUDE, foreign)))
    assistant = body["messages"][1]
    assert assistant["reasoning_content"] == ""  # the remedy: an empty reasoning field
    assert assistant["content"].startswith("Two calls.")  # the foreign reasoning, as text
    before = copy.deepcopy(body)
    del before["messages"][1]["reasoning_content"]
    refused(reasoner, before, "Missing `reasoning_content` field")
    # its own reasoning goes back in the field
    own = ThinkingContent(thinking="Mine.")
    body = build_body(reasoner, loop(reasoner, own))
    assert body["messages"][1]["reasoning_content"] == "Mine."
    # deepseek-chat (no thinking mode) gets no field
    chat = get_model("deepseek:deepseek-chat")
    assert "reasoning_content" not in build_body(chat, loop(CLAUDE))["messages"][1]


# 5 ---------------------------------------------------------------------------


def test_function_call_is_missing_a_thought_signature() -> None:
    gemini3 = get_model("google:gemini-3-pro-preview")
    body = accepted(gemini3, build_body(gemini3, loop(GPT), Options(thinking=ThinkingLevel.LOW)))
    calls = [p for p in body["contents"][1]["parts"] if "functionCall" in p]
    assert calls[0]["thoughtSignature"] == DUMMY_THOUGHT_SIGNATURE  # Google's documented dummy
    assert "thoughtSignature" not in calls[1]  # only a step's first call is validated
    before = copy.deepcopy(body)
    del before["contents"][1]["parts"][1]["thoughtSignature"]
    refused(gemini3, before, "Function call is missing a thought_signature")
    # a turn it signed itself keeps its own signature
    signed = tool_turn(gemini3)
    signed.content[1] = ToolCall(id="call_1", name="weather", signature="CiQBjz1r")
    context = loop(gemini3)
    context.messages[1] = signed
    parts = build_body(gemini3, context)["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in parts if "functionCall" in p] == ["CiQBjz1r", None]
    # Gemini 2.5 validates no signature: nothing is invented
    flash = get_model("google:gemini-2.5-flash")
    assert DUMMY_THOUGHT_SIGNATURE not in json.dumps(build_body(flash, loop(GPT)))


# 6 ---------------------------------------------------------------------------


@pytest.mark.parametrize("target", [CLAUDE, BEDROCK_CLAUDE], ids=lambda m: m.api)
@pytest.mark.parametrize("choice", ["required", "weather"])
def test_thinking_may_not_be_enabled_when_tool_choice_forces_tool_use(
    target: Model, choice: str, caplog: pytest.LogCaptureFixture
) -> None:
    context = Context(messages=[UserMessage(content="Weather?")], tools=[WEATHER])
    body = accepted(
        target, build_body(target, context, Options(thinking=ThinkingLevel.LOW, tool_choice=choice))
    )
    assert "thinking" not in json.dumps(body)  # forced tool use is kept, thinking is off
    forced = json.dumps(body.get("tool_choice") or body["toolConfig"]["toolChoice"])
    assert '"any"' in forced or '"tool"' in forced
    warned(caplog, target, "thinking")
    thinking = {"type": "enabled", "budget_tokens": 2048}
    before = copy.deepcopy(body)
    if target.api == "anthropic":
        before["thinking"] = thinking
    else:
        before["additionalModelRequestFields"] = {"thinking": thinking}
    refused(target, before, "tool_choice forces tool use")
    auto = build_body(target, context, Options(thinking=ThinkingLevel.LOW, tool_choice="auto"))
    assert "budget_tokens" in json.dumps(accepted(target, auto))


# 7 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [OPUS_41, get_model("bedrock:us.anthropic.claude-opus-4-1-20250805-v1:0")],
    ids=lambda m: m.api,
)
def test_max_tokens_is_greater_than_the_maximum_allowed(
    target: Model, caplog: pytest.LogCaptureFixture
) -> None:
    body = accepted(
        target, build_body(target, Context.of("hi"), Options(thinking=ThinkingLevel.HIGH))
    )
    fields = body.get("additionalModelRequestFields", body)
    max_tokens = body.get("max_tokens") or body["inferenceConfig"]["maxTokens"]
    assert max_tokens == 32_000 and 1024 <= fields["thinking"]["budget_tokens"] < max_tokens
    big = build_body(target, Context.of("hi"), Options(thinking_budget=40_000))
    fields = big.get("additionalModelRequestFields", big)
    assert fields["thinking"]["budget_tokens"] < 32_000
    warned(caplog, target, "thinking_budget")
    refused(target, {**body, "max_tokens": 64_000}, "which is the maximum allowed")
    asked = build_body(target, Context.of("hi"), Options(max_tokens=100_000))
    assert (asked.get("max_tokens") or asked["inferenceConfig"]["maxTokens"]) == 32_000
    warned(caplog, target, "max_tokens")


# 8 ---------------------------------------------------------------------------


def test_top_p_must_be_between_0_95_and_1_when_thinking_is_enabled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    options = Options(thinking=ThinkingLevel.LOW, top_p=0.5, temperature=0.3, top_k=20)
    body = accepted(CLAUDE_4, build_body(CLAUDE_4, Context.of("hi"), options))
    assert body["top_p"] == 0.95 and "temperature" not in body and "top_k" not in body
    warned(caplog, CLAUDE_4, "top_p")
    refused(CLAUDE_4, {**body, "top_p": 0.5}, "top_p must be between 0.95 and 1")


def test_top_k_is_not_supported_when_thinking_is_enabled(caplog: pytest.LogCaptureFixture) -> None:
    target = get_model("bedrock:us.anthropic.claude-opus-4-1-20250805-v1:0")
    options = Options(thinking=ThinkingLevel.LOW, top_k=20)
    body = accepted(target, build_body(target, Context.of("hi"), options))
    assert "top_k" not in body["additionalModelRequestFields"]
    warned(caplog, target, "top_k")
    before = copy.deepcopy(body)
    before["additionalModelRequestFields"]["top_k"] = 20
    refused(target, before, "top_k is not supported when thinking is enabled")
    # without thinking Claude on Bedrock takes top_k; Nova has no such field
    plain = build_body(target, Context.of("hi"), Options(top_k=20))
    assert plain["additionalModelRequestFields"] == {"top_k": 20}
    nova = get_model("bedrock:us.amazon.nova-pro-v1:0")
    assert "additionalModelRequestFields" not in accepted(
        nova, build_body(nova, Context.of("hi"), Options(top_k=20))
    )


# 9 ---------------------------------------------------------------------------


@pytest.mark.parametrize("target", [CLAUDE, BEDROCK_CLAUDE], ids=lambda m: m.api)
def test_temperature_and_top_p_cannot_both_be_specified_for_this_model(
    target: Model, caplog: pytest.LogCaptureFixture
) -> None:
    body = accepted(
        target, build_body(target, Context.of("hi"), Options(temperature=0.3, top_p=0.9))
    )
    sampling = body.get("inferenceConfig", body)
    assert sampling["temperature"] == 0.3 and "top_p" not in sampling and "topP" not in sampling
    warned(caplog, target, "top_p")
    refused(
        target,
        {**body, "top_p": 0.9, "inferenceConfig": {**sampling, "topP": 0.9}},
        "cannot both be specified",
    )
    both = build_body(CLAUDE_4, Context.of("hi"), Options(temperature=0.3, top_p=0.9))
    assert (both["temperature"], both["top_p"]) == (0.3, 0.9)  # Claude 4 takes both


# 10 --------------------------------------------------------------------------


@pytest.mark.parametrize("target", [CLAUDE, BEDROCK_CLAUDE], ids=lambda m: m.api)
def test_text_content_blocks_must_contain_non_whitespace_text(target: Model) -> None:
    context = Context(
        messages=[
            UserMessage(content=[TextContent(text="Weather?"), TextContent(text="\n\n")]),
            tool_turn(target, TextContent(text="\n\n"), ids=("toolu_1", "toolu_2")),
            ToolResultMessage(
                tool_call_id="toolu_1", tool_name="weather", content=[TextContent(text=" ")]
            ),
            ToolResultMessage(
                tool_call_id="toolu_2", tool_name="weather", content=[TextContent(text="18C")]
            ),
            UserMessage(content="  "),
            UserMessage(content="Thanks"),
        ],
        tools=[WEATHER],
    )
    body = accepted(target, build_body(target, context))
    before = copy.deepcopy(body)
    before["messages"][0]["content"].append(
        {"text": "\n\n"} if target.api == "bedrock" else {"type": "text", "text": "\n\n"}
    )
    refused(target, before, "non-whitespace text")


# 11 --------------------------------------------------------------------------


def test_extra_inputs_are_not_permitted_seed() -> None:
    mistral = get_model("mistral:mistral-large-latest")
    body = accepted(mistral, build_body(mistral, Context.of("hi"), Options(seed=7)))
    assert body["random_seed"] == 7 and "seed" not in body
    refused(mistral, {**body, "seed": 7}, "seed: unknown field")


# 12 --------------------------------------------------------------------------


def test_function_tool_strict_field_required() -> None:
    gpt5 = Model(
        id="gpt-5", provider="openai", api="openai-responses", base_url="x", reasoning=True
    )
    context = Context(messages=[UserMessage(content="Weather?")], tools=[WEATHER])
    body = accepted(gpt5, build_body(gpt5, context))
    # not strict: the optional `unit` and `days` stay optional
    assert body["tools"][0]["strict"] is False
    before = copy.deepcopy(body)
    del before["tools"][0]["strict"]
    refused(gpt5, before, "strict")


# 13 --------------------------------------------------------------------------


def test_invalid_value_at_enum_type_string_null() -> None:
    flash = get_model("google:gemini-2.5-flash")
    context = Context(messages=[UserMessage(content="Weather?")], tools=[WEATHER])
    body = accepted(flash, build_body(flash, context))
    properties = body["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]
    assert properties["unit"] == {"type": "string", "nullable": True, "enum": ["c", "f"]}
    assert properties["days"] == {"type": "integer"}  # Gemini's enums are strings only
    before = copy.deepcopy(body)
    before["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]["unit"][
        "enum"
    ].append(None)
    refused(flash, before, "enum")


# -- capabilities as data ------------------------------------------------------


def test_unknown_models_of_a_known_family_get_the_familys_rules() -> None:
    new_claude = Model(
        id="claude-sonnet-4-5-20991231", provider="anthropic", api="anthropic", base_url="x"
    )
    assert capabilities_for(new_claude) == capabilities_for(CLAUDE)
    on_bedrock = Model(
        id="eu.anthropic.claude-opus-4-1-20250805-v1:0",
        provider="bedrock",
        api="bedrock",
        base_url="x",
    )
    assert capabilities_for(on_bedrock).max_output == 32_000
    new_gemini = Model(id="gemini-3-flash-preview", provider="google", api="gemini", base_url="x")
    assert capabilities_for(new_gemini).replay_tool_calls == "thought_signature"
    stranger = Model(id="my-model", provider="vllm", api="openai-chat", base_url="x")
    assert capabilities_for(stranger) == Capabilities()


def test_a_models_own_capabilities_override_its_family(caplog: pytest.LogCaptureFixture) -> None:
    caps = Capabilities(
        sampling=("temperature",), thinking_sampling=("temperature",), efforts=("high",)
    )
    model = Model(
        id="grok-4",
        provider="xai",
        api="openai-chat",
        base_url="x",
        reasoning=True,
        capabilities=caps,
    )
    body = build_body(
        model, Context.of("hi"), Options(thinking=ThinkingLevel.LOW, top_p=0.5, seed=1)
    )
    assert body["reasoning_effort"] == "high" and "top_p" not in body and "seed" not in body
    warned(caplog, model, "top_p")


def test_gemini_thinking_follows_the_models_range(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="streamfn")
    pro = get_model("google:gemini-2.5-pro")
    body = build_body(pro, Context.of("hi"), Options(thinking=ThinkingLevel.OFF))
    assert "thinkingConfig" not in body.get("generationConfig", {})  # Pro cannot stop thinking
    warned(caplog, pro, "thinking")
    body = build_body(pro, Context.of("hi"), Options(thinking_budget=50))
    assert body["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 128
    gemini3 = get_model("google:gemini-3-pro-preview")
    body = build_body(gemini3, Context.of("hi"), Options(thinking=ThinkingLevel.MEDIUM))
    assert body["generationConfig"]["thinkingConfig"]["thinkingLevel"] == "high"
    old = get_model("google:gemini-2.0-flash")
    assert "generationConfig" not in build_body(
        old, Context.of("hi"), Options(thinking=ThinkingLevel.HIGH)
    )


def test_thinking_off_where_the_model_allows_it(caplog: pytest.LogCaptureFixture) -> None:
    gpt51, gpt5 = get_model("openai:gpt-5.1"), get_model("openai:gpt-5")
    off = Options(thinking=ThinkingLevel.OFF)
    assert build_body(gpt51, Context.of("hi"), off)["reasoning_effort"] == "none"
    assert "reasoning_effort" not in accepted(gpt5, build_body(gpt5, Context.of("hi"), off))
    warned(caplog, gpt5, "thinking")
