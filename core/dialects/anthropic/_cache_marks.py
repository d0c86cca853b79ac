"""Prompt-cache marks in an Anthropic Messages body: ``cache_control``."""

from __future__ import annotations

from typing import Any, Final

from streamfn.core._options import Options
from streamfn.core.catalogue._model_spec import Model
from streamfn.core.content._cache_points import body_marks

__all__ = ["mark_anthropic"]

# Anthropic: cache_control on the last block of each marked part. Thinking blocks take
# no cache_control, so a turn's mark goes on its last block of another kind.
_ANTHROPIC_CACHEABLE: Final = frozenset(
    {"text", "image", "document", "tool_use", "tool_result", "search_result"}
)


def mark_anthropic(body: dict[str, Any], model: Model, options: Options) -> None:
    """Put ``cache_control`` marks into an Anthropic Messages ``body`` (in place)."""
    marks = body_marks(model, options, body, body.get("tools"), body.get("system"))
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
