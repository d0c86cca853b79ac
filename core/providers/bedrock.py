"""AWS Bedrock ConverseStream: Converse request, SigV4 signing, event-stream state machine.

The body is ``application/vnd.amazon.eventstream``: binary frames whose
``:message-type`` header is ``event`` (``:event-type`` messageStart,
contentBlockStart, contentBlockDelta, contentBlockStop, messageStop,
metadata) or ``exception`` (``:exception-type`` throttlingException ...). The
stream is over when both messageStop and metadata have arrived (or at end of
body after messageStop). Frames of InvokeModelWithResponseStream (``chunk``
events carrying base64 ``bytes``) are unwrapped too: for models whose native
stream is Converse-shaped (Amazon Nova) they decode the same way.

Credentials, decided here because the core never reads the environment or
the clock:

- ``options.api_key`` without a colon is a Bedrock API key (the
  ``AWS_BEARER_TOKEN_BEDROCK`` kind): sent as ``Authorization: Bearer``; the
  request is complete as built.
- ``options.api_key`` of the form ``ACCESS_KEY:SECRET_KEY[:SESSION_TOKEN]``
  (`format_aws_key` builds it; AWS keys and tokens never contain a colon)
  means SigV4. `build_request` returns the *unsigned* request and the shell
  calls ``call.sign(datetime.now(UTC))`` right before each send (a signature
  is valid for minutes, so a retry signs again). `sign` is the pure function
  underneath, so tests pin the timestamp.

Region: ``model.extra["region"]``, else the one in ``base_url``
(``bedrock-runtime.<region>.amazonaws.com``), else ``us-east-1``.
"""

from __future__ import annotations

import base64
import logging
import re
from datetime import datetime
from typing import Any, Final

import msgspec

from ..cache_points import mark_bedrock
from ..capabilities import fit_max_tokens, fit_sampling, fit_thinking_tokens
from ..classify import classify_stream_error
from ..events import Error, StopReason, Usage
from ..messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from ..models import Model
from ..options import Options, ThinkingLevel
from ..structured import ANSWER_TOOL, answers_with_tool, bedrock_text_format, structured_request
from ..wire.eventstream import EventStreamDecoder, EventStreamMessage
from ._base import HTTPRequest, ProviderCall, bearer, json_request, request_headers
from .convert import opaque_object, prepare_messages, thinking_allowed
from .sigv4 import encode_path_segment, sign_request

__all__ = [
    "AWSCredentials",
    "BedrockCall",
    "build_request",
    "format_aws_key",
    "open_call",
    "parse_aws_key",
    "region_of",
    "sign",
]

log = logging.getLogger("streamfn")


EVENTSTREAM: Final = "application/vnd.amazon.eventstream"
DEFAULT_REGION: Final = "us-east-1"
SERVICE: Final = "bedrock"

_JSON: Final = msgspec.json.Encoder()
_REGION_IN_HOST: Final = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com")

# ---------------------------------------------------------------------------
# Credentials and signing
# ---------------------------------------------------------------------------


class AWSCredentials(msgspec.Struct, frozen=True, kw_only=True):
    """Long-term or temporary AWS keys; never shown by ``repr``."""

    access_key: str
    secret_key: str
    session_token: str | None = None

    def __repr__(self) -> str:
        return "AWSCredentials(***)"


def format_aws_key(access_key: str, secret_key: str, session_token: str | None = None) -> str:
    """The ``options.api_key`` form of AWS keys (what `parse_aws_key` reads)."""
    parts = [access_key, secret_key] + ([session_token] if session_token else [])
    if any(":" in p or not p for p in parts):
        raise ValueError("AWS keys must be non-empty and contain no ':'")
    return ":".join(parts)


def parse_aws_key(api_key: str | None) -> AWSCredentials | None:
    """SigV4 credentials from ``ACCESS:SECRET[:SESSION]``; None for a bearer key or none."""
    if not api_key or ":" not in api_key:
        return None
    parts = api_key.split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise ValueError("options.api_key for bedrock must be ACCESS_KEY:SECRET_KEY[:SESSION]")
    return AWSCredentials(
        access_key=parts[0],
        secret_key=parts[1],
        session_token=parts[2] if len(parts) == 3 else None,
    )


