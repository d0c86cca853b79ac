"""Bedrock's token counting: the ``CountTokens`` operation,
``POST /model/{modelId}/count-tokens``.

The Converse request's messages, system prompt, tool configuration and model fields go
in ``input.converse``; the answer's ``inputTokens`` is the count. The request is
signed like a Converse request (SigV4, at the moment of sending) or carries a Bedrock
API key. Shapes: botocore's ``bedrock-runtime`` service model (``CountTokensRequest``,
``ConverseTokensRequest``, ``CountTokensResponse``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from streamfn.core._count import Counting, recast
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model
from streamfn.core.providers._request import HTTPRequest

from ._request import build_request, region_of, sign, sigv4_credentials

__all__ = ["COUNTING"]

#: what ``ConverseTokensRequest`` takes of a Converse request
_KEPT: Final = frozenset({"messages", "system", "toolConfig", "additionalModelRequestFields"})


def count_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The (unsigned) counting request for what `build_request` would send."""
    request = build_request(model, context, options)
    url = request.url.removesuffix("/converse-stream") + "/count-tokens"
    return recast(
        request,
        url,
        lambda body: {"input": {"converse": {k: v for k, v in body.items() if k in _KEPT}}},
    )


def _sign(request: HTTPRequest, model: Model, options: Options, at: datetime) -> HTTPRequest:
    credentials = sigv4_credentials(options)
    if credentials is None:  # a Bedrock API key, already in the headers
        return request
    return sign(request, credentials, at, region=region_of(model, options))



COUNTING: Final = Counting(
    applies=lambda model: True,
    request=count_request,
    field="inputTokens",
    source="Bedrock's CountTokens operation",
    sign=_sign,
)
