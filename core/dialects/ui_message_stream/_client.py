"""The Vercel AI SDK UI message stream as a wire format: streamfn consuming such a server.

Request: the body ``useChat``'s transport posts (``id``, ``messages`` as UI
messages with ``parts``, ``trigger: submit-message``), plus ``model`` and,
when set, ``system``, ``temperature``, ``maxOutputTokens`` and ``tools``
(what `streamfn serve` reads on ``POST /v1/ui/chat``; other servers ignore
fields they do not know), sent to ``{base_url}/v1/ui/chat`` or the route
``Model.extra["path"]`` names (``/api/chat`` for a Next.js app).
``Options.extra_body`` is merged into the body (a server's own fields).

Response: the parts `streamfn.core.dialects.ui_message_stream._encode` documents. Text and
reasoning parts are blocks keyed by their ``id``, tool input parts are tool
calls keyed by ``toolCallId`` (a call that arrives only as
``tool-input-available`` is one block with its whole input); tool output
parts (tools the server ran itself) are carried as opaque blocks; ``finish``
is `Done` with the stop reason its ``finishReason`` names (``content-filter``
and ``error`` are Errors: a cut answer is never a success); ``error`` is an
`Error` classified from its text; ``abort`` an aborted one. A body that
ends before ``finish`` is ``Error(kind=network)``, as everywhere. The
protocol carries no token usage.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec

from streamfn.core._classify import classify_stream_error
from streamfn.core._events import Error, ErrorKind, StopReason
from streamfn.core._messages import (
    AssistantMessage,
    Context,
    DocumentContent,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects.ui_message_stream._tables import FINISH_REASONS_READ
from streamfn.core.providers._base import HTTPRequest, SSECall
from streamfn.core.providers._request import route_request
from streamfn.core.wire._sse import ServerSentEvent

__all__ = ["UIMessageStreamCall", "build_request", "open_call", "ui_messages"]

_json: Final = msgspec.json.Encoder()


class _Part(msgspec.Struct, gc=False):
    type: str
    id: str = ""
    delta: str = ""
    messageId: str | None = None
    toolCallId: str = ""
    toolName: str = ""
    inputTextDelta: str = ""
    input: msgspec.Raw = msgspec.Raw()  # empty when absent
    errorText: str = ""
    finishReason: str | None = None
    reason: str | None = None


log = logging.getLogger("streamfn")

_decode: Final = msgspec.json.Decoder(_Part).decode


def _media_part(part: ImageContent | DocumentContent) -> dict[str, Any]:
    url = part.url if part.url is not None else f"data:{part.mime_type};base64,{part.data}"
    file: dict[str, Any] = {"type": "file", "mediaType": part.mime_type, "url": url}
    title = getattr(part, "title", None)
    if title:
        file["filename"] = title
    return file


def _user_parts(content: str | list[UserContent]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextContent):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, (ImageContent, DocumentContent)):
            parts.append(_media_part(part))
    return parts


def _result_text(result: ToolResultMessage) -> str:
    return "".join(p.text for p in result.content if isinstance(p, TextContent))


def ui_messages(context: Context) -> list[dict[str, Any]]:
    """``context``'s turns as UI messages (ids ``m0``, ``m1`` ...): each tool result
    joins its call's part (``output-available``, or ``output-error``)."""
    out: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for number, message in enumerate(context.messages):
        if isinstance(message, UserMessage):
            out.append({"id": f"m{number}", "role": "user", "parts": _user_parts(message.content)})
        elif isinstance(message, AssistantMessage):
            parts: list[dict[str, Any]] = [{"type": "step-start"}]
            for block in message.content:
                if isinstance(block, TextContent):
                    parts.append({"type": "text", "text": block.text, "state": "done"})
                elif isinstance(block, ThinkingContent) and not block.redacted:
                    parts.append({"type": "reasoning", "text": block.thinking, "state": "done"})
                elif isinstance(block, ToolCall):
                    part: dict[str, Any] = {
                        "type": f"tool-{block.name}",
                        "toolCallId": block.id,
                        "state": "input-available",
                        "input": block.arguments,
                    }
                    calls[block.id] = part
                    parts.append(part)
            out.append({"id": f"m{number}", "role": "assistant", "parts": parts})
        else:
            answered = calls.get(message.tool_call_id)
            if answered is None:
                raise ValueError(
                    f"tool result {message.tool_call_id!r} answers no tool call of an earlier "
                    "assistant message; a UI message carries a result only on its call"
                )
            if message.is_error:
                answered.update(state="output-error", errorText=_result_text(message))
            else:
                answered.update(state="output-available", output=_result_text(message))
    return out


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The chat transport's body for ``context``; pure."""
    body: dict[str, Any] = {
        "id": "streamfn",
        "messages": ui_messages(context),
        "trigger": "submit-message",
        "model": model.id,
    }
    if context.system_prompt:
        body["system"] = context.system_prompt
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["maxOutputTokens"] = options.max_tokens
    tools = context.function_tools
    if tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "inputSchema": t.parameters}
            for t in tools
        ]
    return route_request(model, options, "/v1/ui/chat", body)


