"""The AG-UI event protocol as a wire format: streamfn consuming an AG-UI agent server.

Request: a ``RunAgentInput`` (``threadId``, ``runId``, ``messages``, ``tools``,
``context``, ``state``, ``forwardedProps`` with ``model``), sent to
``{base_url}/v1/agui`` (where `streamfn serve` speaks it) or the route
``Model.extra["path"]`` names. The core draws no random ids: ``threadId``
and ``runId`` are ``"streamfn"`` unless ``Options.extra_body`` gives them
(it is merged into the body, with ``state`` and ``forwardedProps``).
Messages: the system prompt is a ``system`` message, user content a string
or text / image / document parts, assistant turns carry ``toolCalls``, tool
results are ``tool`` messages (``error`` set on a failed one).

Response: the events `streamfn.core.dialects.agui._encode` documents, and their
``*_CHUNK`` shorthands. Text and reasoning messages are blocks keyed by
``messageId`` (a ``REASONING_ENCRYPTED_VALUE`` for a message becomes its
signature), tool calls keyed by ``toolCallId``; ``TOOL_CALL_RESULT`` (a tool
the agent ran itself) is carried as an opaque block. ``RUN_FINISHED`` is
`Done`: usage summed over its ``usage`` entries, the stop reason from
``metadata.stopReason`` when present (``error`` or ``aborted`` there is an
`Error`: a cut answer is never a success), else ``tool_use`` after tool calls;
a ``cancelled`` outcome is an aborted `Error` and an ``interrupt`` one an
Error naming it (the agent waits for input this library cannot give).
``RUN_ERROR`` is an `Error` whose ``code``, when it names one of our kinds,
is its kind, else classified from the message; codes ``length`` and ``paused``
(what `streamfn serve` says for an incomplete answer) are a `Done`, with stop
reason ``length`` or ``Done.paused`` set. A body that ends before
either is ``Error(kind=network)``, as everywhere.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from streamfn.core._classify import classify_stream_error
from streamfn.core._events import Error, ErrorKind, StopReason, Usage
from streamfn.core._messages import (
    AssistantMessage,
    Context,
    DocumentContent,
    ImageContent,
    TextContent,
    ToolCall,
    UserContent,
    UserMessage,
)
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model
from streamfn.core.providers._base import HTTPRequest, SSECall
from streamfn.core.providers._request import route_request
from streamfn.core.wire._sse import ServerSentEvent

__all__ = ["AGUICall", "agui_messages", "build_request", "open_call"]

_KINDS: Final = {kind.value: kind for kind in ErrorKind}
_STOPS: Final = {stop.value: stop for stop in StopReason}
#: the ``RUN_ERROR`` codes `streamfn serve` gives an answer that is incomplete, not
#: broken: one stopped at its token limit, a turn the provider paused
_INCOMPLETE: Final = frozenset({"length", "paused"})


class _Usage(msgspec.Struct, gc=False):
    inputTokens: int = 0
    outputTokens: int = 0
    reasoningTokens: int = 0
    cachedInputTokens: int = 0
    cacheWriteInputTokens: int = 0


class _Outcome(msgspec.Struct, gc=False):
    type: str = "success"
    pendingToolCallIds: list[str] = []


class _Event(msgspec.Struct, gc=False):
    type: str
    messageId: str | None = None
    delta: str | None = None
    toolCallId: str | None = None
    toolCallName: str | None = None
    runId: str | None = None
    subtype: str = ""
    entityId: str = ""
    encryptedValue: str = ""
    outcome: _Outcome | None = None
    usage: list[_Usage] | None = None
    metadata: dict[str, Any] | None = None
    message: str = ""
    code: str | None = None


_decode: Final = msgspec.json.Decoder(_Event).decode


def _parts(content: str | list[UserContent]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextContent):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, (ImageContent, DocumentContent)):
            kind = "image" if isinstance(part, ImageContent) else "document"
            if part.url is not None:
                source: dict[str, Any] = {"type": "url", "value": part.url}
                if part.mime_type:
                    source["mimeType"] = part.mime_type
            else:
                source = {"type": "data", "value": part.data, "mimeType": part.mime_type}
            parts.append({"type": kind, "source": source})
    return parts


def agui_messages(context: Context) -> list[dict[str, Any]]:
    """``context`` as AG-UI messages (ids ``m0``, ``m1`` ..., the system prompt ``system``)."""
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"id": "system", "role": "system", "content": context.system_prompt})
    for number, message in enumerate(context.messages):
        mid = f"m{number}"
        if isinstance(message, UserMessage):
            out.append({"id": mid, "role": "user", "content": _parts(message.content)})
        elif isinstance(message, AssistantMessage):
            text = "".join(b.text for b in message.content if isinstance(b, TextContent))
            turn: dict[str, Any] = {"id": mid, "role": "assistant"}
            if text:
                turn["content"] = text
            calls = [
                {
                    "id": b.id,
                    "type": "function",
                    "function": {
                        "name": b.name,
                        "arguments": b.arguments_json or msgspec.json.encode(b.arguments).decode(),
                    },
                }
                for b in message.content
                if isinstance(b, ToolCall)
            ]
            if calls:
                turn["toolCalls"] = calls
            out.append(turn)
        else:
            result: dict[str, Any] = {
                "id": mid,
                "role": "tool",
                "toolCallId": message.tool_call_id,
                "content": _parts(message.content),
            }
            if message.is_error:
                result["error"] = (
                    "".join(p.text for p in message.content if isinstance(p, TextContent))
                    or "failed"
                )
            out.append(result)
    return out


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The ``RunAgentInput`` for ``context``; pure."""
    body: dict[str, Any] = {
        "threadId": "streamfn",
        "runId": "streamfn",
        "messages": agui_messages(context),
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in context.function_tools
        ],
        "context": [],
        "state": {},
        "forwardedProps": {"model": model.id},
    }
    return route_request(model, options, "/v1/agui", body)


