"""Built-in models with published prices (US dollars per million tokens).

Data only. Prices are each provider's published list prices for standard
(non-batch, short-context) requests as of 2025-11 (OpenAI, Anthropic, Google,
Mistral, xAI, Groq, DeepSeek, Z.ai pricing pages; Bedrock on-demand prices in
us-east-1; OpenRouter's pass-through prices). Where a provider has a long-context
tier (Gemini 2.5 Pro above 200k tokens) the short-context price is listed.
``price_cache_read`` is the cached-input price; ``price_cache_write`` is the
5-minute cache write where the provider bills writes (Anthropic, Bedrock Claude).
Anything not here is one `Model(...)` or `openai_compatible(...)` away.
"""

from __future__ import annotations

from typing import Final

from msgspec.structs import replace

from .capabilities import Capabilities, CapabilityRule
from .models import Model

OPENAI = "https://api.openai.com/v1"
ANTHROPIC = "https://api.anthropic.com"
GEMINI = "https://generativelanguage.googleapis.com/v1beta"
MISTRAL = "https://api.mistral.ai/v1"
XAI = "https://api.x.ai/v1"
GROQ = "https://api.groq.com/openai/v1"
DEEPSEEK = "https://api.deepseek.com/v1"
OPENROUTER = "https://openrouter.ai/api/v1"
ZAI = "https://api.z.ai/api/paas/v4"
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com"

