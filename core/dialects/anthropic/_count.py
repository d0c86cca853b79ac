"""Anthropic's token counting endpoint: ``POST /v1/messages/count_tokens``.

The body is the Messages request without what only generation takes (``max_tokens``,
``stream``, sampling, stop sequences); the answer is ``{"input_tokens": N}``.
https://docs.anthropic.com/en/api/messages-count-tokens (the fields kept are those of
the anthropic SDK's ``MessageCountTokensParams``).
"""

from __future__ import annotations

from typing import Final

from streamfn.core._count import Counting, recast
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model
from streamfn.core.providers._request import HTTPRequest

from ._request import build_request

__all__ = ["COUNTING"]

#: the Messages fields the counting endpoint takes as well
_KEPT: Final = frozenset(
    {
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "cache_control",
        "speed",
    }
)


def count_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The counting request for what `build_request` would send."""
    request = build_request(model, context, options)
    url = request.url.rstrip("/") + "/count_tokens"
    return recast(request, url, lambda body: {k: v for k, v in body.items() if k in _KEPT})



COUNTING: Final = Counting(
    applies=lambda model: True,
    request=count_request,
    field="input_tokens",
    source="Anthropic's count_tokens endpoint",
)
