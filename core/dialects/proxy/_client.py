"""The native streamfn proxy (``POST {base_url}/v1/stream``): both directions of the wire.

Request: JSON ``{"model": <name the proxy resolves>, "context": Context,
"options": {...}}`` with our own msgspec encoding; ``options`` carries only
the generation knobs a server accepts from a client (`CLIENT_FIELDS`): the
key, base URL, headers, retries, timeouts and caps reach the proxy itself
and are the server's business, never the client's. The proxy token travels
as ``Authorization: Bearer`` (none when the server needs none).

Response: SSE whose ``event:`` is our event type and whose ``data:`` is the
event's JSON (`streamfn.core.dialects.proxy._encode` writes exactly that). The events are not
trusted just because they are ours: each is checked against the event
grammar (the accumulator's, so there is one definition of the rules) and
then re-emitted through the `Emitter`, so a proxy that sends garbage ends in
``Error(kind=protocol)`` rather than an impossible stream. The proxy's Done and Error pass through with their own
usage, cost and kind (the proxy priced the call; our proxy model has no prices).
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec

from streamfn.core._events import (
    EVENT_TYPES,
    Done,
    OpaqueBlock,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    decode_event_json,
    event_type,
)
from streamfn.core._messages import Context
from streamfn.core._options import Options, client_fields
from streamfn.core._protocol import Grammar
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects.proxy._encode import encode_proxy_event, encode_proxy_events
from streamfn.core.providers._base import (
    HTTPRequest,
    SSECall,
    api_root,
    bearer,
    json_request,
    request_headers,
)
from streamfn.core.wire._sse import ServerSentEvent

__all__ = [
    "ProxyCall",
    "build_request",
    "encode_proxy_event",
    "encode_proxy_events",
    "open_call",
]

log = logging.getLogger("streamfn")

_JSON: Final = msgspec.json.Encoder()

# ---------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The request to the proxy; pure. ``model.id`` is the name the proxy serves."""
    body: dict[str, Any] = {
        "model": model.id,
        "context": context,
        "options": client_fields(options),
    }
    headers = request_headers(
        model, options, accept="text/event-stream", auth=bearer(options.api_key)
    )
    base = (options.base_url or model.base_url).rstrip("/")
    # options.extra_body is not sent: a streamfn server takes only CLIENT_FIELDS in
    # "options" (extra_body would reach its upstream, so it is a 400 there), and this
    # envelope is no provider's body to merge it into; hence Options() below
    return json_request(f"{api_root(base, '/v1')}/stream", headers, body, Options())


# ---------------------------------------------------------------------------
# Response
# ---------------------------------------------------------------------------


class ProxyCall(SSECall):
    """Decodes a streamfn proxy's event stream, checking it obeys the protocol."""

    api = "proxy"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        # The one implementation of the event grammar (shared with the fold);
        # a violation raises ProtocolViolation, which the base turns into
        # Error(kind=protocol).
        self._grammar = Grammar()

    def on_event(self, sse: ServerSentEvent) -> None:
        if sse.event not in EVENT_TYPES:
            log.debug("proxy: ignoring SSE event type %r", sse.event)
            return
        event = decode_event_json(sse.data)
        if event_type(event) != sse.event:
            raise ValueError(f"event {sse.event!r} carries a {event_type(event)!r} payload")
        self._grammar.check(event)
        emit = self.emit
        # Deltas first: they are nearly every event of a stream.
        if isinstance(event, TextDelta):
            emit.text(event.index, event.delta)
        elif isinstance(event, ThinkingDelta):
            emit.thinking(event.index, event.delta)
        elif isinstance(event, ToolCallDelta):
            emit.tool_delta(event.index, event.delta)
        elif isinstance(event, Start):
            self.response_id = event.response_id  # ours went out already, on the 200
            self.response_model = event.response_model
        elif isinstance(event, TextStart):
            emit.text(event.index, "")
        elif isinstance(event, ThinkingStart):
            emit.thinking(event.index, "")
        elif isinstance(event, ToolCallStart):
            emit.tool_start(event.index, event.id, event.name)
        elif isinstance(event, ThinkingEnd):
            emit.end(event.index, signature=event.signature, redacted=event.redacted)
        elif isinstance(event, (TextEnd, ToolCallEnd)):
            emit.end(event.index, signature=event.signature)
        elif isinstance(event, OpaqueBlock):
            emit.opaque(event.provider, event.block_type, event.json)
        elif isinstance(event, Done):
            self.usage = event.usage
            emit.done(event.stop_reason, event.usage, event.cost, paused=event.paused is True)
        else:
            emit.error(event)


def open_call(model: Model, context: Context, options: Options) -> ProxyCall:
    """Build the request and the call that decodes the proxy's stream."""
    return ProxyCall(model, context, options, build_request(model, context, options))
