"""Client requests in OpenAI or Anthropic dialect -> our `Context` and `Options`.

The inverse of the request builders, used by `streamfn serve`: whatever a
client speaks, the server sees one `Context`. Malformed requests raise
`BadRequest` with a message that names the offending field, which the
server returns as a 400 in the client's own error shape.

This is the server's trust boundary on the body: a client chooses what to
generate (`CLIENT_FIELDS`: sampling, length, stops, tools, thinking), never
where the request goes or how often it is sent. A top-level field outside a
dialect's list is a 400 naming it, not silently dropped, so a client that
tries ``base_url`` or ``max_attempts`` learns at once that it cannot.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..messages import AssistantMessage, Context, OpaqueContent
from ..options import CLIENT_FIELDS, Options
from .inbound_anthropic import parse_anthropic_request
from .inbound_openai import parse_openai_request
from .request_fields import (
    MAX_DEPTH,
    BadRequest,
    ClientRequest,
    check_fields,
    check_ranges,
    decode_body,
)

__all__ = [
    "MAX_DEPTH",
    "BadRequest",
    "ClientRequest",
    "decode_body",
    "parse_anthropic_request",
    "parse_native_request",
    "parse_openai_request",
]

# -- streamfn's native proxy format --------------------------------------------------


class _NativeRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: str
    context: Context
    options: dict[str, Any] = msgspec.field(default_factory=dict)


def parse_native_request(body: bytes) -> ClientRequest:
    """``{"model", "context", "options"}``; ``options`` may hold only `CLIENT_FIELDS`."""
    obj = decode_body(body)
    try:
        request = msgspec.convert(obj, _NativeRequest)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"native request: {exc}") from None
    check_fields(request.options, frozenset(CLIENT_FIELDS), frozenset(), "options")
    try:
        options = msgspec.convert(request.options, Options)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"options: {exc}") from None
    check_ranges(options, "options", {})
    _refuse_opaque(request.context)
    return ClientRequest(model=request.model, context=request.context, options=options, stream=True)


def _refuse_opaque(context: Context) -> None:
    """A client may not send provider-native blocks: the server would forward them with
    its own credentials (a ``gs://`` file, another user's ``file_id``, a cache TTL the
    operator pays for). Server-tool results replay to a provider the client holds a
    key for, not through a gateway."""
    for number, message in enumerate(context.messages):
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, OpaqueContent):
                    raise BadRequest(
                        f"context.messages[{number}]: opaque {block.block_type!r} blocks are "
                        "not accepted by this server (they would act with its credentials); "
                        "leave them out of the conversation"
                    )
