"""Anthropic Messages (``POST {base_url}/v1/messages``, ``stream: true``) as one state machine.

Decisions a caller can rely on (each one is a choice the wire leaves open):

- **Blocks** are routed by the wire's ``index``, so parallel blocks and tool
  calls keep their own content index. Text, ``thinking`` (with the
  ``signature_delta`` on `ThinkingEnd`), ``redacted_thinking`` (no text; its
  ``data`` is `ThinkingEnd.signature` with ``redacted=True``) and client
  ``tool_use`` become streamfn blocks. Every other block type (server tool use
  and results: web search, code execution, MCP, text editor, tool search, and
  any type added later) is carried whole as an `OpaqueBlock` at its
  ``content_block_stop``, with its streamed ``input_json_delta`` folded into
  ``input``, so a caller can show it and a replay to Anthropic sends it back
  verbatim (`OpaqueContent`). Its content index is taken at that stop (the
  emitter numbers an opaque block when it is complete); Anthropic streams
  server blocks start to stop, so this is the wire order.
- **Terminal marker**: ``message_stop``. A body that ends before it ends in
  ``Error(kind=network, "stream ended early")`` even after ``message_delta``:
  Anthropic always sends ``message_stop``, so its absence means a cut stream.
  A last event cut mid-JSON by the end of the body is that too, not a
  protocol error.
- **Stop reasons**: ``end_turn``/``stop_sequence`` -> stop; ``max_tokens`` ->
  length (a tool call cut by it is closed; the fold reports its unparsable
  arguments); ``tool_use`` -> tool_use; ``pause_turn`` -> stop: the server
  paused a long server-tool turn, and the caller continues it by sending the
  conversation (this message included) back as is.
  ``refusal`` -> ``Error(kind=content_filter)``: it is set by Anthropic's
  streaming safety classifiers, not by the model declining in words, so it is
  the provider's safety system, as ``content_filter`` is for OpenAI; the text
  streamed before it stays in the folded message.
  ``model_context_window_exceeded`` -> ``Error(kind=context_overflow)``.
- **Errors inside the stream** (``event: error``: overloaded, rate limit,
  api error) go through `classify_stream_error`; the error ``type`` is used as the
  tie-breaker Anthropic documents (``overloaded_error`` is its 529) without
  claiming an HTTP status for a 200 stream.
- **Usage** in our convention: ``input_tokens`` (already without cache) ->
  input, ``cache_read_input_tokens`` -> cache_read,
  ``cache_creation_input_tokens`` -> cache_write, ``output_tokens`` -> output.
  ``message_start`` gives the first counts; ``message_delta`` counts are
  cumulative and override field by field. Anthropic does not report thinking
  tokens apart, so ``reasoning`` stays 0.
- Citations (``citations_delta``) are not carried: the event protocol has no
  place for them yet; they are logged at debug level.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec

from ..cache_points import mark_anthropic
from ..capabilities import (
    fit_max_tokens,
    fit_sampling,
    fit_thinking_tokens,
    output_limit,
    unsupported,
)
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
from ..structured import (
    ANSWER_TOOL,
    answers_with_tool,
    anthropic_output_format,
    structured_request,
)
from ..wire.sse import ServerSentEvent, decode_data
from ._base import HTTPRequest, SSECall, json_request, request_headers
from .convert import opaque_object, prepare_messages, thinking_allowed

__all__ = ["AnthropicCall", "build_request", "open_call"]

log = logging.getLogger("streamfn")

API_VERSION: Final = "2023-06-01"
_BASE_URL: Final = "https://api.anthropic.com"


# ---------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------

_JSON: Final = msgspec.json.Encoder()

#: budget_tokens per thinking level; 1024 is Anthropic's minimum.
THINKING_BUDGETS: Final = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 4096,
    ThinkingLevel.MEDIUM: 10_240,
    ThinkingLevel.HIGH: 32_000,
}


def _url(model: Model, options: Options) -> str:
    base = (options.base_url or model.base_url or _BASE_URL).rstrip("/")
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def _headers(model: Model, options: Options) -> list[tuple[str, str]]:
    auth = ("x-api-key", options.api_key) if options.api_key else None
    headers = request_headers(model, options, accept="text/event-stream", auth=auth)
    # the API version goes before the caller's headers, which may pin another one
    names = {k.lower() for k in (model.headers or {})} | {
        k.lower() for k in (options.headers or {})
    }
    if "anthropic-version" not in names:
        headers.insert(2, ("anthropic-version", API_VERSION))
    return headers


def _image(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
    }


def _user_blocks(content: list[UserContent]) -> list[dict[str, Any]]:
    """Anthropic rejects empty and whitespace-only text blocks (400), so they are left out."""
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextContent):
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append(_image(part))
    return blocks


def _assistant_blocks(message: AssistantMessage) -> list[Any]:
    blocks: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            # prepare_messages kept thinking only when this very model produced it.
            if block.redacted:
                if block.signature:
                    blocks.append({"type": "redacted_thinking", "data": block.signature})
            elif block.signature:
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
            elif block.thinking.strip():  # unsigned (cut-off) thinking would be rejected
                blocks.append({"type": "text", "text": block.thinking})
        elif isinstance(block, ToolCall):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
        elif isinstance(block, OpaqueContent) and (raw := opaque_object(block)) is not None:
            blocks.append(raw)  # re-encoded from the parsed object, never pasted as text
    return blocks


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    content = _user_blocks(message.content)
    if content:
        result["content"] = content
    if message.is_error:
        result["is_error"] = True
    return result


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the user turn collecting tool results
    for message in messages:
        if isinstance(message, ToolResultMessage):
            if results is None:
                results = []
                out.append({"role": "user", "content": results})
            results.append(_tool_result(message))
            continue
        results = None
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                if message.content.strip():
                    out.append({"role": "user", "content": message.content})
                continue
            blocks = _user_blocks(message.content)
            if blocks:
                out.append({"role": "user", "content": blocks})
        else:
            blocks = _assistant_blocks(message)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
    return out


def _tool_choice(choice: str) -> dict[str, str]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "none":
        return {"type": "none"}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def thinking_budget(options: Options) -> int | None:
    """The ``budget_tokens`` to send, or None when thinking is not asked for."""
    if options.thinking_budget is not None:
        return options.thinking_budget if options.thinking_budget > 0 else None
    if options.thinking is None or options.thinking == ThinkingLevel.OFF:
        return None
    return THINKING_BUDGETS[options.thinking]


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed message; pure.

    ``max_tokens`` is required by Anthropic (default: the model's output
    limit). With thinking it counts the thinking too and must exceed the
    budget (see `fit_thinking_tokens`). What the model's capabilities rule out
    (sampling knobs while thinking, both temperature and top_p on Claude 4.5,
    thinking with a forced tool choice or with a replayed tool-use turn that
    has no thinking block of its own) is dropped or clamped with a warning.
    """
    plan = structured_request(model, context, options)
    context, options = plan.context, plan.options  # emulated: the forced answer tool
    messages = prepare_messages(context, model)
    max_tokens = fit_max_tokens(model, options.max_tokens or output_limit(model))
    body: dict[str, Any] = {"model": model.id, "max_tokens": max_tokens, "stream": True}
    if context.system_prompt:
        body["system"] = context.system_prompt
    body["messages"] = _messages(messages)
    if context.tools:
        tools = []
        for tool in context.tools:
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            spec["input_schema"] = tool.parameters
            tools.append(spec)
        body["tools"] = tools
        if options.tool_choice:
            body["tool_choice"] = _tool_choice(options.tool_choice)
    budget = thinking_budget(options)
    if budget is not None and not thinking_allowed(model, context, options, messages):
        budget = None
    if budget is not None:
        body["max_tokens"], budget = fit_thinking_tokens(model, options.max_tokens, budget)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    wire = ("temperature", "top_p", "top_k", "stop")
    for name, value in fit_sampling(model, options, thinking=budget is not None, wire=wire).items():
        body["stop_sequences" if name == "stop" else name] = (
            list(value) if name == "stop" else value
        )
    if (options.n or 1) > 1:
        unsupported(model, "n", "has no field in the anthropic API; one answer is asked for")
    if plan.native is not None:
        body["output_config"] = {"format": anthropic_output_format(plan.native)}
    mark_anthropic(body, model, options)
    return json_request(_url(model, options), _headers(model, options), body, options)


