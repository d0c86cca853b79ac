"""Gemini's token counting: ``POST .../models/{model}:countTokens``.

The whole generation request goes in ``generateContentRequest`` (with ``model`` as
``models/{id}``), so the count covers the system instruction and the tools too; the
answer's ``totalTokens`` is the count.
https://ai.google.dev/api/tokens#method:-models.counttokens (Gemini API);
https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/count-tokens
(Vertex AI takes the request's fields at the top level of the body).
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

#: what Vertex AI's countTokens takes of a generation request
_VERTEX_KEPT: Final = frozenset({"contents", "systemInstruction", "tools", "generationConfig"})


def count_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The counting request for what `build_request` would send."""
    request = build_request(model, context, options)
    path, _, _query = request.url.partition("?")
    url = path.replace(":streamGenerateContent", ":countTokens")
    if model.provider == "vertex":
        return recast(
            request, url, lambda body: {k: v for k, v in body.items() if k in _VERTEX_KEPT}
        )
    return recast(
        request,
        url,
        lambda body: {"generateContentRequest": {"model": f"models/{model.id}", **body}},
    )



COUNTING: Final = Counting(
    applies=lambda model: True,
    request=count_request,
    field="totalTokens",
    source="Gemini's countTokens endpoint",
)
