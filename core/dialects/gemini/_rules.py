"""What each Gemini model accepts in a request (first match wins)."""

from __future__ import annotations

from typing import Final

from streamfn.core.catalogue._capability_spec import Capabilities, CapabilityRule

__all__ = ["GEMINI_RULES"]


# fmt: off
GEMINI_RULES: Final[tuple[CapabilityRule, ...]] = (
    # -- Gemini ------------------------------------------------------------------------
    # Gemini 3 takes thinkingLevel low/high, cannot switch thinking off, and needs the
    # first function call of each step signed.
    # https://ai.google.dev/gemini-api/docs/thinking  https://ai.google.dev/gemini-api/docs/thought-signatures
    # Levels per model (google-genai's ThinkingLevel names MINIMAL..XHIGH): Gemini 3 Flash
    # takes minimal/low/medium/high, 3.1 Pro low/medium/high, 3 Pro low/high.
    CapabilityRule(apis=("gemini",), family=r"gemini-3(\.\d+)?-flash", capabilities=Capabilities(
        efforts=("minimal", "low", "medium", "high"), thinking_off=False,
        replay_tool_calls="thought_signature")),
    CapabilityRule(apis=("gemini",), family=r"gemini-3\.[1-9]", capabilities=Capabilities(
        efforts=("low", "medium", "high"), thinking_off=False,
        replay_tool_calls="thought_signature")),
    CapabilityRule(apis=("gemini",), family=r"gemini-3", capabilities=Capabilities(
        efforts=("low", "high"), thinking_off=False, replay_tool_calls="thought_signature")),
    # Budget ranges per model: https://ai.google.dev/gemini-api/docs/thinking#set-budget
    CapabilityRule(apis=("gemini",), family=r"gemini-2\.5-pro", capabilities=Capabilities(
        thinking_budget=(128, 32_768), thinking_off=False)),
    CapabilityRule(apis=("gemini",), family=r"gemini-2\.5-flash-lite", capabilities=Capabilities(
        thinking_budget=(512, 24_576))),
    CapabilityRule(apis=("gemini",), family=r"gemini-2\.5-flash", capabilities=Capabilities(
        thinking_budget=(1, 24_576))),
    # responseJsonSchema is Gemini 2.5+; older models take the OpenAPI-subset responseSchema.
    # https://ai.google.dev/gemini-api/docs/structured-output
    CapabilityRule(apis=("gemini",), family=r"gemini-(1|2\.0)", capabilities=Capabilities(
        thinking=False, structured_output="openapi")),
)
# fmt: on