# ---------------------------------------------------------------------------
# Response: wire structs (only the fields we read; everything else is skipped)
# ---------------------------------------------------------------------------


_NO_RAW: Final = msgspec.Raw()


class _Delta(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class _Usage(msgspec.Struct, gc=False):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class _Message(msgspec.Struct, gc=False):
    id: str | None = None
    usage: _Usage | None = None


class _ErrorBody(msgspec.Struct, gc=False):
    type: str = ""
    message: str = ""


class _Event(msgspec.Struct, gc=False):
    type: str
    index: int | None = None
    delta: _Delta | None = None
    content_block: msgspec.Raw = _NO_RAW  # empty when absent (Raw cannot be Optional)
    message: _Message | None = None
    usage: _Usage | None = None
    error: _ErrorBody | None = None


class _BlockHead(msgspec.Struct, gc=False):
    """The ``content_block`` of ``content_block_start``, for the block types we interpret."""

    type: str
    text: str = ""
    thinking: str = ""
    signature: str = ""
    data: str = ""
    id: str = ""
    name: str = ""
    input: msgspec.Raw = _NO_RAW


_decode_event: Final = msgspec.json.Decoder(_Event).decode
_decode_head: Final = msgspec.json.Decoder(_BlockHead).decode
_decode_object: Final = msgspec.json.Decoder(dict[str, Any]).decode

_STOP_REASONS: Final = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "max_tokens": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
}

