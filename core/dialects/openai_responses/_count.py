"""OpenAI's input token count: ``POST /v1/responses/input_tokens``.

The body is the Responses request without what only generation takes
(``stream``, ``store``, ``max_output_tokens``, sampling, ``include``); the answer is
``{"object": "response.input_tokens", "input_tokens": N}``.
https://platform.openai.com/docs/api-reference/responses/input-tokens (the fields kept
are those of the openai SDK's ``InputTokenCountParams``). OpenAI serves it; other
servers that speak Responses rarely do, so it applies to OpenAI's own models only.
"""

from __future__ import annotations

from typing import Any, Final

from streamfn.core._count import Counting, recast
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model
from streamfn.core.providers._request import HTTPRequest

from ._request import build_request

__all__ = ["COUNTING", "count_request", "serves_counting"]

#: the Responses fields the counting endpoint takes as well
_KEPT: Final = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "text",
        "truncation",
        "conversation",
        "previous_response_id",
    }
)
#: reasoning fields the counting endpoint's type knows (``summary`` is one of them)
_REASONING: Final = frozenset({"effort", "summary", "generate_summary"})


def serves_counting(model: Model) -> bool:
    """Whether the model's provider has the counting endpoint: OpenAI itself."""
    return model.provider == "openai"


def _trim(body: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in body.items() if k in _KEPT}
    if isinstance(kept.get("reasoning"), dict):
        kept["reasoning"] = {k: v for k, v in kept["reasoning"].items() if k in _REASONING}
    return kept


def count_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The counting request for what `build_request` would send."""
    request = build_request(model, context, options)
    return recast(request, request.url.rstrip("/") + "/input_tokens", _trim)



COUNTING: Final = Counting(
    applies=serves_counting,
    request=count_request,
    field="input_tokens",
    source="OpenAI's responses/input_tokens endpoint",
)
