"""AWS Bedrock ConverseStream: the event-stream state machine (the request is `bedrock_request`).

The body is ``application/vnd.amazon.eventstream``: binary frames whose
``:message-type`` header is ``event`` (``:event-type`` messageStart,
contentBlockStart, contentBlockDelta, contentBlockStop, messageStop,
metadata) or ``exception`` (``:exception-type`` throttlingException ...). The
stream is over when both messageStop and metadata have arrived (or at end of
body after messageStop). Frames of InvokeModelWithResponseStream (``chunk``
events carrying base64 ``bytes``) are unwrapped too: for models whose native
stream is Converse-shaped (Amazon Nova) they decode the same way.

Credentials (`AWSCredentials` for SigV4, or a Bedrock API key) and signing
are described in `streamfn.core.dialects.bedrock._request`.
"""

from __future__ import annotations

import base64
import logging
from datetime import datetime
from typing import Any, Final

import msgspec

from streamfn.core._classify import classify_stream_error
from streamfn.core._events import Error, StopReason, Usage
from streamfn.core._messages import Context
from streamfn.core._options import AWSCredentials, Options
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects.bedrock._request import (
    EVENTSTREAM,
    build_request,
    format_aws_key,
    parse_aws_key,
    region_of,
    sign,
    sigv4_credentials,
)
from streamfn.core.dialects.bedrock._tables import EXCEPTION_STATUS, STOP_REASONS_READ
from streamfn.core.json._structured import ANSWER_TOOL, answers_with_tool
from streamfn.core.providers._base import FramedCall, HTTPRequest
from streamfn.core.wire._decoder import Decoder
from streamfn.core.wire._eventstream import EventStreamDecoder, EventStreamMessage

__all__ = [
    "AWSCredentials",
    "BedrockCall",
    "build_request",
    "format_aws_key",
    "open_call",
    "parse_aws_key",
    "region_of",
    "sign",
    "sigv4_credentials",
]

log = logging.getLogger("streamfn")

_JSON: Final = msgspec.json.Encoder()


class _ToolStart(msgspec.Struct, gc=False):
    toolUseId: str
    name: str
    type: str | None = None


class _ToolResultStart(msgspec.Struct, gc=False):
    toolUseId: str | None = None
    status: str | None = None
    type: str | None = None


class _Start(msgspec.Struct, gc=False):
    toolUse: _ToolStart | None = None
    toolResult: _ToolResultStart | None = None


class _ToolDelta(msgspec.Struct, gc=False):
    input: str = ""


class _Reasoning(msgspec.Struct, gc=False):
    text: str | None = None
    signature: str | None = None
    redactedContent: str | None = None


class _Delta(msgspec.Struct, gc=False):
    text: str | None = None
    toolUse: _ToolDelta | None = None
    reasoningContent: _Reasoning | None = None
    toolResult: list[Any] | None = None


class _Usage(msgspec.Struct, gc=False):
    inputTokens: int = 0
    outputTokens: int = 0
    cacheReadInputTokens: int | None = None
    cacheWriteInputTokens: int | None = None
    cacheReadInputTokenCount: int | None = None
    cacheWriteInputTokenCount: int | None = None


class _Payload(msgspec.Struct, gc=False):
    """Every Converse stream event payload, flattened (fields are disjoint)."""

    contentBlockIndex: int = 0
    start: _Start | None = None
    delta: _Delta | None = None
    stopReason: str | None = None
    usage: _Usage | None = None
    message: str | None = None
    Message: str | None = None


class _Chunk(msgspec.Struct, gc=False):
    bytes: str


_decode_payload: Final = msgspec.json.Decoder(_Payload).decode
_decode_chunk: Final = msgspec.json.Decoder(_Chunk).decode
_decode_inner: Final = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode

_FILTERED: Final = frozenset({"guardrail_intervened", "content_filtered"})

_EVENT_TYPES: Final = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)


class _Opaque:
    """A server-side block (server tool use or its result) gathered until its stop."""

    __slots__ = ("block", "kind", "parts")

    def __init__(self, kind: str, block: dict[str, Any]) -> None:
        self.kind = kind
        self.block = block
        self.parts: list[Any] = []


