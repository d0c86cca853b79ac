"""Settings for a model id nobody listed, taken from its closest catalogued relative.

A provider ships a new id (``gpt-5.9``, ``claude-opus-4-8``, a dated snapshot,
a Bedrock id in another region) before any catalogue knows it. Rather than
guessing defaults in silence, `relative` finds the catalogued model it most
likely behaves like, in this order:

1. the same model under another name: the id without its Bedrock region, date
   stamp or version suffix is a catalogued one (``eu.anthropic.claude-opus-4-1-…``
   is ``us.anthropic.claude-opus-4-1-…``);
2. a model of the same family (`FAMILIES`, first pattern that matches), the one
   sharing the longest start with the new id, then the newest.

The caller copies that model's limits, prices, reasoning and temperature flags
and says once, in a warning, what it assumed (`describe`). The request rules
(each wire format's ``capability_rules``) match ids by family on their own. Pure: the
catalogue is passed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, NamedTuple

from ._model_spec import Model

__all__ = ["FAMILIES", "Described", "core_id", "describe", "family_of", "relative"]

#: (family name, pattern searched in the id without provider decorations); specific first
FAMILIES: Final[tuple[tuple[str, str], ...]] = (
    # media and research variants behave apart from their base models
    ("image, audio or research variant", r"image|tts|audio|realtime|transcribe|deep-research"),
    ("gpt-5 chat", r"^gpt-5[\w.]*-chat"),
    ("gpt-5 pro", r"^gpt-5[\w.]*-pro"),
    ("gpt-5 codex", r"^gpt-5[\w.]*-codex"),
    ("gpt-5 mini", r"^gpt-5[\w.]*-mini"),
    ("gpt-5 nano", r"^gpt-5[\w.]*-nano"),
    ("gpt-5", r"^gpt-5"),
    ("o-series pro", r"^o\d+-pro"),
    ("o-series mini", r"^o\d+-mini"),
    ("o-series", r"^o\d+(-|$)"),
    ("gpt-4.1", r"^gpt-4\.1"),
    ("gpt-4o", r"^gpt-4o"),
    ("gpt-oss", r"gpt-oss"),
    # by tier, whatever the generation: a new generation is most like the newest of its
    # tier (``claude-opus-5`` like the newest Opus, not like the 3.x models that share
    # no tier pattern and would be all a generic "claude" family held)
    ("claude opus", r"claude-opus"),
    ("claude sonnet", r"claude-sonnet"),
    ("claude haiku", r"claude-haiku"),
    ("claude", r"claude"),
    ("gemini flash-lite", r"^gemini-[\d.]+-flash-lite"),
    ("gemini flash", r"^gemini-[\d.]+-flash"),
    ("gemini pro", r"^gemini-[\d.]+-pro"),
    ("gemini", r"^gemini"),
    ("grok code", r"^grok-(code|build)"),
    ("grok", r"^grok"),
    ("magistral", r"^magistral"),
    ("devstral", r"devstral"),
    ("codestral", r"^codestral"),
    ("mistral large", r"^mistral-large"),
    ("mistral medium", r"^mistral-medium"),
    ("mistral small", r"^mistral-small"),
    ("ministral", r"^ministral"),
    ("deepseek", r"deepseek"),
    ("glm vision", r"^glm-[\d.]+v"),
    ("glm flash", r"^glm-[\d.]+-flash"),
    ("glm air", r"^glm-[\d.]+-air"),
    ("glm turbo", r"^glm-[\d.]+-turbo"),
    ("glm", r"^glm"),
    ("nova", r"^nova"),
    ("llama", r"llama"),
    ("qwen", r"qwen"),
)

_COMPILED: Final = tuple((name, re.compile(pattern)) for name, pattern in FAMILIES)
#: Bedrock: an optional region (``us.``, ``global.``) and the vendor (``anthropic.``)
_BEDROCK_PREFIX: Final = re.compile(r"^(?:[a-z]{2,6}(?:-gov)?\.)?[a-z0-9]+\.")
#: what makes another name of the same model: a date stamp, a version, ``@`` on Vertex
_SUFFIXES: Final = re.compile(r"(@.*|-\d{4}-\d{2}-\d{2}|-\d{8}|-v\d+(:\d+)?|:\d+)+$")


def core_id(provider: str, model_id: str) -> str:
    """The id without provider decorations: Bedrock's region and vendor, OpenRouter's vendor."""
    if provider == "bedrock":
        return _BEDROCK_PREFIX.sub("", model_id)
    if provider == "openrouter":
        return model_id.partition("/")[2] or model_id
    return model_id


def _same_model_key(provider: str, model_id: str) -> str:
    return _SUFFIXES.sub("", core_id(provider, model_id))


def family_of(provider: str, model_id: str) -> str | None:
    """The name of the first family whose pattern matches, or None."""
    bare = core_id(provider, model_id)
    for name, pattern in _COMPILED:
        if pattern.search(bare):
            return name
    return None


def _shared_start(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def relative(provider: str, model_id: str, known: Iterable[Model]) -> tuple[Model, str] | None:
    """The catalogued model of ``provider`` that ``model_id`` most likely is or resembles,
    and how it was chosen (``"the same model"`` or ``"family NAME"``); None if none is."""
    same_provider = [m for m in known if m.provider == provider and m.id != model_id]
    key = _same_model_key(provider, model_id)
    same = [m for m in same_provider if _same_model_key(provider, m.id) == key]
    if same:
        return max(same, key=lambda m: (m.release_date, m.id)), "the same model"
    family = family_of(provider, model_id)
    if family is None:
        return None
    members = [m for m in same_provider if family_of(provider, m.id) == family]
    if not members:
        return None
    bare = core_id(provider, model_id)
    best = max(
        members,
        # then the plainest id (gemini-3.1-pro-preview over …-preview-customtools)
        key=lambda m: (
            _shared_start(bare, core_id(provider, m.id)),
            m.release_date,
            -len(m.id),
            m.id,
        ),
    )
    return best, f"family {family}"


class Described(NamedTuple):
    """The warning for an id nobody listed, advising a program and the command line."""

    text: str
    cli_text: str


def describe(model: Model, like: Model | None, how: str, catalogue: str) -> Described:
    """The one warning for an id nobody listed: what was assumed and how to state it,
    to a program (``Model(...)`` fields) and to the command line (flags, files)."""
    if like is None:
        family = family_of(model.provider, model.id)
        which = (
            "no family is known"
            if family is None
            else f"its family ({family}) has no catalogued {model.provider} model"
        )
        assumed = (
            f"{which}, so defaults are assumed: context {model.context_window:,}, "
            f"output {model.max_output:,}, no reasoning, prices unknown (cost 0)"
        )
    else:
        flags = [
            "reasoning" if model.reasoning else "no reasoning",
            "no temperature" if model.temperature is False else "temperature",
        ]
        price = (
            f"${model.price_input:g}/${model.price_output:g} per M tokens"
            if model.price_input or model.price_output
            else "prices unknown (cost 0)"
        )
        assumed = (
            f"assumed it is like {like.id} ({how}): context {model.context_window:,}, "
            f"output {model.max_output:,}, {', '.join(flags)}, {price}"
        )
    said = f"{model.key} is not in the model catalogue ({catalogue}); {assumed}. "
    return Described(
        said
        + "State its settings with Model(...) fields (max_output, context_window, reasoning, "
        "temperature, price_input, price_output) or use a newer catalogue file "
        "(streamfn models --refresh, or STREAMFN_MODELS_FILE)",
        said
        + "If that is wrong: a newer catalogue may list it (streamfn models --refresh, or "
        "STREAMFN_MODELS_FILE=FILE); streamfn chat --max-tokens N caps the answer, and an "
        "entry in streamfn serve --config sets max_output and context_window",
    )
