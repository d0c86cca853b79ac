"""The table of what each model family accepts in a request (see `capabilities`).

Kept apart from the functions that read it so either can be read whole: the
rules are data, matched by wire format and model-id family, first match wins.
"""

from __future__ import annotations

from typing import Final

from msgspec.structs import replace

from ._capability_spec import Capabilities, CapabilityRule

__all__ = ["CAPABILITY_RULES"]

# ---------------------------------------------------------------------------
# Capabilities by family: what each model accepts in a request.
# First matching rule wins, so specific families come before general ones.
# ---------------------------------------------------------------------------

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
#: Converse has no seed; top_k goes through additionalModelRequestFields (Claude only).
#: https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-call.html
_CONVERSE_SAMPLING = ("temperature", "top_p", "stop")
_CLAUDE_APIS = ("anthropic", "bedrock")
_OPENAI_APIS = ("openai-chat", "openai-responses")
#: OpenAI reasoning models take no temperature/top_p/stop.
#: https://platform.openai.com/docs/guides/reasoning
_OPENAI_REASONING_SAMPLING = ("seed",)

# fmt: off
CAPABILITY_RULES: list[CapabilityRule] = [
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
    # -- other Bedrock models: Converse's own knobs, no thinking. Structured output rides on
    # a forced tool, which Converse takes from Claude and Nova only ("SpecificToolChoice:
    # only supported by Anthropic Claude 3 and Amazon Nova models", botocore's model); so
    # is prompt caching (cachePoint).
    # https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html
    CapabilityRule(apis=("bedrock",), family=r"amazon\.nova", capabilities=Capabilities(
        sampling=_CONVERSE_SAMPLING, thinking=False, structured_output="tool")),
    CapabilityRule(apis=("bedrock",), family=r"", capabilities=Capabilities(
        sampling=_CONVERSE_SAMPLING, thinking=False, structured_output="none",
        cache_breakpoints=0)),
    # -- OpenAI ------------------------------------------------------------------------
    # Effort levels per model (the openai SDK's ReasoningEffort names them all:
    # none/minimal/low/medium/high/xhigh/max): gpt-5 takes minimal..high; gpt-5.1 replaced
    # minimal with none (its default); xhigh came with gpt-5.1-codex-max and every model
    # after it; the codex models take no none; gpt-5-pro takes high only, the later pro
    # models medium..xhigh. o-series: low/medium/high. None of them takes temperature,
    # top_p or stop.
    # https://developers.openai.com/api/docs/guides/reasoning
    # https://platform.openai.com/docs/api-reference/chat/create#chat-create-reasoning_effort
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5-pro", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("high",), thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.\d+-pro", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("medium", "high", "xhigh"),
                                             thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.1-codex(?!-max)",
                   providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("low", "medium", "high"),
                                             thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.\d+-codex", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("low", "medium", "high", "xhigh"),
                                             thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.1(?!\d|-chat)",
                   providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("none", "low", "medium", "high"))),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.\d+(?!.*chat)",
                   providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("none", "low", "medium", "high", "xhigh"))),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5(?!.*chat)", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("minimal", "low", "medium", "high"),
                                             thinking_off=False)),
    CapabilityRule(apis=_OPENAI_APIS, family=r"^o\d", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("low", "medium", "high"),
                                             thinking_off=False)),
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
]
# fmt: on