def region_of(model: Model, options: Options | None = None) -> str:
    extra = model.extra or {}
    if extra.get("region"):
        return extra["region"]
    base = (options.base_url if options else None) or model.base_url or ""
    found = _REGION_IN_HOST.search(base)
    return found.group(1) if found else DEFAULT_REGION


def sign(
    request: HTTPRequest, credentials: AWSCredentials, timestamp: datetime, *, region: str
) -> HTTPRequest:
    """The same request with SigV4 headers for ``timestamp`` (aware datetime); pure."""
    headers = sign_request(
        method=request.method,
        url=request.url,
        headers=dict(request.headers),
        body=request.body,
        region=region,
        service=SERVICE,
        access_key=credentials.access_key,
        secret_key=credentials.secret_key,
        session_token=credentials.session_token,
        timestamp=timestamp,
    )
    return HTTPRequest(
        method=request.method, url=request.url, headers=list(headers.items()), body=request.body
    )


# ---------------------------------------------------------------------------
# Request (Converse JSON)
# ---------------------------------------------------------------------------

_THINKING_BUDGET: Final = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 2048,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 16384,
}
_IMAGE_FORMATS: Final = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def _url(model: Model, options: Options) -> str:
    base = (
        options.base_url
        or model.base_url
        or f"https://bedrock-runtime.{region_of(model, options)}.amazonaws.com"
    )
    return f"{base.rstrip('/')}/model/{encode_path_segment(model.id)}/converse-stream"


def _headers(model: Model, options: Options) -> list[tuple[str, str]]:
    # SigV4 keys are signed in later (`sign`); any other key is a Bedrock API key
    auth = bearer(options.api_key) if parse_aws_key(options.api_key) is None else None
    return request_headers(model, options, accept=EVENTSTREAM, auth=auth)


def _image(image: ImageContent) -> dict[str, Any]:
    fmt = _IMAGE_FORMATS.get(image.mime_type.lower(), image.mime_type.split("/")[-1])
    return {"image": {"format": fmt, "source": {"bytes": image.data}}}


def _user_blocks(content: str | list[UserContent]) -> list[dict[str, Any]]:
    """Converse rejects blank text ("the text field ... is blank"): left out."""
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextContent):
            if part.text.strip():
                blocks.append({"text": part.text})
        else:
            blocks.append(_image(part))
    return blocks


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"text": block.text})
        elif isinstance(block, ThinkingContent):
            # prepare_messages kept it only when this very model produced it
            if block.redacted and block.signature:
                blocks.append({"reasoningContent": {"redactedContent": block.signature}})
            elif block.thinking:
                text: dict[str, Any] = {"text": block.thinking}
                if block.signature:
                    text["signature"] = block.signature
                blocks.append({"reasoningContent": {"reasoningText": text}})
        elif isinstance(block, ToolCall):
            blocks.append(
                {"toolUse": {"toolUseId": block.id, "name": block.name, "input": block.arguments}}
            )
        elif isinstance(block, OpaqueContent) and (raw := opaque_object(block)) is not None:
            blocks.append(raw)  # re-encoded from the parsed object, never pasted as text
    return blocks


#: the text of a tool result that has none: Converse rejects blank text blocks
EMPTY_RESULT_TEXT: Final = "(no output)"


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    content = _user_blocks(message.content) or [{"text": EMPTY_RESULT_TEXT}]
    result: dict[str, Any] = {"toolUseId": message.tool_call_id, "content": content}
    if message.is_error:
        result["status"] = "error"
    return {"toolResult": result}


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Converse wants strictly alternating roles: consecutive turns of one role merge."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            role, blocks = "user", _user_blocks(message.content)
        elif isinstance(message, AssistantMessage):
            role, blocks = "assistant", _assistant_blocks(message)
        else:
            role, blocks = "user", [_tool_result(message)]
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _tool_choice(choice: str) -> dict[str, Any] | None:
    if choice == "auto":
        return {"auto": {}}
    if choice == "required":
        return {"any": {}}
    if choice == "none":
        return None
    return {"tool": {"name": choice}}


