"""The agent-server SSE contract as a wire format: streamfn consuming such a server.

Request: the native proxy's request (``{"model", "context", "options"}``,
bearer token) sent to ``POST {base_url}/v1/agent/stream``, which is where
`streamfn serve` speaks the contract; a ``Model.extra["path"]`` names another
route (``/agent/support/chat/stream``).

Response: the events `streamfn.core.dialects.agent_events._encode` documents. ``message_delta``
is answer text, tool calls are tool-call blocks keyed by ``tool_call_id``,
``stream_end`` is `Done` (usage from ``tokens_used``, the stop reason from the
``stop_reason`` extension when present, else ``tool_use`` after tool calls),
``error`` is an `Error`: the kind from our own problem ``type`` URIs, else
classified from the detail and the HTTP-equivalent status. A body that ends
without ``stream_end`` or ``error`` is ``Error(kind=network)``, as everywhere.
"""

from __future__ import annotations

from typing import Final

import msgspec

from streamfn.core._classify import classify_stream_error
from streamfn.core._events import Error, ErrorKind, StopReason
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects._openai_common import WireUsage, convert_usage
from streamfn.core.dialects.agent_events._encode import ERROR_TYPE_BASE
from streamfn.core.dialects.proxy._client import build_request as build_native_request
from streamfn.core.providers._base import HTTPRequest, SSECall
from streamfn.core.wire._sse import ServerSentEvent

__all__ = ["AgentEventsCall", "build_request", "open_call"]

_TEXT: Final = "message"
_KINDS: Final = {kind.value.replace("_", "-"): kind for kind in ErrorKind}


class _Payload(msgspec.Struct, gc=False):
    message_id: str | None = None
    delta: str = ""
    tool_call_id: str = ""
    name: str = ""
    args_delta: str = ""
    tokens_used: WireUsage | None = None
    stop_reason: StopReason | None = None
    # an error's problem details
    type: str = ""
    title: str = ""
    status: int | str | None = None  # an error's HTTP status; a tool call's "success"/"error"
    detail: str = ""
    retry_after: float | None = None


_decode: Final = msgspec.json.Decoder(_Payload).decode


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The native request body, at the agent route; pure."""
    native = build_native_request(model, context, options)
    base = (options.base_url or model.base_url).rstrip("/")
    path = (model.extra or {}).get("path", "/v1/agent/stream")
    return msgspec.structs.replace(native, url=base + path)


class AgentEventsCall(SSECall):
    """Decodes the agent contract's events into ours."""

    api = "agent-events"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._tool_calls = 0

    def on_event(self, sse: ServerSentEvent) -> None:
        name = sse.event
        if name not in _HANDLED:
            return  # unknown events are ignored, as SSE clients do
        payload = _decode(sse.data)
        emit = self.emit
        if name == "message_delta":
            emit.text(_TEXT, payload.delta)
        elif name == "tool_call_args":
            emit.tool_delta(payload.tool_call_id, payload.args_delta)
        elif name == "tool_call_start":
            if not payload.tool_call_id or not payload.name:
                raise ValueError("tool_call_start without tool_call_id or name")
            emit.end(_TEXT)
            emit.tool_start(payload.tool_call_id, payload.tool_call_id, payload.name)
            self._tool_calls += 1
        elif name == "tool_call_end":
            emit.end(payload.tool_call_id)
        elif name == "stream_start":
            self.response_id = payload.message_id
        elif name == "stream_end":
            if payload.tokens_used is not None:
                self.usage = convert_usage(payload.tokens_used)
            stop = payload.stop_reason
            if stop is None:
                stop = StopReason.TOOL_USE if self._tool_calls else StopReason.STOP
            self.finish(stop)
        else:
            self.fail(_error(payload))


_HANDLED: Final = frozenset(
    {
        "stream_start",
        "message_delta",
        "tool_call_start",
        "tool_call_args",
        "tool_call_end",
        "stream_end",
        "error",
    }
)


def _error(problem: _Payload) -> Error:
    detail = problem.detail or problem.title or "the agent server reported an error"
    slug = problem.type.removeprefix(ERROR_TYPE_BASE) if problem.type else ""
    if problem.type.startswith(ERROR_TYPE_BASE):
        if slug == "aborted":
            return Error.aborted(detail)
        kind = _KINDS.get(slug)
        if kind is not None:
            return Error(message=detail, kind=kind, retry_after=problem.retry_after)
    status = problem.status if isinstance(problem.status, int) else None
    return classify_stream_error(detail, status_hint=status, retry_after=problem.retry_after)


def open_call(model: Model, context: Context, options: Options) -> AgentEventsCall:
    """Build the request and the call that decodes the agent server's stream."""
    return AgentEventsCall(model, context, options, build_request(model, context, options))