class AGUICall(SSECall):
    """Decodes AG-UI events into ours."""

    api = "agui"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._text: str | None = None  # the text message a field-less chunk continues
        self._reasoning: str | None = None
        self._call: str | None = None

    def on_event(self, sse: ServerSentEvent) -> None:
        event = _decode(sse.data)
        kind = event.type
        emit = self.emit
        if kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CHUNK"):
            self._text = event.messageId or self._text
            emit.text(("text", self._text), event.delta or "")
        elif kind in (
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CHUNK",
        ):
            self._reasoning = event.messageId or self._reasoning
            emit.thinking(("reasoning", self._reasoning), event.delta or "")
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_START", "TOOL_CALL_CHUNK"):
            self._tool(event)
        elif kind == "TEXT_MESSAGE_END":
            emit.end(("text", event.messageId))
        elif kind == "REASONING_MESSAGE_END":
            emit.end(("reasoning", event.messageId))
        elif kind == "TOOL_CALL_END":
            emit.end(("tool", event.toolCallId))
        elif kind == "REASONING_ENCRYPTED_VALUE" and event.subtype == "message":
            emit.sign(("reasoning", event.entityId), event.encryptedValue)
        elif kind == "TOOL_CALL_RESULT":
            emit.opaque("agui", kind, sse.data)
        elif kind == "RUN_STARTED":
            self.response_id = event.runId
        elif kind == "RUN_FINISHED":
            self._finished(event)
        elif kind == "RUN_ERROR" and event.code in _INCOMPLETE:
            # our server's word for an incomplete answer (AG-UI has no finish reason)
            if event.code == "paused":  # as Anthropic's pause_turn reads
                self.finish(StopReason.STOP, paused=True)
            else:
                self.finish(StopReason.LENGTH)
        elif kind == "RUN_ERROR":
            self.fail(self._error(event))
        # state, steps, activity, custom and raw events: the application's, not ours

    def _tool(self, event: _Event) -> None:
        call = event.toolCallId or self._call
        key = ("tool", call)
        if event.type != "TOOL_CALL_ARGS" and not self.emit.is_open(key):
            if not call or not event.toolCallName:
                raise ValueError(
                    f"{event.type} opens a tool call without toolCallId or toolCallName"
                )
            self.emit.tool_start(key, call, event.toolCallName)
            self._call = call
        if event.delta:
            self.emit.tool_delta(key, event.delta)

    def _finished(self, event: _Event) -> None:
        entries = event.usage or []
        if entries:
            cached = sum(e.cachedInputTokens for e in entries)
            written = sum(e.cacheWriteInputTokens for e in entries)
            self.usage = Usage(
                input=max(0, sum(e.inputTokens for e in entries) - cached - written),
                cache_read=cached,
                cache_write=written,
                output=sum(e.outputTokens for e in entries),
                reasoning=sum(e.reasoningTokens for e in entries),
            )
        outcome = event.outcome or _Outcome()
        if outcome.type == "cancelled":
            self.fail(Error.aborted("the agent run was cancelled"))
            return
        if outcome.type == "interrupt":
            self.fail(
                Error.invalid_request(
                    "the agent run paused for an interrupt, which this client cannot answer"
                )
            )
            return
        stop = _STOPS.get(str((event.metadata or {}).get("stopReason")))
        if stop in (StopReason.ERROR, StopReason.ABORTED):  # a cut answer is no success
            self.fail(
                Error.network(f"the agent run finished with stop reason {stop.value!r}")
                if stop == StopReason.ERROR
                else Error.aborted("the agent run finished with stop reason 'aborted'")
            )
            return
        if stop is None:
            stop = (
                StopReason.TOOL_USE
                if self.emit.tool_calls or outcome.pendingToolCallIds
                else StopReason.STOP
            )
        self.finish(stop)

    @staticmethod
    def _error(event: _Event) -> Error:
        message = event.message or "the agent run failed"
        kind = _KINDS.get(event.code or "")
        if kind is not None:
            return Error(message=message, kind=kind)
        return classify_stream_error(message, code=event.code)


def open_call(model: Model, context: Context, options: Options) -> AGUICall:
    """Build the request and the call that decodes the agent server's events."""
    return AGUICall(model, context, options, build_request(model, context, options))
