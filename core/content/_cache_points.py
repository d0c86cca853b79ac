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

Each format's room writes the marks into its own body (`body_marks` says where);
this module decides where they go. A mark's TTL is ``5m`` (the default, not
sent) or ``1h``; Anthropic requires
longer TTLs before shorter ones in prefix order, checked here with a clear error.
Usage splits cache reads from writes on every provider and `compute_cost`
prices each at the model's own rate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from .._options import CachePoint, CacheSetting, CacheTTL
from ..catalogue._capabilities import capabilities_for, unsupported

if TYPE_CHECKING:
    from .._options import Options
    from ..catalogue._models import Model

__all__ = [
    "AUTO_POINTS",
    "CachePoint",
    "CacheSetting",
    "CacheTTL",
    "body_marks",
    "breakpoints",
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


def body_marks(
    model: Model, options: Options, body: dict[str, Any], tools: Any, system: Any
) -> list[tuple[str | int, CacheTTL]]:
    """Where ``body`` (with its ``messages``) gets a cache mark, and its TTL."""
    return breakpoints(
        model,
        options,
        has_tools=bool(tools),
        has_system=bool(system),
        turns=len(body.get("messages") or ()),
    )
