"""What each Claude model accepts in a request, on either Claude format (Anthropic's
Messages, Bedrock's Converse): the rules both rooms start with (first match wins)."""

from __future__ import annotations

from typing import Final

from msgspec.structs import replace

from streamfn.core.catalogue._capability_spec import Capabilities, CapabilityRule

__all__ = ["CLAUDE_RULES"]

#: Claude: no seed. With extended thinking: no temperature/top_k, top_p only in 0.95-1,
#: no forced tool use, and a tool-use turn being continued must start with its signed
#: thinking block. https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking
_CLAUDE: Final = Capabilities(
    sampling=("temperature", "top_p", "top_k", "stop"),
    thinking_sampling=("top_p", "stop"),
    thinking_top_p=(0.95, 1.0),
    thinking_budget=(1024, 0),
    forced_tool_with_thinking=False,
    replay_tool_calls="thinking_block",
    # Structured outputs (output_config.format) are Claude 4.5+; older Claude answers
    # through a forced tool. https://docs.claude.com/en/docs/build-with-claude/structured-outputs
    structured_output="tool",
)
_CLAUDE_APIS: Final = ("anthropic", "bedrock")


# fmt: off
CLAUDE_RULES: Final[tuple[CapabilityRule, ...]] = (
    # -- Claude (Anthropic API and Bedrock) ------------------------------------
    # Claude 4.6 and later think adaptively, steered by output_config.effort (the anthropic
    # SDK's OutputConfigParam: low/medium/high/xhigh/max). Opus 4.7 (and Mythos, Fable)
    # take adaptive thinking only (a budget is a 400) and no temperature/top_p/top_k;
    # Opus 4.6 and Sonnet 4.6 still take a budget (deprecated). Output: 128K Opus, 64K Sonnet.
    # https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking
    # https://platform.claude.com/docs/en/build-with-claude/effort
    # https://platform.claude.com/docs/en/about-claude/models/migration-guide#migrating-to-claude-opus-4-7
    # https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.html
    # Claude 4.6 and later refuse a prefilled assistant turn ("Prefilling assistant
    # messages returns a 400 error on Claude 4.6 models", the migration guide above).
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-opus-4[-.][7-9]|claude-(mythos|fable)",
                   capabilities=replace(
        _CLAUDE, sampling=("stop",), thinking_sampling=("stop",), thinking_top_p=None,
        adaptive_thinking=True, thinking_budget=None,
        efforts=("low", "medium", "high", "xhigh", "max"), max_output=128_000,
        structured_output="native", prefill=False)),
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-opus-(4[-.]6|[5-9])", capabilities=replace(
        _CLAUDE, temperature_with_top_p=False, adaptive_thinking=True,
        efforts=("low", "medium", "high", "max"), max_output=128_000,
        structured_output="native", prefill=False)),
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-sonnet-(4[-.]6|[5-9])", capabilities=replace(
        _CLAUDE, temperature_with_top_p=False, adaptive_thinking=True,
        efforts=("low", "medium", "high"), max_output=64_000, structured_output="native",
        prefill=False)),
    # Claude 4.5: "temperature and top_p cannot both be specified for this model".
    # https://docs.anthropic.com/en/docs/about-claude/models/migrating-to-claude-4
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-(opus|sonnet|haiku)-4[-.]5", capabilities=replace(
        _CLAUDE, temperature_with_top_p=False, max_output=64_000, structured_output="native")),
    # Output limits: https://docs.anthropic.com/en/docs/about-claude/models/overview
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-opus-4", capabilities=replace(
        _CLAUDE, max_output=32_000)),
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-(sonnet-4|3-7-sonnet)", capabilities=replace(
        _CLAUDE, max_output=64_000)),
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-3", capabilities=replace(
        _CLAUDE, thinking=False, max_output=8_192)),
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude", capabilities=_CLAUDE),
)
# fmt: on
