"""The thinking knob each family takes, checked against the official SDKs' request types.

``thinking="high"`` must reach the provider as its own knob, also for an id the
catalogue does not list (a `Model` with no reasoning flag and default limits):
OpenAI's ``reasoning_effort`` / ``reasoning.effort`` (the openai SDK's
``ReasoningEffort`` literal), Claude 4.6's adaptive thinking and
``output_config.effort`` (anthropic's ``ThinkingConfigAdaptiveParam`` and
``OutputConfigParam``), Gemini 3's ``thinkingLevel`` (google-genai's
``ThinkingConfig``). The levels a model lacks become its nearest, with a warning.
"""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from anthropic.types import OutputConfigParam, ThinkingConfigAdaptiveParam
from google.genai import types as genai
from openai.types.shared.reasoning_effort import ReasoningEffort
from request_oracles import build_body, violations

from streamfn.core import Context, Model, Options

OPENAI_EFFORTS = typing.get_args(typing.get_args(ReasoningEffort)[0])
CLAUDE_EFFORTS = typing.get_args(
    typing.get_args(typing.get_type_hints(OutputConfigParam)["effort"])[0]
)


def _openai(model_id: str, api: str) -> Model:
    return Model(id=model_id, provider="openai", api=api, base_url="x")


def _effort(body: dict[str, Any]) -> str | None:
    if "reasoning" in body:
        return str(body["reasoning"]["effort"])
    return body.get("reasoning_effort")


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses"])
@pytest.mark.parametrize(
    "model_id", ["gpt-5.2", "gpt-5.4", "gpt-5.5", "gpt-5.2-codex", "gpt-5.1-codex-max"]
)
def test_gpt_5x_sends_the_effort_asked_and_no_temperature(model_id: str, api: str) -> None:
    target = _openai(model_id, api)
    body = build_body(target, Context.of("x"), Options(thinking="high", temperature=0.5))
    assert _effort(body) == "high"
    assert "temperature" not in body
    assert violations(target, body) == []


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses"])
def test_xhigh_and_none_where_the_model_has_them(api: str) -> None:
    newest = _openai("gpt-5.5", api)
    assert _effort(build_body(newest, Context.of("x"), Options(thinking="xhigh"))) == "xhigh"
    assert _effort(build_body(newest, Context.of("x"), Options(thinking="off"))) == "none"
    assert {"none", "minimal", "xhigh"} <= set(OPENAI_EFFORTS)  # the SDK knows all three


@pytest.mark.parametrize(
    ("model_id", "asked", "sent"),
    [
        ("gpt-5", "xhigh", "high"),  # gpt-5 stops at high
        ("gpt-5", "minimal", "minimal"),
        ("gpt-5.1", "minimal", "low"),  # 5.1 replaced minimal with none
        ("gpt-5-pro", "low", "high"),  # high only
        ("gpt-5.2-pro", "low", "medium"),
        ("gpt-5.2-codex", "off", None),  # codex cannot stop thinking: nothing sent
    ],
)
def test_levels_a_model_lacks_become_its_nearest(
    model_id: str, asked: str, sent: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    target = _openai(model_id, "openai-responses")
    body = build_body(target, Context.of("x"), Options(thinking=asked))  # type: ignore[arg-type]
    assert (body.get("reasoning") or {}).get("effort") == sent
    assert sent is None or sent in OPENAI_EFFORTS
    if sent != asked:
        assert model_id in caplog.text  # said, not silent
    assert violations(target, body) == []


# -- Claude -----------------------------------------------------------------------------


def _claude(model_id: str, max_output: int = 128_000) -> Model:
    return Model(
        id=model_id, provider="anthropic", api="anthropic", base_url="x", max_output=max_output
    )


def _typed(value: dict[str, Any], typed_dict: Any) -> None:
    """``value`` has only the keys, and values of the literal types, of ``typed_dict``."""
    hints = typing.get_type_hints(typed_dict)
    assert set(value) <= set(hints), (value, hints)


@pytest.mark.parametrize(
    ("model_id", "asked", "effort"),
    [
        ("claude-opus-4-6", "high", "high"),
        ("claude-opus-4-6", "xhigh", "max"),  # Opus 4.6: low..high and max
        ("claude-sonnet-4-6", "xhigh", "high"),  # max is Opus's alone
        ("claude-opus-4-7", "xhigh", "xhigh"),
        ("claude-opus-4-7", "minimal", "low"),
    ],
)
def test_claude_4_6_and_later_think_adaptively_with_effort(
    model_id: str, asked: str, effort: str
) -> None:
    target = _claude(model_id)
    options = Options(thinking=asked, max_tokens=2000)  # type: ignore[arg-type]
    body = build_body(target, Context.of("x"), options)
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": effort}
    assert body["max_tokens"] == 2000  # no budget to fit around: the caller's answer room
    _typed(body["thinking"], ThinkingConfigAdaptiveParam)
    assert effort in CLAUDE_EFFORTS
    assert violations(target, body) == []


def test_adaptive_thinking_takes_the_whole_output_room() -> None:
    """Not 4,096 tokens with a 3,072-token budget: the model's own output limit."""
    body = build_body(_claude("claude-opus-4-6"), Context.of("x"), Options(thinking="high"))
    assert body["max_tokens"] == 128_000
    assert "budget_tokens" not in body["thinking"]


def test_opus_4_7_takes_no_budget_and_no_sampling(caplog: pytest.LogCaptureFixture) -> None:
    target = _claude("claude-opus-4-7")
    body = build_body(target, Context.of("x"), Options(thinking_budget=5000, temperature=0.2))
    assert body["thinking"] == {"type": "adaptive"}
    assert "temperature" not in body
    assert "adaptive thinking only" in caplog.text
    assert violations(target, body) == []


def test_opus_4_6_still_takes_an_explicit_budget() -> None:
    body = build_body(_claude("claude-opus-4-6"), Context.of("x"), Options(thinking_budget=5000))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 5000}
    assert "output_config" not in body


