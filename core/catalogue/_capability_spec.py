"""The records that say what a model accepts in a request: the types only.

`capability_rules` holds the table built from them and `capabilities` the
functions that read it; this module is what both import, so neither imports
the other's module at load time.
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["SAMPLING_KNOBS", "Capabilities", "CapabilityRule"]

#: The generation knobs `fit_sampling` decides on, by their `Options` names.
SAMPLING_KNOBS: Final = ("temperature", "top_p", "top_k", "stop", "seed")


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
    - ``prefill``: whether a request may end with a partial assistant turn for the
      model to go on from (Claude 4.6 and later answer that with a 400), which
      ``Options(recover="continue")`` needs.
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
    prefill: bool = True


class CapabilityRule(msgspec.Struct, frozen=True, kw_only=True):
    """``capabilities`` for models whose wire format is one of ``apis`` (and whose
    provider is one of ``providers``, when given) and whose id matches ``family``
    (a regular expression searched in the id, so Bedrock's ``us.anthropic.``
    prefixes and dated suffixes match too)."""

    apis: tuple[str, ...]
    family: str
    capabilities: Capabilities
    providers: tuple[str, ...] = ()
