"""What a model accepts in a request, as data, and the one place options are fitted to it.

A provider's API accepts a parameter for some of its models and answers 400
for others (xAI takes ``reasoning_effort`` from grok-3-mini only; Claude 4.5
refuses ``temperature`` with ``top_p``; Claude with thinking takes ``top_p``
only between 0.95 and 1). Those rules are `Capabilities` records in
each wire format's table (its `WireFormat`'s ``capability_rules``, kept in its
room), matched by model-id family, so an unknown model of a known family gets its
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

from msgspec.structs import replace

from .._errors import UsageError
from .._wire_formats import wire_format
from ._capability_spec import SAMPLING_KNOBS, Capabilities, CapabilityRule

if TYPE_CHECKING:
    from .._options import Options
    from ._model_spec import Model

__all__ = [
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


class UnsupportedInput(UsageError):
    """The model's wire format cannot take this input; raised before any request is sent."""


_DEFAULT: Final = Capabilities()
_compiled: dict[str, re.Pattern[str]] = {}
_matched: dict[tuple[str, str, str, bool | None, int], Capabilities] = {}
_MATCHED_MAX: Final = 1024


def capabilities_for(model: Model) -> Capabilities:
    """The model's own ``capabilities``, else its family's (with what the model's record
    states applied, see `_with_stated_facts`), else permissive defaults.

    Building one request asks several times, so the family match is remembered
    per (api, provider, id).
    """
    if model.capabilities is not None:
        return model.capabilities
    stated = (model.temperature, model.max_output if model.source else 0)
    key = (model.api, model.provider, model.id, *stated)
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
    """The first of its wire format's rules that fits the model, else the defaults."""
    for rule in wire_format(model.api).capability_rules:
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
        unsupported(model, f"thinking={level}", "has no effort knob on this model; not sent")
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
    unsupported(model, f"thinking={level}", f"is not an effort this model takes; sent {chosen}")
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
        unsupported(
            model, "thinking=off", "is not possible on this model (it always thinks); left on"
        )
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