#: The HTTP status Anthropic documents for each error type; a tie-breaker for
#: `classify_stream_error` on errors that arrive inside a 200 stream.
_ERROR_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

_TEXT: Final = 1
_THINKING: Final = 2
_REDACTED: Final = 3
_TOOL: Final = 4
_OPAQUE: Final = 5
_ANSWER: Final = 6  # the forced answer tool of emulated structured output, shown as text


class _Opaque:
    """A server-side block held until its stop, with its streamed input."""

    __slots__ = ("head", "parts", "type")

    def __init__(self, head: bytes, block_type: str) -> None:
        self.head = head
        self.type = block_type
        self.parts: list[str] = []

    def json(self) -> str:
        if not self.parts:
            return self.head.decode()
        block = _decode_object(self.head)
        text = "".join(self.parts)
        block["input"] = _decode_object(text) if text.strip() else {}
        return _JSON.encode(block).decode()


class AnthropicCall(SSECall):
    """The response state machine for one streamed Messages API call."""

    api = "anthropic"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._kinds: dict[int, int] = {}  # wire index -> block kind, for open blocks
        self._signatures: dict[int, str] = {}
        self._opaque: dict[int, _Opaque] = {}
        self._stop_reason: str | None = None
        #: structured output rides on a forced tool: its input is the answer, as text
        self._answer_tool = answers_with_tool(model, options)
        self._answered: dict[int, bool] = {}  # answer block -> any text yet

    # -- SSE events -----------------------------------------------------------
    raw_data = True

    def on_data(self, data: bytes, event_type: bytes) -> bool:
        # The fast path (SSEDecoder.feed_to): the event type is in the data too.
        try:
            wire = _decode_event(data)
        except Exception:  # invalid UTF-8 decodes as the spec says, or fails the same
            wire = decode_data(_decode_event, data)
        kind = wire.type
        if kind == "content_block_delta":
            # Hot path: one more text delta for an open text block, nothing else.
            delta = wire.delta
            index = wire.index
            if (
                delta is not None
                and delta.type == "text_delta"
                and type(delta.text) is str
                and index is not None
                and self._kinds.get(index) == _TEXT
            ):
                self.emit.text(index, delta.text)
            else:
                self._delta(wire)
        else:
            self._on_wire(wire)
        return self.emit.finished

    def on_event(self, event: ServerSentEvent) -> None:
        self.on_data(event.data.encode(), b"")  # a body cut inside this event: SSECall._eof

    def _on_wire(self, wire: _Event) -> None:
        kind = wire.type
        if kind == "content_block_delta":
            self._delta(wire)
        elif kind == "content_block_start":
            self._start(wire)
        elif kind == "content_block_stop":
            self._stop(_index(wire))
        elif kind == "message_start":
            message = wire.message
            if message is None:
                raise ValueError("message_start without a message")
            self.response_id = message.id
            if message.usage is not None:
                self._usage(message.usage)
        elif kind == "message_delta":
            if wire.delta is not None and wire.delta.stop_reason is not None:
                self._stop_reason = wire.delta.stop_reason
            if wire.usage is not None:
                self._usage(wire.usage)
        elif kind == "message_stop":
            self._complete()
        elif kind == "error":
            self._stream_error(wire.error)
        elif kind != "ping":
            log.debug("anthropic: ignoring event type %r", kind)

    # -- blocks ---------------------------------------------------------------
    def _start(self, wire: _Event) -> None:
        index = _index(wire)
        if index in self._kinds:
            raise ValueError(f"content block {index} started twice")
        raw = wire.content_block
        if not raw:
            raise ValueError("content_block_start without a content_block")
        head = _decode_head(raw)
        block_type = head.type
        if block_type == "text":
            self._kinds[index] = _TEXT
            self.emit.text(index, head.text)
        elif block_type == "thinking":
            self._kinds[index] = _THINKING
            self.emit.thinking(index, head.thinking)
            if head.signature:
                self._signatures[index] = head.signature
        elif block_type == "redacted_thinking":
            self._kinds[index] = _REDACTED
            self.emit.thinking(index, "")
            self._signatures[index] = head.data
        elif block_type == "tool_use" and self._answer_tool and head.name == ANSWER_TOOL:
            self._kinds[index] = _ANSWER
            initial = bytes(head.input).strip()
            text = initial.decode() if initial and initial != b"{}" else ""
            self._answered[index] = bool(text)
            self.emit.text(index, text)
        elif block_type == "tool_use":
            self._kinds[index] = _TOOL
            self.emit.tool_start(index, head.id, head.name)
            initial = bytes(head.input).strip()
            if initial and initial != b"{}":
                # A complete input in the start (no deltas will follow).
                self.emit.tool_delta(index, initial.decode())
        else:
            self._kinds[index] = _OPAQUE
            self._opaque[index] = _Opaque(bytes(raw), block_type)

    def _delta(self, wire: _Event) -> None:
        index = _index(wire)
        delta = wire.delta
        if delta is None:
            raise ValueError("content_block_delta without a delta")
        kind = self._kinds.get(index)
        if kind is None:
            raise ValueError(f"delta for content block {index}, which is not open")
        dtype = delta.type
        if dtype == "text_delta":
            if kind != _TEXT or delta.text is None:
                raise ValueError(f"text_delta for a non-text block {index}")
            self.emit.text(index, delta.text)
        elif dtype == "input_json_delta":
            if delta.partial_json is None:
                raise ValueError("input_json_delta without partial_json")
            if kind == _TOOL:
                self.emit.tool_delta(index, delta.partial_json)
            elif kind == _ANSWER:
                self._answered[index] = self._answered[index] or bool(delta.partial_json)
                self.emit.text(index, delta.partial_json)
            elif kind == _OPAQUE:
                self._opaque[index].parts.append(delta.partial_json)
            else:
                raise ValueError(f"input_json_delta for block {index}, which takes no input")
        elif dtype == "thinking_delta":
            if kind != _THINKING or delta.thinking is None:
                raise ValueError(f"thinking_delta for a non-thinking block {index}")
            self.emit.thinking(index, delta.thinking)
        elif dtype == "signature_delta":
            if kind != _THINKING or delta.signature is None:
                raise ValueError(f"signature_delta for a non-thinking block {index}")
            self._signatures[index] = self._signatures.get(index, "") + delta.signature
        else:
            log.debug("anthropic: ignoring %s for block %d", dtype, index)

    def _stop(self, index: int) -> None:
        kind = self._kinds.pop(index, None)
        if kind is None:
            raise ValueError(f"content_block_stop for block {index}, which is not open")
        if kind == _OPAQUE:
            block = self._opaque.pop(index)
            self.emit.opaque("anthropic", block.type, block.json())
        else:
            if kind == _ANSWER and not self._answered.get(index):
                self.emit.text(index, "{}")  # an empty input streams no delta at all
            signature = self._signatures.pop(index, None) or None
            self.emit.end(index, signature=signature, redacted=kind == _REDACTED)

    def _usage(self, wire: _Usage) -> None:
        old = self.usage
        self.usage = Usage(
            input=old.input if wire.input_tokens is None else wire.input_tokens,
            output=old.output if wire.output_tokens is None else wire.output_tokens,
            cache_read=(
                old.cache_read
                if wire.cache_read_input_tokens is None
                else wire.cache_read_input_tokens
            ),
            cache_write=(
                old.cache_write
                if wire.cache_creation_input_tokens is None
                else wire.cache_creation_input_tokens
            ),
        )

    # -- ending ---------------------------------------------------------------
    def _complete(self) -> None:
        # Close what the wire left open (a block cut by max_tokens) in index order.
        for index in sorted(self._kinds):
            if self._kinds[index] == _OPAQUE:
                log.warning("anthropic: server block %d was never stopped", index)
            try:
                self._stop(index)
            except msgspec.DecodeError:  # input cut mid-JSON: keep the block as it started
                block = self._opaque.pop(index, None)
                if block is not None:
                    self.emit.opaque("anthropic", block.type, block.head.decode())
        reason = self._stop_reason
        if reason == "tool_use" and self._answered:
            reason = "end_turn"  # the forced answer tool was the answer, not a call to run
        stop = _STOP_REASONS.get(reason) if reason is not None else StopReason.STOP
        if reason is None:
            log.warning("anthropic: message_stop without a stop_reason")
        if stop is not None:
            self.finish(stop)
        elif reason == "refusal":
            self.fail(
                Error.content_filter(
                    f"{self.model.provider}: the answer was stopped by the safety classifier "
                    "(stop_reason=refusal)"
                )
            )
        elif reason == "model_context_window_exceeded":
            self.fail(
                Error.context_overflow(
                    f"{self.model.provider}: the model's context window was exceeded"
                )
            )
        else:
            log.warning("anthropic: unknown stop_reason %r read as stop", reason)
            self.finish(StopReason.STOP)

    def _stream_error(self, error: _ErrorBody | None) -> None:
        if error is None:
            self.fail(Error.protocol(f"{self.model.provider}: error event without an error"))
            return
        message = f"{self.model.provider}: {error.type}: {error.message or 'unknown error'}"
        self.fail(
            classify_stream_error(
                message, status_hint=_ERROR_STATUS.get(error.type), code=error.type
            )
        )


def _index(wire: _Event) -> int:
    if wire.index is None:
        raise ValueError(f"{wire.type} without an index")
    return wire.index


def open_call(model: Model, context: Context, options: Options) -> AnthropicCall:
    """Build the request and the call that decodes its streamed response."""
    return AnthropicCall(model, context, options, build_request(model, context, options))
