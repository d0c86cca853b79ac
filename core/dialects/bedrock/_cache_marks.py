"""Prompt-cache marks in a Converse body: ``cachePoint`` blocks."""

from __future__ import annotations

from typing import Any

from streamfn.core._options import Options
from streamfn.core.catalogue._model_spec import Model
from streamfn.core.content._cache_points import body_marks

__all__ = ["mark_bedrock"]


def mark_bedrock(body: dict[str, Any], model: Model, options: Options) -> None:
    """Insert Converse ``cachePoint`` blocks into ``body`` (in place)."""
    config = body.get("toolConfig") or {}
    marks = body_marks(model, options, body, config.get("tools"), body.get("system"))
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
