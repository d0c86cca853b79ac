"""How Claude is asked to think: one decision for the Anthropic API and Claude on Bedrock.

Two generations, told apart by the model's `Capabilities` (family rules in
`streamfn.core.catalogue._capabilities`), never by its name here:

- budget thinking (Claude 3.7 to 4.5): ``thinking: {"type": "enabled",
  "budget_tokens": N}``, where ``max_tokens`` counts the thinking and must
  exceed the budget (`fit_thinking_tokens`);
- adaptive thinking (Claude 4.6 and later, ``adaptive_thinking``):
  ``thinking: {"type": "adaptive"}`` and the level as
  ``output_config: {"effort": ...}`` (anthropic SDK: ``ThinkingConfigAdaptiveParam``,
  ``OutputConfigParam.effort``); no budget to fit, so ``max_tokens`` stays
  the caller's or the model's output limit. An explicit ``thinking_budget``
  is still sent as a budget where the model takes one (Opus 4.6, Sonnet 4.6);
  where it takes none (Opus 4.7) it becomes adaptive thinking, with a warning.

https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking
https://platform.claude.com/docs/en/build-with-claude/effort
https://platform.claude.com/docs/en/build-with-claude/extended-thinking
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from streamfn.core._messages import Context, Message
from streamfn.core._options import Options, ThinkingLevel
from streamfn.core.catalogue._capabilities import (
    capabilities_for,
    fit_effort,
    fit_thinking_tokens,
    unsupported,
)
from streamfn.core.catalogue._models import Model
from streamfn.core.providers._convert import thinking_allowed

__all__ = ["ClaudeThinking", "claude_thinking", "thinking_asked"]


class ClaudeThinking(NamedTuple):
    """What to send: the ``thinking`` object and ``output_config.effort`` (None: leave
    out), and ``max_tokens`` (fitted around a budget; else as given)."""

    thinking: dict[str, Any] | None
    effort: str | None
    max_tokens: int | None


def thinking_asked(options: Options) -> bool:
    """An explicit budget decides (0: off); otherwise a level other than off."""
    if options.thinking_budget is not None:
        return options.thinking_budget > 0
    return options.thinking not in (None, ThinkingLevel.OFF)


def claude_thinking(
    model: Model,
    context: Context,
    options: Options,
    messages: list[Message],
    *,
    budgets: Mapping[ThinkingLevel, int],
    max_tokens: int | None,
) -> ClaudeThinking:
    """The thinking fields of one Claude request. ``budgets``: the provider's
    budget per level, for the models that think by budget."""
    if not thinking_asked(options) or not thinking_allowed(model, context, options, messages):
        return ClaudeThinking(None, None, max_tokens)
    caps = capabilities_for(model)
    explicit = options.thinking_budget
    if caps.adaptive_thinking and (explicit is None or caps.thinking_budget is None):
        effort: str | None = None
        if explicit is not None:
            unsupported(
                model,
                "thinking_budget",
                "is not accepted by this model (adaptive thinking only); "
                "adaptive thinking sent, at the model's default effort",
            )
        elif options.thinking is not None:
            effort = fit_effort(model, str(options.thinking))
        return ClaudeThinking(_displayed({"type": "adaptive"}, options), effort, max_tokens)
    if explicit is not None:
        budget = explicit
    else:
        assert options.thinking is not None  # thinking_asked
        budget = budgets[options.thinking]
    total, budget = fit_thinking_tokens(model, max_tokens, budget)
    config = _displayed({"type": "enabled", "budget_tokens": budget}, options)
    return ClaudeThinking(config, None, total)


def _displayed(config: dict[str, Any], options: Options) -> dict[str, Any]:
    """``config`` with ``display`` where the caller chose one (``Options.thinking_display``;
    anthropic SDK: ``display`` on both ``ThinkingConfigAdaptiveParam`` and
    ``ThinkingConfigEnabledParam``, "summarized" or "omitted")."""
    if options.thinking_display is not None:
        config["display"] = options.thinking_display
    return config
