"""What the OpenAI-compatible providers' models accept in a Chat Completions request
(after OpenAI's own rules; first match wins)."""

from __future__ import annotations

from typing import Final

from streamfn.core.catalogue._capability_spec import Capabilities, CapabilityRule

__all__ = ["COMPATIBLE_RULES"]


# fmt: off
COMPATIBLE_RULES: Final[tuple[CapabilityRule, ...]] = (
    # -- xAI: only grok-3-mini takes reasoning_effort (low/high); grok-4 reasons always
    # and refuses reasoning_effort, stop and penalties.
    # https://docs.x.ai/docs/guides/reasoning
    CapabilityRule(apis=("openai-chat",), family=r"^grok-3-mini", providers=("xai",),
                   capabilities=Capabilities(efforts=("low", "high"))),
    CapabilityRule(apis=("openai-chat",), family=r"^grok-(4|code)", providers=("xai",),
                   capabilities=Capabilities(sampling=("temperature", "top_p", "seed"),
                                             thinking_sampling=("temperature", "top_p", "seed"),
                                             efforts=(), thinking_off=False)),
    # -- Groq: gpt-oss takes low/medium/high.
    # https://console.groq.com/docs/reasoning
    CapabilityRule(apis=("openai-chat",), family=r"gpt-oss", providers=("groq",),
                   capabilities=Capabilities(efforts=("low", "medium", "high"))),
    # -- DeepSeek thinking mode: tool-call turns must carry reasoning_content back.
    # https://api-docs.deepseek.com/guides/thinking_mode#tool-calls
    # DeepSeek has JSON mode (json_object) but no JSON-schema output: a schema is refused.
    # https://api-docs.deepseek.com/guides/json_mode
    CapabilityRule(apis=("openai-chat",), family=r"reasoner", providers=("deepseek",),
                   capabilities=Capabilities(replay_tool_calls="reasoning_field",
                                             thinking_off=False, structured_output="none")),
    CapabilityRule(apis=("openai-chat",), family=r"", providers=("deepseek",),
                   capabilities=Capabilities(structured_output="none")),
)
# fmt: on