def _thinking_budget(model: Model, options: Options) -> int | None:
    if options.thinking == ThinkingLevel.OFF:
        return None
    if options.thinking_budget is not None:
        return options.thinking_budget
    if options.thinking is None:
        return None
    return _THINKING_BUDGET[options.thinking]


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The ConverseStream request; unsigned when the key is SigV4 (see `sign`)."""
    plan = structured_request(model, context, options)
    context, options = plan.context, plan.options  # emulated: the forced answer tool
    messages = prepare_messages(context, model)
    body: dict[str, Any] = {"messages": _messages(messages)}
    if context.system_prompt:
        body["system"] = [{"text": context.system_prompt}]
    if context.tools:
        config: dict[str, Any] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description or t.name,
                        "inputSchema": {"json": t.parameters},
                    }
                }
                for t in context.tools
            ]
        }
        if options.tool_choice:
            choice = _tool_choice(options.tool_choice)
            if choice is None:
                log.debug("%s: Converse has no tool_choice 'none'; left to the model", model.key)
            else:
                config["toolChoice"] = choice
        body["toolConfig"] = config
    inference: dict[str, Any] = {}
    budget = _thinking_budget(model, options) if model.reasoning else None
    if budget is not None and not thinking_allowed(model, context, options, messages):
        budget = None
    max_tokens = fit_max_tokens(model, options.max_tokens) if options.max_tokens else None
    if budget is not None:
        max_tokens, budget = fit_thinking_tokens(model, max_tokens, budget)
        body["additionalModelRequestFields"] = {
            "thinking": {"type": "enabled", "budget_tokens": budget}
        }
    if max_tokens is not None:
        inference["maxTokens"] = max_tokens
    wire = ("temperature", "top_p", "top_k", "stop")
    fitted = fit_sampling(model, options, thinking=budget is not None, wire=wire)
    for name, field in (
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("stop", "stopSequences"),
    ):
        if name in fitted:
            inference[field] = list(fitted[name]) if name == "stop" else fitted[name]
    if inference:
        body["inferenceConfig"] = inference
    if "top_k" in fitted:  # Claude's own field, passed through by Converse
        body.setdefault("additionalModelRequestFields", {})["top_k"] = fitted["top_k"]
    if plan.native is not None:
        body["outputConfig"] = {"textFormat": bedrock_text_format(plan.native)}
    mark_bedrock(body, model, options)
    return json_request(_url(model, options), _headers(model, options), body, options)


# ---------------------------------------------------------------------------
# Response
# ---------------------------------------------------------------------------


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

_STOP_REASONS: Final = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.LENGTH,
}
_FILTERED: Final = frozenset({"guardrail_intervened", "content_filtered"})

#: exception type -> the HTTP status AWS documents for it, so `classify_stream_error`
#: sees the same signal as for a non-2xx answer (the status is not kept).
_EXCEPTION_STATUS: Final = {
    "throttlingException": 429,
    "validationException": 400,
    "accessDeniedException": 403,
    "resourceNotFoundException": 404,
    "internalServerException": 500,
    "serviceUnavailableException": 503,
    "modelStreamErrorException": 502,  # the model failed mid-stream: retryable
    "modelTimeoutException": 408,
    "modelNotReadyException": 503,
}

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


class BedrockCall(ProviderCall):
    """The response state machine for one ConverseStream call."""

    api = "bedrock"
    content_types = (EVENTSTREAM,)
    decoder_error_prefix = "bedrock event stream: "

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self.decoder = EventStreamDecoder(max_message_bytes=max(options.max_event_bytes, 16))
        self.credentials = parse_aws_key(options.api_key)
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
    def _feed(self, data: bytes) -> None:
        for frame in self.decoder.feed(data):
            self._frame(frame)
            if self.emit.finished:
                return

    def _eof(self) -> None:
        self.decoder.end()
        if self._stop is not None:
            self._finish()

    def _frame(self, frame: EventStreamMessage) -> None:
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
                f"bedrock {code}: {text}", status_hint=_EXCEPTION_STATUS.get(code), code=code
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
        stop = _STOP_REASONS.get(reason)
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
