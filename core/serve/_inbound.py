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

Images and documents may come as base64 or as ``http(s)`` URLs. The server
never fetches a URL itself; the upstream would, and an upstream on the
operator's network would fetch intranet addresses for the client, so URLs
are off unless the operator allows them, and then never loopback, private,
link-local or provider-file hosts (`client_inputs`). Other schemes
(``gs://``, ``file://``) and provider file ids are 400s, since they would be
read with the server's credentials. Server tools (web search, code
execution) are billed to the server's key: a request carrying one is a 400
naming it unless the operator allowed that type (``allow_server_tools``),
and its config may hold only the keys `client_inputs` lists. Provider-native
(opaque) blocks are a 400, but for the web-search blocks the server itself
streamed to the client, which come back checked key by key (`replayed_search`).

This module parses streamfn's native format and is the public entry point;
each dialect has its own module (`inbound_openai`, `inbound_anthropic`) and
the checks they share live in `request_fields`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from streamfn.core.dialects.anthropic import parse_anthropic_request
from streamfn.core.dialects.openai_chat import parse_openai_request

from .._messages import (
    AssistantMessage,
    Context,
    DocumentContent,
    ImageContent,
    OpaqueContent,
    ToolResultMessage,
    UserMessage,
)
from .._options import CLIENT_FIELDS, Options
from ..dialects._replayed_search import replayable, replayed_search_block
from ..dialects._request_fields import (
    MAX_DEPTH,
    MAX_URL_CHARS,
    BadRequest,
    ClientRequest,
    check_fields,
    check_ranges,
    client_url,
    decode_body,
    refuse_server_tools,
    response_schema,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_URL_CHARS",
    "BadRequest",
    "ClientRequest",
    "decode_body",
    "parse_anthropic_request",
    "parse_native_request",
    "parse_openai_request",
    "refuse_server_tools",
]


class _NativeRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: str
    context: Context
    options: dict[str, Any] = msgspec.field(default_factory=dict)


def parse_native_request(
    body: bytes, *, allow_server_tools: frozenset[str] = frozenset()
) -> ClientRequest:
    """``{"model", "context", "options"}``; ``options`` may hold only `CLIENT_FIELDS`.

    A tool without a ``kind`` is a function (the format before server tools)."""
    obj = decode_body(body)
    context = obj.get("context")
    if isinstance(context, dict) and isinstance(tools := context.get("tools"), list):
        context["tools"] = [
            {"kind": "function", **t} if isinstance(t, dict) and "kind" not in t else t
            for t in tools
        ]
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
    if isinstance(options.cache, list):
        raise BadRequest(
            'options.cache: explicit cache points are the server\'s choice; send "auto"'
        )
    if options.response_schema is not None:
        response_schema(options.response_schema, "options.response_schema")
    _check_opaque(request.context, allow_server_tools)
    _refuse_foreign_urls(request.context)
    return refuse_server_tools(
        ClientRequest(model=request.model, context=request.context, options=options, stream=True),
        allow_server_tools,
    )


def _refuse_foreign_urls(context: Context) -> None:
    """Native clients send our own types: their image and document URLs follow the same
    rule as the dialects' (http(s) only, passed to the provider, never fetched here)."""
    for number, message in enumerate(context.messages):
        parts = message.content if isinstance(message, (UserMessage, ToolResultMessage)) else []
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, (ImageContent, DocumentContent)) and part.url is not None:
                client_url(part.url, f"context.messages[{number}]")


def _check_opaque(context: Context, allowed: frozenset[str]) -> None:
    """A client may not send provider-native blocks: the server would forward them with
    its own credentials (a ``gs://`` file, another user's ``file_id``, a cache TTL the
    operator pays for). The one exception is the Anthropic web-search blocks the server
    streamed to the client, checked (and replaced by their checked form) exactly as on
    the Anthropic route (`replayed_search`)."""
    for number, message in enumerate(context.messages):
        if not isinstance(message, AssistantMessage):
            continue
        searches: set[str] = set()
        for j, block in enumerate(message.content):
            if not isinstance(block, OpaqueContent):
                continue
            raw = replayable(block)
            if raw is None:
                raise BadRequest(
                    f"context.messages[{number}]: opaque {block.block_type!r} blocks are "
                    "not accepted by this server (they would act with its credentials); "
                    "leave them out of the conversation"
                )
            where = f"context.messages[{number}].content[{j}]"
            message.content[j] = replayed_search_block(raw, where, searches, allowed)
