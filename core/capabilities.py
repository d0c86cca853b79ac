"""What a model accepts in a request, as data, and the one place options are fitted to it.

A provider's API accepts a parameter for some of its models and answers 400
for others (xAI takes ``reasoning_effort`` from grok-3-mini only; Claude 4.5
refuses ``temperature`` with ``top_p``; Claude with thinking takes ``top_p``
only between 0.95 and 1). Those rules are `Capabilities` records in
``CAPABILITY_RULES`` (the table at the end of this module), matched by wire
format and model-id family, so an unknown model of a known family gets its
family's rules. A
`Model` may carry its own ``capabilities`` to override them.

Request builders never branch on model names: they ask `fit_sampling`,
`fit_effort`, `fit_budget` and `fit_max_tokens`, which drop or clamp what the
model cannot take and say so with one ``streamfn`` warning naming the option
and the model, instead of sending it to fail.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec.structs import replace

from .errors import UsageError

if TYPE_CHECKING:
    from .model_spec import Model
    from .options import Options

__all__ = [
    "CAPABILITY_RULES",
    "SAMPLING_KNOBS",
    "Capabilities",
    "CapabilityRule",
    "UnsupportedInput",
    "capabilities_for",
    "effort_for_off",
    "fit_budget",
    "fit_effort",
    "fit_max_tokens",
    "fit_sampling",
    "fit_thinking_tokens",
    "output_limit",
    "reasons",
    "unsupported",
]

log = logging.getLogger("streamfn")

#: The generation knobs `fit_sampling` decides on, by their `Options` names.
SAMPLING_KNOBS: Final = ("temperature", "top_p", "top_k", "stop", "seed")


class UnsupportedInput(UsageError):
    """The model's wire format cannot take this input; raised before any request is sent."""


class Capabilities(msgspec.Struct, frozen=True, kw_only=True):
    """The request parameters one model (or family) accepts.

    - ``sampling``: knobs accepted with thinking off (`SAMPLING_KNOBS` names).
    - ``thinking_sampling``: knobs still accepted while the model thinks.
    - ``thinking_top_p``: the range ``top_p`` must stay in while thinking.
    - ``temperature_with_top_p``: False when only one of the two may be sent.
    - ``thinking``: whether the model can think at all.
    - ``efforts``: the values the effort knob (``reasoning_effort``,
      ``reasoning.effort``, Gemini 3's ``thinkingLevel``) accepts; empty when the
      model has no such knob; None when unknown (low/medium/high are sent).
    - ``thinking_budget``: (min, max) thinking tokens where the knob is a budget;
      ``max`` 0 means "below the output limit" (Anthropic); None where the model
      takes no budget at all (Claude Opus 4.7: adaptive thinking only).
    - ``adaptive_thinking``: Claude 4.6 and later: a thinking level is sent as
      ``thinking: {"type": "adaptive"}`` with ``output_config.effort`` (one of
      ``efforts``) instead of a token budget.
    - ``thinking_off``: whether thinking can be switched off.
    - ``max_output``: the output-token limit (None: trust ``Model.max_output``).
    - ``forced_tool_with_thinking``: whether ``tool_choice`` required/a name may
      be combined with thinking.
    - ``replay_tool_calls``: what a replayed assistant tool-call turn must carry:
      ``thinking_block`` (Anthropic with thinking: the turn starts with a signed
      thinking block), ``thought_signature`` (Gemini 3: the first function call
      of a turn is signed), ``reasoning_field`` (DeepSeek thinking: the message
      has ``reasoning_content``), or None.
    - ``structured_output``: how ``Options.response_schema`` is sent: ``native``
      (the wire's JSON-schema mode), ``openapi`` (Gemini's OpenAPI-subset
      ``responseSchema``), ``tool`` (a forced tool whose input is the answer;
      see `structured`), or ``none`` (refused with a clear error).
    - ``cache_breakpoints``: how many explicit prompt-cache breakpoints a request
      may carry (Anthropic and Bedrock: 4); 0 where the model has no prompt cache
      to mark (see `cache_points`).
    """

    sampling: tuple[str, ...] = SAMPLING_KNOBS
    thinking_sampling: tuple[str, ...] = SAMPLING_KNOBS
    thinking_top_p: tuple[float, float] | None = None
    temperature_with_top_p: bool = True
    thinking: bool = True
    efforts: tuple[str, ...] | None = None
    thinking_budget: tuple[int, int] | None = None
    adaptive_thinking: bool = False
    thinking_off: bool = True
    max_output: int | None = None
    forced_tool_with_thinking: bool = True
    replay_tool_calls: str | None = None
    structured_output: str = "native"
    cache_breakpoints: int = 4
    inputs: tuple[str, ...] | None = None
    server_tools: tuple[str, ...] | None = None


class CapabilityRule(msgspec.Struct, frozen=True, kw_only=True):
    """``capabilities`` for models whose wire format is one of ``apis`` (and whose
    provider is one of ``providers``, when given) and whose id matches ``family``
    (a regular expression searched in the id, so Bedrock's ``us.anthropic.``
    prefixes and dated suffixes match too)."""

    apis: tuple[str, ...]
    family: str
    capabilities: Capabilities
    providers: tuple[str, ...] = ()