def test_claude_4_5_keeps_budget_thinking() -> None:
    target = _claude("claude-sonnet-4-5", 64_000)
    body = build_body(target, Context.of("x"), Options(thinking="medium"))
    assert body["thinking"]["type"] == "enabled"
    assert "output_config" not in body
    assert violations(target, body) == []


def test_effort_and_a_schema_share_output_config() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    target = _claude("claude-opus-4-6")
    body = build_body(target, Context.of("x"), Options(thinking="low", response_schema=schema))
    assert body["output_config"]["effort"] == "low"
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert violations(target, body) == []


#: the values the anthropic SDK allows for ``thinking.display``
CLAUDE_DISPLAYS = typing.get_args(
    typing.get_args(typing.get_type_hints(ThinkingConfigAdaptiveParam)["display"])[0]
)


@pytest.mark.parametrize("display", ["summarized", "omitted"])
@pytest.mark.parametrize(
    ("model_id", "options"),
    [
        ("claude-opus-4-6", {"thinking": "high"}),  # adaptive
        ("claude-opus-4-6", {"thinking_budget": 5000}),  # a budget, where the model takes one
        ("claude-sonnet-4-5", {"thinking": "medium"}),  # budget thinking
    ],
)
def test_claude_thinking_display_is_sent_as_set(
    model_id: str, options: dict[str, Any], display: str
) -> None:
    target = _claude(model_id, 64_000)
    body = build_body(target, Context.of("x"), Options(thinking_display=display, **options))  # type: ignore[arg-type]
    assert body["thinking"]["display"] == display
    assert display in CLAUDE_DISPLAYS
    assert violations(target, body) == []  # the SDK's request type takes it


def test_claude_thinking_display_unset_or_without_thinking_sends_none() -> None:
    target = _claude("claude-opus-4-6")
    assert (
        "display" not in build_body(target, Context.of("x"), Options(thinking="high"))["thinking"]
    )
    body = build_body(target, Context.of("x"), Options(thinking_display="omitted"))
    assert "thinking" not in body  # no thinking asked: nothing to display


def test_claude_on_bedrock_takes_the_display_too() -> None:
    target = Model(
        id="anthropic.claude-sonnet-4-5-20250929-v1:0",
        provider="bedrock",
        api="bedrock",
        base_url="x",
    )
    body = build_body(target, Context.of("x"), Options(thinking="low", thinking_display="omitted"))
    assert body["additionalModelRequestFields"]["thinking"]["display"] == "omitted"


def test_an_unknown_thinking_display_is_refused_naming_the_values() -> None:
    with pytest.raises(ValueError, match="summarized"):
        Options(thinking_display="hidden")  # type: ignore[arg-type]


# -- Gemini -----------------------------------------------------------------------------


def _gemini(model_id: str) -> Model:
    return Model(id=model_id, provider="google", api="gemini", base_url="x")


@pytest.mark.parametrize(
    ("model_id", "asked", "config"),
    [
        ("gemini-3-pro-preview", "medium", {"thinkingLevel": "high"}),  # low/high only
        ("gemini-3-flash-preview", "medium", {"thinkingLevel": "medium"}),
        ("gemini-3-flash-preview", "minimal", {"thinkingLevel": "minimal"}),
        ("gemini-3.1-pro-preview", "medium", {"thinkingLevel": "medium"}),
        ("gemini-2.5-flash", "medium", {"thinkingBudget": 8192}),
    ],
)
def test_gemini_3_takes_levels_and_2_5_budgets(
    model_id: str, asked: str, config: dict[str, Any]
) -> None:
    target = _gemini(model_id)
    options = Options(thinking=asked)  # type: ignore[arg-type]
    body = json.loads(json.dumps(build_body(target, Context.of("x"), options)))
    sent = body["generationConfig"]["thinkingConfig"]
    assert sent == {**config, "includeThoughts": True}
    genai.ThinkingConfig.model_validate(
        {"thinking_level": sent.get("thinkingLevel"), "thinking_budget": sent.get("thinkingBudget")}
    )
    assert violations(target, body) == []
