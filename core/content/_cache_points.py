"""Prompt caching a caller controls: where the breakpoints go, for every provider.

``Options.cache`` is ``"off"``, ``"auto"`` or a list of `CachePoint`:

- **Anthropic** marks blocks with ``cache_control: {type: ephemeral, ttl?}``;
  **Bedrock Converse** inserts ``cachePoint`` blocks. Both cache the prompt
  prefix up to each mark, in the order tools -> system -> messages, with at most
  4 marks per request ("You can define up to 4 cache breakpoints",
  https://docs.claude.com/en/docs/build-with-claude/prompt-caching; Bedrock:
  https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html).
  ``"auto"`` marks the tools, the system prompt and the last turn (3 marks), so
  a conversation or an agent loop reads the previous turn's prefix from the
  cache and writes the new one. Where a model has no prompt cache
  (``Capabilities.cache_breakpoints == 0``) nothing is marked, with a warning
  for explicit points.
- **OpenAI** caches every prompt over 1024 tokens by itself; ``prompt_cache_key``
  routes requests sharing a prefix to the same cache. It is
  ``Options.cache_key`` when given, else (``"auto"`` or points) a hash of the
  system prompt, the tools and the first message: deterministic, never random.
- **Gemini** caches implicitly (2.5+); there is nothing to send, and usage
  reports ``cachedContentTokenCount`` as ``cache_read`` like everywhere else.

A mark's TTL is ``5m`` (the default, not sent) or ``1h``; Anthropic requires
longer TTLs before shorter ones in prefix order, checked here with a clear error.
Usage splits cache reads from writes on every provider and `compute_cost`
prices each at the model's own rate.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .._options import CachePoint, CacheSetting, CacheTTL
from ..catalogue._capabilities import capabilities_for, unsupported

if TYPE_CHECKING:
    from .._messages import Context
    from .._options import Options
    from ..catalogue._models import Model

__all__ = [
    "AUTO_POINTS",
    "CachePoint",
    "CacheSetting",
    "CacheTTL",
    "breakpoints",
    "mark_anthropic",
    "mark_bedrock",
    "prompt_cache_key",
]

#: What ``cache="auto"`` marks (those present in the request).
AUTO_POINTS: Final = (CachePoint("tools"), CachePoint("system"), CachePoint(-1))

_ORDER: Final = {"tools": -2, "system": -1}


def breakpoints(
    model: Model, options: Options, *, has_tools: bool, has_system: bool, turns: int
) -> list[tuple[str | int, CacheTTL]]:
    """The marks to place, in prefix order, message indices made non-negative.

    Raises `ValueError` for more marks than the provider takes, a turn that does
    not exist, or a 1-hour mark after a 5-minute one.
    """
    setting = options.cache
    if setting is None or setting == "off":
        return []
    limit = capabilities_for(model).cache_breakpoints
    explicit = setting != "auto"
    points = list(AUTO_POINTS) if setting == "auto" else list(setting)
    if limit == 0:
        if explicit:
            unsupported(model, "cache", "points: this model has no prompt cache; not sent")
        return []
    placed: dict[str | int, CacheTTL] = {}
    for point in points:
        at = point.at
        if (at == "tools" and not has_tools) or (at == "system" and not has_system):
            if explicit:
                raise ValueError(f"cache: CachePoint({at!r}) but the request has no {at}")
            continue
        if isinstance(at, int):
            if not turns:
                continue
            index = at + turns if at < 0 else at
            if not 0 <= index < turns:
                raise ValueError(
                    f"cache: CachePoint({at}) is outside the {turns} turns sent; "
                    "use -1 for the last turn"
                )
            at = index
        placed[at] = "1h" if "1h" in (point.ttl, placed.get(at)) else "5m"
    if len(placed) > limit:
        raise ValueError(
            f"cache: {len(placed)} breakpoints, but {model.provider} takes at most {limit} "
            "per request; keep the ones that end the longest stable prefixes"
        )
    ordered = sorted(placed.items(), key=lambda item: _ORDER.get(str(item[0]), item[0]))
    seen_short = False
    for where, ttl in ordered:
        if ttl == "1h" and seen_short:
            raise ValueError(
                f"cache: the 1h breakpoint at {where!r} comes after a 5m one; longer TTLs must "
                "come first in the prompt (tools, system, then turns)"
            )
        seen_short = seen_short or ttl == "5m"
    return ordered


def _marks(
    model: Model, options: Options, body: dict[str, Any], tools: Any, system: Any
) -> list[tuple[str | int, CacheTTL]]:
    return breakpoints(
        model,
        options,
        has_tools=bool(tools),
        has_system=bool(system),
        turns=len(body.get("messages") or ()),
    )


# Anthropic: cache_control on the last block of each marked part. Thinking blocks take
# no cache_control, so a turn's mark goes on its last block of another kind.
_ANTHROPIC_CACHEABLE: Final = frozenset(
    {"text", "image", "document", "tool_use", "tool_result", "search_result"}
)


def mark_anthropic(body: dict[str, Any], model: Model, options: Options) -> None:
    """Put ``cache_control`` marks into an Anthropic Messages ``body`` (in place)."""
    marks = _marks(model, options, body, body.get("tools"), body.get("system"))
    for at, ttl in marks:
        control: dict[str, Any] = {"type": "ephemeral"}
        if ttl == "1h":
            control["ttl"] = "1h"
        if at == "tools":
            body["tools"][-1]["cache_control"] = control
        elif at == "system":
            system = body["system"]
            if isinstance(system, str):
                body["system"] = system = [{"type": "text", "text": system}]
            system[-1]["cache_control"] = control
        else:
            assert isinstance(at, int)
            turn = body["messages"][at]
            if isinstance(turn["content"], str):
                turn["content"] = [{"type": "text", "text": turn["content"]}]
            for block in reversed(turn["content"]):
                if block.get("type") in _ANTHROPIC_CACHEABLE:
                    block["cache_control"] = control
                    break


def mark_bedrock(body: dict[str, Any], model: Model, options: Options) -> None:
    """Insert Converse ``cachePoint`` blocks into ``body`` (in place)."""
    config = body.get("toolConfig") or {}
    marks = _marks(model, options, body, config.get("tools"), body.get("system"))
    for at, ttl in marks:
        point: dict[str, Any] = {"type": "default"}
        if ttl == "1h":
            point["ttl"] = "1h"
        if at == "tools":
            config["tools"].append({"cachePoint": point})
        elif at == "system":
            body["system"].append({"cachePoint": point})
        else:
            assert isinstance(at, int)
            body["messages"][at]["content"].append({"cachePoint": point})


def prompt_cache_key(context: Context, options: Options) -> str | None:
    """OpenAI's ``prompt_cache_key``: the caller's ``cache_key``, else (``"auto"`` or
    explicit points) a hash of what every request of a conversation starts with; None
    when caching is off or left to the provider."""
    if options.cache == "off":
        return None
    if options.cache_key is not None:
        return options.cache_key
    if options.cache is None:
        return None
    prefix = msgspec.json.encode([context.system_prompt, context.tools, context.messages[:1]])
    return "streamfn-" + hashlib.sha256(prefix).hexdigest()[:32]