class UIMessageStreamCall(SSECall):
    """Decodes UI message stream parts into our events."""

    api = "ui-message-stream"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._argued: set[str] = set()  # calls whose input came as deltas

    def on_event(self, sse: ServerSentEvent) -> None:
        if sse.data == "[DONE]":
            return
        part = _decode(sse.data)
        kind = part.type
        emit = self.emit
        if kind == "text-delta":
            emit.text(("text", part.id), part.delta)
        elif kind == "reasoning-delta":
            emit.thinking(("reasoning", part.id), part.delta)
        elif kind == "tool-input-delta":
            self._argued.add(part.toolCallId)
            emit.tool_delta(("tool", part.toolCallId), part.inputTextDelta)
        elif kind == "text-start":
            emit.text(("text", part.id), "")
        elif kind == "reasoning-start":
            emit.thinking(("reasoning", part.id), "")
        elif kind in ("text-end", "reasoning-end"):
            emit.end((kind[:-4], part.id))
        elif kind == "tool-input-start":
            self._start_call(part)
        elif kind in ("tool-input-available", "tool-input-error"):
            self._whole_call(part)
        elif kind.startswith("tool-output-"):
            emit.opaque("ui-message-stream", kind, sse.data)
        elif kind == "start":
            self.response_id = part.messageId
        else:
            self._end_event(part)

    def _start_call(self, part: _Part) -> None:
        if not part.toolCallId or not part.toolName:
            raise ValueError(f"{part.type} without toolCallId or toolName")
        self.emit.tool_start(("tool", part.toolCallId), part.toolCallId, part.toolName)

    def _whole_call(self, part: _Part) -> None:
        """A call's input is complete: the call ends (opened with its whole input first
        when no ``tool-input-start`` came)."""
        key = ("tool", part.toolCallId)
        if not self.emit.is_open(key):
            self._start_call(part)
            raw = part.input
            if raw and part.toolCallId not in self._argued:
                text = bytes(raw).decode()
                if part.type == "tool-input-error" and text.startswith('"'):
                    text = msgspec.json.decode(text)  # the raw text, as a JSON string
                self.emit.tool_delta(key, text)
        self.emit.end(key)

    def _end_event(self, part: _Part) -> None:
        kind = part.type
        if kind == "finish":
            reason = part.finishReason
            if reason == "content-filter":
                self.fail(
                    Error(message="the server's answer was filtered", kind=ErrorKind.CONTENT_FILTER)
                )
            elif reason == "error":
                self.fail(classify_stream_error("the server's answer ended in an error"))
            else:
                stop = FINISH_REASONS_READ.get(reason or "")
                if stop is None:
                    stop = StopReason.TOOL_USE if self.emit.tool_calls else StopReason.STOP
                    log.warning(
                        "the UI message stream finished with finishReason %r, which does not "
                        "say how the answer ended; read as %r (it may have been cut)",
                        reason,
                        stop.value,
                    )
                self.finish(stop)
        elif kind == "error":
            self.fail(
                classify_stream_error(part.errorText or "the UI message stream reported an error")
            )
        elif kind == "abort":
            self.fail(Error.aborted(part.reason or "the server aborted the answer"))
        # start-step, finish-step, sources, files, data and metadata parts: not ours


def open_call(model: Model, context: Context, options: Options) -> UIMessageStreamCall:
    """Build the request and the call that decodes the server's UI message stream."""
    return UIMessageStreamCall(model, context, options, build_request(model, context, options))