_DEFAULT: Final = Capabilities()
_compiled: dict[str, re.Pattern[str]] = {}
_matched: dict[tuple[str, str, str, int, bool | None, int], Capabilities] = {}
_MATCHED_MAX: Final = 1024


def capabilities_for(model: Model) -> Capabilities:
    """The model's own ``capabilities``, else its family's (with what the model's record
    states applied, see `_with_stated_facts`), else permissive defaults.

    Building one request asks several times, so the family match is remembered
    per (api, provider, id). ``CAPABILITY_RULES`` is meant as a constant; a rule
    appended or removed at run time is still seen (the memo is keyed by its length).
    """
    if model.capabilities is not None:
        return model.capabilities
    stated = (model.temperature, model.max_output if model.source else 0)
    key = (model.api, model.provider, model.id, len(CAPABILITY_RULES), *stated)
    found = _matched.get(key)
    if found is None:
        if len(_matched) >= _MATCHED_MAX:
            _matched.clear()
        found = _matched[key] = _with_stated_facts(model, _match(model))
    return found


def _with_stated_facts(model: Model, family: Capabilities) -> Capabilities:
    """The family's rules, corrected by what the model's own record states.

    A catalogued model (``Model.source`` set) knows its output limit, which wins
    over the family's (claude-opus-4-7 writes 128k tokens, not the 32k of
    claude-opus-4); ``Model.temperature=False`` (models.dev's ``temperature:
    false``) keeps ``temperature`` out of every request.
    """
    changes: dict[str, Any] = {}
    if model.source and family.max_output is not None and family.max_output != model.max_output:
        changes["max_output"] = model.max_output
    if model.temperature is False:
        changes["sampling"] = tuple(k for k in family.sampling if k != "temperature")
        changes["thinking_sampling"] = tuple(
            k for k in family.thinking_sampling if k != "temperature"
        )
    return replace(family, **changes) if changes else family


def _match(model: Model) -> Capabilities:
    """The first rule of ``CAPABILITY_RULES`` that fits the model, else the defaults."""
    for rule in CAPABILITY_RULES:
        if model.api not in rule.apis or (rule.providers and model.provider not in rule.providers):
            continue
        pattern = _compiled.get(rule.family)
        if pattern is None:
            pattern = _compiled[rule.family] = re.compile(rule.family)
        if pattern.search(model.id):
            return rule.capabilities
    return _DEFAULT


def unsupported(model: Model, option: str, action: str) -> None:
    """The one warning for an option the model cannot take as asked."""
    log.warning("%s: %s %s", model.key, option, action)


def fit_sampling(
    model: Model, options: Options, *, thinking: bool, wire: tuple[str, ...] = SAMPLING_KNOBS
) -> dict[str, Any]:
    """The `SAMPLING_KNOBS` of ``options`` that can be sent, by their `Options` names.

    ``wire`` names the knobs the wire format has at all. Dropped knobs and
    clamped ``top_p`` are logged once each. With thinking, ``thinking_sampling``
    and ``thinking_top_p`` apply; ``top_p`` is dropped when ``temperature`` is
    kept and the model takes only one of them.
    """
    knobs = {name: getattr(options, name) for name in SAMPLING_KNOBS}
    caps = capabilities_for(model)
    allowed = caps.thinking_sampling if thinking else caps.sampling
    out: dict[str, Any] = {}
    for name, value in knobs.items():
        if value is None or value == []:
            continue
        if name not in wire:
            unsupported(model, name, f"has no field in the {model.api} API; not sent")
            continue
        if name not in allowed:
            why = "while thinking" if thinking and name in caps.sampling else "by this model"
            unsupported(model, name, f"is not accepted {why}; not sent")
            continue
        out[name] = value
    if thinking and caps.thinking_top_p is not None and "top_p" in out:
        low, high = caps.thinking_top_p
        clamped = min(max(out["top_p"], low), high)
        if clamped != out["top_p"]:
            unsupported(
                model, "top_p", f"must be within {low}-{high} while thinking; sent {clamped}"
            )
            out["top_p"] = clamped
    if not caps.temperature_with_top_p and "temperature" in out and "top_p" in out:
        unsupported(model, "top_p", "cannot be sent together with temperature; top_p not sent")
        del out["top_p"]
    return out