# fmt: off
BUILTIN_MODELS: list[Model] = [
    # -- OpenAI (chat completions; the Responses API serves the same ids) ----
    Model(id="gpt-4o", provider="openai", api="openai-chat", base_url=OPENAI, name="GPT-4o",
          context_window=128_000, max_output=16_384,
          price_input=2.50, price_output=10.00, price_cache_read=1.25),
    Model(id="gpt-4o-mini", provider="openai", api="openai-chat", base_url=OPENAI,
          name="GPT-4o mini", context_window=128_000, max_output=16_384,
          price_input=0.15, price_output=0.60, price_cache_read=0.075),
    Model(id="gpt-4.1", provider="openai", api="openai-chat", base_url=OPENAI, name="GPT-4.1",
          context_window=1_047_576, max_output=32_768,
          price_input=2.00, price_output=8.00, price_cache_read=0.50),
    Model(id="gpt-4.1-mini", provider="openai", api="openai-chat", base_url=OPENAI,
          name="GPT-4.1 mini", context_window=1_047_576, max_output=32_768,
          price_input=0.40, price_output=1.60, price_cache_read=0.10),
    Model(id="gpt-4.1-nano", provider="openai", api="openai-chat", base_url=OPENAI,
          name="GPT-4.1 nano", context_window=1_047_576, max_output=32_768,
          price_input=0.10, price_output=0.40, price_cache_read=0.025),
    Model(id="o3", provider="openai", api="openai-chat", base_url=OPENAI, name="o3",
          context_window=200_000, max_output=100_000, reasoning=True,
          price_input=2.00, price_output=8.00, price_cache_read=0.50),
    Model(id="o3-mini", provider="openai", api="openai-chat", base_url=OPENAI, name="o3-mini",
          context_window=200_000, max_output=100_000, reasoning=True, images=False,
          price_input=1.10, price_output=4.40, price_cache_read=0.55),
    Model(id="o4-mini", provider="openai", api="openai-chat", base_url=OPENAI, name="o4-mini",
          context_window=200_000, max_output=100_000, reasoning=True,
          price_input=1.10, price_output=4.40, price_cache_read=0.275),
    Model(id="gpt-5", provider="openai", api="openai-chat", base_url=OPENAI, name="GPT-5",
          context_window=400_000, max_output=128_000, reasoning=True,
          price_input=1.25, price_output=10.00, price_cache_read=0.125),
    Model(id="gpt-5-mini", provider="openai", api="openai-chat", base_url=OPENAI,
          name="GPT-5 mini", context_window=400_000, max_output=128_000, reasoning=True,
          price_input=0.25, price_output=2.00, price_cache_read=0.025),
    Model(id="gpt-5-nano", provider="openai", api="openai-chat", base_url=OPENAI,
          name="GPT-5 nano", context_window=400_000, max_output=128_000, reasoning=True,
          price_input=0.05, price_output=0.40, price_cache_read=0.005),
    Model(id="gpt-5-chat-latest", provider="openai", api="openai-chat", base_url=OPENAI,
          name="GPT-5 Chat", context_window=128_000, max_output=16_384,
          price_input=1.25, price_output=10.00, price_cache_read=0.125),
    Model(id="gpt-5.1", provider="openai", api="openai-chat", base_url=OPENAI, name="GPT-5.1",
          context_window=400_000, max_output=128_000, reasoning=True,
          price_input=1.25, price_output=10.00, price_cache_read=0.125),
    # -- Anthropic (cache read 0.1x input, 5-minute cache write 1.25x input) ----
    Model(id="claude-opus-4-5", provider="anthropic", api="anthropic", base_url=ANTHROPIC,
          name="Claude Opus 4.5", context_window=200_000, max_output=64_000, reasoning=True,
          price_input=5.0, price_output=25.0, price_cache_read=0.50, price_cache_write=6.25),
    Model(id="claude-opus-4-1", provider="anthropic", api="anthropic", base_url=ANTHROPIC,
          name="Claude Opus 4.1", context_window=200_000, max_output=32_000, reasoning=True,
          price_input=15.0, price_output=75.0, price_cache_read=1.50, price_cache_write=18.75),
    Model(id="claude-opus-4-0", provider="anthropic", api="anthropic", base_url=ANTHROPIC,
          name="Claude Opus 4", context_window=200_000, max_output=32_000, reasoning=True,
          price_input=15.0, price_output=75.0, price_cache_read=1.50, price_cache_write=18.75),
    Model(id="claude-sonnet-4-5", provider="anthropic", api="anthropic", base_url=ANTHROPIC,
          name="Claude Sonnet 4.5", context_window=200_000, max_output=64_000, reasoning=True,
          price_input=3.0, price_output=15.0, price_cache_read=0.30, price_cache_write=3.75),
    Model(id="claude-sonnet-4-0", provider="anthropic", api="anthropic", base_url=ANTHROPIC,
          name="Claude Sonnet 4", context_window=200_000, max_output=64_000, reasoning=True,
          price_input=3.0, price_output=15.0, price_cache_read=0.30, price_cache_write=3.75),
    Model(id="claude-3-7-sonnet-latest", provider="anthropic", api="anthropic",
          base_url=ANTHROPIC, name="Claude Sonnet 3.7", context_window=200_000,
          max_output=64_000, reasoning=True,
          price_input=3.0, price_output=15.0, price_cache_read=0.30, price_cache_write=3.75),
    Model(id="claude-haiku-4-5", provider="anthropic", api="anthropic", base_url=ANTHROPIC,
          name="Claude Haiku 4.5", context_window=200_000, max_output=64_000, reasoning=True,
          price_input=1.0, price_output=5.0, price_cache_read=0.10, price_cache_write=1.25),
    Model(id="claude-3-5-haiku-latest", provider="anthropic", api="anthropic",
          base_url=ANTHROPIC, name="Claude Haiku 3.5", context_window=200_000, max_output=8_192,
          price_input=0.80, price_output=4.0, price_cache_read=0.08, price_cache_write=1.0),
    # -- Google Gemini (prompts up to 200k tokens; cache reads at the 2025-11 rates) --
    Model(id="gemini-3-pro-preview", provider="google", api="gemini", base_url=GEMINI,
          name="Gemini 3 Pro", context_window=1_048_576, max_output=65_536, reasoning=True,
          price_input=2.00, price_output=12.00, price_cache_read=0.20),
    Model(id="gemini-2.5-pro", provider="google", api="gemini", base_url=GEMINI,
          name="Gemini 2.5 Pro", context_window=1_048_576, max_output=65_536, reasoning=True,
          price_input=1.25, price_output=10.00, price_cache_read=0.125),
    Model(id="gemini-2.5-flash", provider="google", api="gemini", base_url=GEMINI,
          name="Gemini 2.5 Flash", context_window=1_048_576, max_output=65_536, reasoning=True,
          price_input=0.30, price_output=2.50, price_cache_read=0.03),
    Model(id="gemini-2.5-flash-lite", provider="google", api="gemini", base_url=GEMINI,
          name="Gemini 2.5 Flash-Lite", context_window=1_048_576, max_output=65_536,
          reasoning=True, price_input=0.10, price_output=0.40, price_cache_read=0.01),
    Model(id="gemini-2.0-flash", provider="google", api="gemini", base_url=GEMINI,
          name="Gemini 2.0 Flash", context_window=1_048_576, max_output=8_192,
          price_input=0.10, price_output=0.40, price_cache_read=0.025),
    # -- Mistral -----------------------------------------------------------------
    Model(id="mistral-large-latest", provider="mistral", api="openai-chat", base_url=MISTRAL,
          name="Mistral Large", context_window=131_072, max_output=32_768,
          price_input=2.00, price_output=6.00),
    Model(id="mistral-medium-latest", provider="mistral", api="openai-chat", base_url=MISTRAL,
          name="Mistral Medium 3", context_window=131_072, max_output=32_768,
          price_input=0.40, price_output=2.00),
    Model(id="mistral-small-latest", provider="mistral", api="openai-chat", base_url=MISTRAL,
          name="Mistral Small 3.2", context_window=131_072, max_output=32_768,
          price_input=0.10, price_output=0.30),
    Model(id="magistral-medium-latest", provider="mistral", api="openai-chat",
          base_url=MISTRAL, name="Magistral Medium", context_window=40_960, max_output=40_000,
          reasoning=True, price_input=2.00, price_output=5.00),
    Model(id="magistral-small-latest", provider="mistral", api="openai-chat",
          base_url=MISTRAL, name="Magistral Small", context_window=40_960, max_output=40_000,
          reasoning=True, price_input=0.50, price_output=1.50),
    Model(id="codestral-latest", provider="mistral", api="openai-chat", base_url=MISTRAL,
          name="Codestral", context_window=256_000, max_output=32_768, images=False,
          price_input=0.30, price_output=0.90),
    # -- xAI -----------------------------------------------------------------------
    Model(id="grok-4", provider="xai", api="openai-chat", base_url=XAI, name="Grok 4",
          context_window=256_000, max_output=64_000, reasoning=True,
          price_input=3.00, price_output=15.00, price_cache_read=0.75),
    Model(id="grok-4-fast-reasoning", provider="xai", api="openai-chat", base_url=XAI,
          name="Grok 4 Fast", context_window=2_000_000, max_output=30_000, reasoning=True,
          price_input=0.20, price_output=0.50, price_cache_read=0.05),
    Model(id="grok-code-fast-1", provider="xai", api="openai-chat", base_url=XAI,
          name="Grok Code Fast 1", context_window=256_000, max_output=10_000, reasoning=True,
          images=False, price_input=0.20, price_output=1.50, price_cache_read=0.02),
    Model(id="grok-3", provider="xai", api="openai-chat", base_url=XAI, name="Grok 3",
          context_window=131_072, max_output=16_384, images=False,
          price_input=3.00, price_output=15.00, price_cache_read=0.75),
    Model(id="grok-3-mini", provider="xai", api="openai-chat", base_url=XAI,
          name="Grok 3 Mini", context_window=131_072, max_output=16_384, reasoning=True,
          images=False, price_input=0.30, price_output=0.50, price_cache_read=0.075),
    # -- Groq ------------------------------------------------------------------------
    Model(id="llama-3.3-70b-versatile", provider="groq", api="openai-chat", base_url=GROQ,
          name="Llama 3.3 70B (Groq)", context_window=131_072, max_output=32_768, images=False,
          price_input=0.59, price_output=0.79),
    Model(id="llama-3.1-8b-instant", provider="groq", api="openai-chat", base_url=GROQ,
          name="Llama 3.1 8B (Groq)", context_window=131_072, max_output=131_072, images=False,
          price_input=0.05, price_output=0.08),
    Model(id="openai/gpt-oss-120b", provider="groq", api="openai-chat", base_url=GROQ,
          name="gpt-oss-120b (Groq)", context_window=131_072, max_output=65_536,
          reasoning=True, images=False, price_input=0.15, price_output=0.75),
    Model(id="openai/gpt-oss-20b", provider="groq", api="openai-chat", base_url=GROQ,
          name="gpt-oss-20b (Groq)", context_window=131_072, max_output=65_536,
          reasoning=True, images=False, price_input=0.10, price_output=0.50),
    # -- DeepSeek (V3.2; cache-miss input, cache-hit read) ----------------------------
    Model(id="deepseek-chat", provider="deepseek", api="openai-chat", base_url=DEEPSEEK,
          name="DeepSeek V3.2", context_window=128_000, max_output=8_192, images=False,
          price_input=0.28, price_output=0.42, price_cache_read=0.028),
    Model(id="deepseek-reasoner", provider="deepseek", api="openai-chat", base_url=DEEPSEEK,
          name="DeepSeek V3.2 (thinking)", context_window=128_000, max_output=65_536,
          reasoning=True, images=False,
          price_input=0.28, price_output=0.42, price_cache_read=0.028),
    # -- Z.ai -------------------------------------------------------------------------
    Model(id="glm-4.6", provider="zai", api="openai-chat", base_url=ZAI, name="GLM-4.6",
          context_window=200_000, max_output=128_000, reasoning=True, images=False,
          price_input=0.60, price_output=2.20, price_cache_read=0.11),
    Model(id="glm-4.5-air", provider="zai", api="openai-chat", base_url=ZAI,
          name="GLM-4.5-Air", context_window=128_000, max_output=96_000, reasoning=True,
          images=False, price_input=0.20, price_output=1.10, price_cache_read=0.03),
    # -- OpenRouter (provider prices passed through) ------------------------------------
    Model(id="anthropic/claude-sonnet-4.5", provider="openrouter", api="openai-chat",
          base_url=OPENROUTER, name="Claude Sonnet 4.5 (OpenRouter)", context_window=1_000_000,
          max_output=64_000, reasoning=True,
          price_input=3.0, price_output=15.0, price_cache_read=0.30, price_cache_write=3.75),
    Model(id="openai/gpt-4o-mini", provider="openrouter", api="openai-chat",
          base_url=OPENROUTER, name="GPT-4o mini (OpenRouter)", context_window=128_000,
          max_output=16_384, price_input=0.15, price_output=0.60, price_cache_read=0.075),
    Model(id="google/gemini-2.5-flash", provider="openrouter", api="openai-chat",
          base_url=OPENROUTER, name="Gemini 2.5 Flash (OpenRouter)", context_window=1_048_576,
          max_output=65_535, reasoning=True,
          price_input=0.30, price_output=2.50, price_cache_read=0.03),
    Model(id="deepseek/deepseek-chat-v3.1", provider="openrouter", api="openai-chat",
          base_url=OPENROUTER, name="DeepSeek V3.1 (OpenRouter)", context_window=163_840,
          max_output=163_840, reasoning=True, images=False,
          price_input=0.27, price_output=1.00),
    # -- AWS Bedrock (ConverseStream; cross-region inference profile ids) ---------------
    Model(id="us.anthropic.claude-sonnet-4-5-20250929-v1:0", provider="bedrock",
          api="bedrock", base_url=BEDROCK, name="Claude Sonnet 4.5 (Bedrock)",
          context_window=200_000, max_output=64_000, reasoning=True,
          price_input=3.0, price_output=15.0, price_cache_read=0.30, price_cache_write=3.75),
    Model(id="us.anthropic.claude-haiku-4-5-20251001-v1:0", provider="bedrock",
          api="bedrock", base_url=BEDROCK, name="Claude Haiku 4.5 (Bedrock)",
          context_window=200_000, max_output=64_000, reasoning=True,
          price_input=1.0, price_output=5.0, price_cache_read=0.10, price_cache_write=1.25),
    Model(id="us.anthropic.claude-opus-4-1-20250805-v1:0", provider="bedrock",
          api="bedrock", base_url=BEDROCK, name="Claude Opus 4.1 (Bedrock)",
          context_window=200_000, max_output=32_000, reasoning=True,
          price_input=15.0, price_output=75.0, price_cache_read=1.50, price_cache_write=18.75),
    Model(id="us.amazon.nova-pro-v1:0", provider="bedrock", api="bedrock", base_url=BEDROCK,
          name="Amazon Nova Pro", context_window=300_000, max_output=10_000,
          price_input=0.80, price_output=3.20, price_cache_read=0.20),
    Model(id="us.amazon.nova-lite-v1:0", provider="bedrock", api="bedrock", base_url=BEDROCK,
          name="Amazon Nova Lite", context_window=300_000, max_output=10_000,
          price_input=0.06, price_output=0.24, price_cache_read=0.015),
    Model(id="us.amazon.nova-micro-v1:0", provider="bedrock", api="bedrock",
          base_url=BEDROCK, name="Amazon Nova Micro", context_window=128_000,
          max_output=10_000, images=False,
          price_input=0.035, price_output=0.14, price_cache_read=0.00875),
    Model(id="us.meta.llama3-3-70b-instruct-v1:0", provider="bedrock", api="bedrock",
          base_url=BEDROCK, name="Llama 3.3 70B (Bedrock)", context_window=128_000,
          max_output=8_192, images=False, price_input=0.72, price_output=0.72),
]
# fmt: on


# ---------------------------------------------------------------------------
# Capabilities by family: what each model accepts in a request (see capabilities.py).
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
    # gpt-5.1 replaces "minimal" with "none"; o-series take low/medium/high.
    # https://platform.openai.com/docs/api-reference/chat/create#chat-create-reasoning_effort
    CapabilityRule(apis=_OPENAI_APIS, family=r"^gpt-5\.1(?!-chat)", providers=("openai", "azure"),
                   capabilities=Capabilities(sampling=_OPENAI_REASONING_SAMPLING,
                                             thinking_sampling=_OPENAI_REASONING_SAMPLING,
                                             efforts=("none", "low", "medium", "high"))),
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