class BedrockCall(FramedCall[EventStreamMessage]):
    """The response state machine for one ConverseStream call."""

    api = "bedrock"
    content_types = (EVENTSTREAM,)
    decoder_error_prefix = "bedrock event stream: "

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self.credentials = sigv4_credentials(options)
        self.region = region_of(model, options)
        self._unsigned = request
        self._stop: str | None = None
        self._metadata = False
        self._signatures: dict[int, str] = {}
        self._redacted: dict[int, bool] = {}
        self._opaque: dict[int, _Opaque] = {}
        #: structured output rides on a forced tool: its input is the answer, as text
        self._answer_tool = answers_with_tool(model, options)
        self._answered: dict[int, bool] = {}  # answer block -> any text yet

    # -- signing -------------------------------------------------------------
    @property
    def needs_signing(self) -> bool:
        """True when the shell must call `sign` before sending."""
        return self.credentials is not None

    def sign(self, timestamp: datetime) -> HTTPRequest:
        """Sign (again) for ``timestamp``; updates and returns ``self.request``."""
        if self.credentials is not None:
            self.request = sign(self._unsigned, self.credentials, timestamp, region=self.region)
        return self.request

    # -- frames ----------------------------------------------------------------
    # A decoder error (EventStreamError) ends the call in ProviderCall._guard.
    def make_decoder(self, options: Options) -> Decoder[EventStreamMessage]:
        return EventStreamDecoder(max_message_bytes=max(options.max_event_bytes, 16))

    def on_end(self) -> None:
        if self._stop is not None:
            self._finish()

    def on_frame(self, frame: EventStreamMessage) -> None:
        kind = frame.headers.get(":message-type")
        if kind == "exception" or kind == "error":
            self._exception(frame)
            return
        if kind != "event":
            log.debug("bedrock: ignoring frame of message type %r", kind)
            return
        event = frame.headers.get(":event-type")
        if event == "chunk":  # InvokeModelWithResponseStream
            inner = base64.b64decode(_decode_chunk(frame.payload).bytes, validate=True)
            for name, raw in _decode_inner(inner).items():
                if name in _EVENT_TYPES:
                    self._event(name, bytes(raw))
            return
        if isinstance(event, str) and event in _EVENT_TYPES:
            self._event(event, frame.payload)
        else:
            log.debug("bedrock: ignoring event type %r", event)

    def _exception(self, frame: EventStreamMessage) -> None:
        name = frame.headers.get(":exception-type") or frame.headers.get(":error-code")
        code = name if isinstance(name, str) else "exception"
        try:
            payload = _decode_payload(frame.payload)
            text = payload.message or payload.Message or code
        except (msgspec.DecodeError, msgspec.ValidationError):
            text = frame.payload.decode("utf-8", "replace").strip() or code
        self.fail(
            classify_stream_error(
                f"bedrock {code}: {text}", status_hint=EXCEPTION_STATUS.get(code), code=code
            )
        )

    # -- events -----------------------------------------------------------------
    def _event(self, name: str, payload: bytes) -> None:
        p = _decode_payload(payload)
        index = p.contentBlockIndex
        if name == "contentBlockStart":
            self._block_start(index, p.start)
        elif name == "contentBlockDelta":
            if p.delta is None:
                raise ValueError("contentBlockDelta without a delta")
            self._delta(index, p.delta)
        elif name == "contentBlockStop":
            self._block_stop(index)
        elif name == "messageStop":
            if p.stopReason is None:
                raise ValueError("messageStop without a stopReason")
            self._stop = p.stopReason
            if self._metadata:
                self._finish()
        elif name == "metadata":
            self._metadata = True
            if p.usage is not None:
                self.usage = _convert_usage(p.usage)
            if self._stop is not None:
                self._finish()

    def _block_start(self, index: int, start: _Start | None) -> None:
        if start is None:
            return
        tool = start.toolUse
        if tool is not None:
            if self._answer_tool and tool.name == ANSWER_TOOL:
                self._answered[index] = False
                self.emit.text(index, "")
            elif tool.type == "server_tool_use":
                block = {"toolUseId": tool.toolUseId, "name": tool.name, "type": tool.type}
                self._opaque[index] = _Opaque("toolUse", block)
            else:
                self.emit.tool_start(index, tool.toolUseId, tool.name)
        elif start.toolResult is not None:
            result = start.toolResult
            block = {
                k: v
                for k, v in (
                    ("toolUseId", result.toolUseId),
                    ("status", result.status),
                    ("type", result.type),
                )
                if v is not None
            }
            self._opaque[index] = _Opaque("toolResult", block)

    def _delta(self, index: int, delta: _Delta) -> None:
        opaque = self._opaque.get(index)
        if opaque is not None:
            if delta.toolUse is not None:
                opaque.parts.append(delta.toolUse.input)
            elif delta.toolResult is not None:
                opaque.parts.extend(delta.toolResult)
            return
        if delta.text is not None:
            self.emit.text(index, delta.text)
        elif delta.toolUse is not None and index in self._answered:
            self._answered[index] = self._answered[index] or bool(delta.toolUse.input)
            self.emit.text(index, delta.toolUse.input)
        elif delta.toolUse is not None:
            if self.emit.open_kind(index) != "tool":
                raise ValueError(f"toolUse input for block {index} that never started")
            self.emit.tool_delta(index, delta.toolUse.input)
        elif delta.reasoningContent is not None:
            self._reasoning(index, delta.reasoningContent)
        else:
            log.debug("bedrock: ignoring an unknown delta in block %d", index)

    def _reasoning(self, index: int, reasoning: _Reasoning) -> None:
        if reasoning.text is not None:
            self.emit.thinking(index, reasoning.text)
        if reasoning.signature:
            self.emit.thinking(index, "")
            self._signatures[index] = self._signatures.get(index, "") + reasoning.signature
        if reasoning.redactedContent:
            self.emit.thinking(index, "")
            self._signatures[index] = self._signatures.get(index, "") + reasoning.redactedContent
            self._redacted[index] = True

    def _block_stop(self, index: int) -> None:
        opaque = self._opaque.pop(index, None)
        if opaque is not None:
            block = dict(opaque.block)
            if opaque.kind == "toolUse":
                raw = "".join(opaque.parts)
                block["input"] = msgspec.json.decode(raw) if raw else {}
                block_type = "server_tool_use"
            else:
                block["content"] = opaque.parts
                block_type = "tool_result"
            self.emit.opaque(
                self.model.provider, block_type, _JSON.encode({opaque.kind: block}).decode()
            )
            return
        if self._answered.get(index) is False:
            self.emit.text(index, "{}")  # an empty input streams no delta at all
        self.emit.end(
            index,
            signature=self._signatures.pop(index, None),
            redacted=self._redacted.pop(index, False),
        )

    def _finish(self) -> None:
        reason = self._stop
        assert reason is not None
        if reason == "tool_use" and self._answered:
            reason = "end_turn"  # the forced answer tool was the answer, not a call to run
        stop = STOP_REASONS_READ.get(reason)
        if stop is not None:
            self.finish(stop)
        elif reason in _FILTERED:
            self.emit.close_all()
            self.fail(Error.content_filter(f"bedrock: the answer was stopped ({reason})"))
        elif reason == "model_context_window_exceeded":
            self.emit.close_all()
            self.fail(Error.context_overflow("bedrock: the model's context window was exceeded"))
        else:
            log.warning("bedrock: unknown stopReason %r read as stop", reason)
            self.finish(StopReason.STOP)


def _convert_usage(wire: _Usage) -> Usage:
    """Bedrock reports uncached input separately from cache reads and writes, as we do."""
    return Usage(
        input=wire.inputTokens,
        output=wire.outputTokens,
        cache_read=wire.cacheReadInputTokens or wire.cacheReadInputTokenCount or 0,
        cache_write=wire.cacheWriteInputTokens or wire.cacheWriteInputTokenCount or 0,
    )


def open_call(model: Model, context: Context, options: Options) -> BedrockCall:
    """Build the request and the call that decodes its streamed response."""
    return BedrockCall(model, context, options, build_request(model, context, options))