_GENERIC_EFFORTS: Final = ("low", "medium", "high")
#: every effort any provider names, weakest first (OpenAI's ReasoningEffort, Claude's
#: output_config.effort, Gemini's thinkingLevel), to find the nearest one a model takes
_EFFORT_ORDER: Final = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def fit_effort(model: Model, level: str) -> str | None:
    """The accepted effort closest to ``level`` (None: the model has no effort knob).

    A level the model lacks becomes the nearest one it has, preferring the
    higher (``medium`` -> ``high`` on grok-3-mini); where the model's efforts
    are unknown only low/medium/high are sent (``minimal`` -> ``low`` and
    ``xhigh`` -> ``high``, without a warning: nothing is known to refuse).
    """
    caps = capabilities_for(model)
    if caps.efforts is None:
        if level in _GENERIC_EFFORTS:
            return level
        return "high" if level == "xhigh" else "low"
    if not caps.efforts:
        unsupported(model, "thinking", f"={level} has no effort knob on this model; not sent")
        return None
    if level in caps.efforts:
        return level
    order = _EFFORT_ORDER
    rank = order.index(level) if level in order else len(order) - 1
    ranked = sorted(
        (e for e in caps.efforts if e in order),
        key=lambda e: (abs(order.index(e) - rank), -order.index(e)),
    )
    chosen = ranked[0] if ranked else caps.efforts[-1]
    unsupported(model, "thinking", f"={level} is not an effort this model takes; sent {chosen}")
    return chosen


def reasons(model: Model) -> bool:
    """Whether the model thinks: its catalogue entry says so, or its family has an
    effort knob (a ``gpt-5.5`` nobody listed yet still gets ``reasoning_effort``)."""
    return model.reasoning or bool(capabilities_for(model).efforts)


def effort_for_off(model: Model) -> str | None:
    """The effort that switches thinking off (``none``, gpt-5.1), or None: nothing to
    send, with a warning when the model cannot stop thinking at all."""
    caps = capabilities_for(model)
    if "none" in (caps.efforts or ()):
        return "none"
    if not caps.thinking_off:
        unsupported(model, "thinking", "=off cannot switch thinking off on this model; left on")
    return None


def fit_budget(model: Model, budget: int, *, below: int | None = None) -> int:
    """``budget`` within the model's thinking-budget range (and below ``below``)."""
    caps = capabilities_for(model)
    low, high = caps.thinking_budget or (0, 0)
    fitted = budget
    if high and fitted > high:
        fitted = high
    if below is not None and fitted >= below:
        fitted = below - max(1024, below // 4)
    fitted = max(fitted, low)
    if fitted != budget:
        unsupported(
            model, "thinking_budget", f"={budget} is outside what it accepts; sent {fitted}"
        )
    return fitted


def output_limit(model: Model) -> int:
    """The most output tokens to ask for: the model's, within its family's published limit."""
    family = capabilities_for(model).max_output
    return min(model.max_output, family) if family else model.max_output


def fit_thinking_tokens(model: Model, max_tokens: int | None, budget: int) -> tuple[int, int]:
    """``(max_tokens, budget)`` where ``max_tokens`` counts the thinking (Anthropic, Claude
    on Bedrock): ``budget < max_tokens <= limit``, the budget within the model's range.

    A ``max_tokens`` not above the budget becomes ``budget + max_tokens`` (the
    caller's answer room on top of the thinking), capped at the output limit;
    when the limit leaves no room, the budget shrinks (with a warning).
    """
    limit = output_limit(model)
    budget = fit_budget(model, budget)
    total = fit_max_tokens(model, max_tokens) if max_tokens else limit
    if total <= budget:
        total = max(min(budget + total, limit), total)
    if budget >= total:
        budget = fit_budget(model, budget, below=total)
    return total, budget


def fit_max_tokens(model: Model, max_tokens: int) -> int:
    """``max_tokens`` clamped to the output limit its family publishes (if known)."""
    limit = capabilities_for(model).max_output
    if limit is not None and max_tokens > limit:
        unsupported(model, "max_tokens", f"={max_tokens} exceeds its output limit; sent {limit}")
        return limit
    return max_tokens


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
    # Claude 4.6 and later think adaptively, steered by output_config.effort (the anthropic
    # SDK's OutputConfigParam: low/medium/high/xhigh/max). Opus 4.7 (and Mythos, Fable)
    # take adaptive thinking only (a budget is a 400) and no temperature/top_p/top_k;
    # Opus 4.6 and Sonnet 4.6 still take a budget (deprecated). Output: 128K Opus, 64K Sonnet.
    # https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking
    # https://platform.claude.com/docs/en/build-with-claude/effort
    # https://platform.claude.com/docs/en/about-claude/models/migration-guide#migrating-to-claude-opus-4-7
    # https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.html
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-opus-4[-.][7-9]|claude-(mythos|fable)",
                   capabilities=replace(
        _CLAUDE, sampling=("stop",), thinking_sampling=("stop",), thinking_top_p=None,
        adaptive_thinking=True, thinking_budget=None,
        efforts=("low", "medium", "high", "xhigh", "max"), max_output=128_000,
        structured_output="native")),
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-opus-(4[-.]6|[5-9])", capabilities=replace(
        _CLAUDE, temperature_with_top_p=False, adaptive_thinking=True,
        efforts=("low", "medium", "high", "max"), max_output=128_000,
        structured_output="native")),
    CapabilityRule(apis=_CLAUDE_APIS, family=r"claude-sonnet-(4[-.]6|[5-9])", capabilities=replace(
        _CLAUDE, temperature_with_top_p=False, adaptive_thinking=True,
        efforts=("low", "medium", "high"), max_output=64_000, structured_output="native")),
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
