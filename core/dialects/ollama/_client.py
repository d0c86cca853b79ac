"""Ollama's native chat API (``POST {base_url}/api/chat``, NDJSON): request and state machine.

Each line is one JSON object: ``message.content`` and ``message.thinking``
deltas, ``message.tool_calls`` as whole calls (arguments are a JSON object,
not text, and may arrive on the final ``done`` line), and a last line with
``done: true``, ``done_reason`` and the token counts. A line ``{"error": ...}``
ends the stream with that error.

Ollama gives tool calls no ids before 0.12 and not always after, so calls
without one are named ``ollama_call_<n>`` in order of arrival: deterministic,
so replaying the same body gives the same ids. The arguments object becomes a
start, one delta with its JSON, and an end.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec

from streamfn.core._classify import classify_stream_error
from streamfn.core._events import StopReason, Usage
from streamfn.core._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from streamfn.core._options import Options, ThinkingLevel
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects._openai_common import function_tools
from streamfn.core.dialects.ollama._tables import DONE_REASONS_READ
from streamfn.core.json._structured import structured_request
from streamfn.core.providers._base import (
    HTTPRequest,
    NDJSONCall,
    api_root,
    bearer,
    json_request,
    request_headers,
)
from streamfn.core.providers._convert import joined_text, prepare_messages

__all__ = ["DEFAULT_BASE_URL", "OllamaCall", "build_request", "open_call"]

log = logging.getLogger("streamfn")

DEFAULT_BASE_URL: Final = "http://localhost:11434"


_JSON: Final = msgspec.json.Encoder()

# ---------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------


def _url(model: Model, options: Options) -> str:
    base = (options.base_url or model.base_url or DEFAULT_BASE_URL).rstrip("/")
    # Ollama's OpenAI-compatible root (``…/v1``) names the same server
    return api_root(base.removesuffix("/v1"), "/api") + "/chat"


def _headers(model: Model, options: Options) -> list[tuple[str, str]]:
    # a key only for Ollama's cloud and authenticating proxies
    return request_headers(
        model, options, accept="application/x-ndjson", auth=bearer(options.api_key)
    )


def _split(content: str | list[Any]) -> tuple[str, list[str]]:
    """Text joined, images as the bare base64 list Ollama wants."""
    if isinstance(content, str):
        return content, []
    return joined_text(content), [p.data for p in content if isinstance(p, ImageContent)]


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    thinking = "".join(
        b.thinking for b in message.content if isinstance(b, ThinkingContent) and not b.redacted
    )
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    if not text and not thinking and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": text}
    if thinking:
        out["thinking"] = thinking
    if calls:
        out["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    return out


def _messages(messages: list[Message], context: Context) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"role": "system", "content": context.system_prompt})
    for message in messages:
        if isinstance(message, UserMessage):
            text, images = _split(message.content)
            entry: dict[str, Any] = {"role": "user", "content": text}
            if images:
                entry["images"] = images
            out.append(entry)
        elif isinstance(message, AssistantMessage):
            converted = _assistant(message)
            if converted is not None:
                out.append(converted)
        else:
            text, images = _split(message.content)
            entry = {"role": "tool", "content": text, "tool_name": message.tool_name}
            if images:
                entry["images"] = images
            out.append(entry)
    return out


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed chat; pure."""
    plan = structured_request(model, context, options)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": _messages(prepare_messages(context, model), context),
        "stream": True,
    }
    if context.tools:
        body["tools"] = function_tools(context.function_tools, empty_description=True)
        if options.tool_choice:
            log.debug("%s: Ollama has no tool_choice; not sent", model.key)
    knobs: dict[str, Any] = {}
    for name, value in (
        ("temperature", options.temperature),
        ("top_p", options.top_p),
        ("top_k", options.top_k),
        ("num_predict", options.max_tokens),
        ("seed", options.seed),
    ):
        if value is not None:
            knobs[name] = value
    if options.stop:
        knobs["stop"] = list(options.stop)
    if knobs:
        body["options"] = knobs
    if options.thinking is not None:
        body["think"] = options.thinking != ThinkingLevel.OFF
    if plan.native is not None:  # https://docs.ollama.com/capabilities/structured-outputs
        body["format"] = plan.native.schema
    return json_request(_url(model, options), _headers(model, options), body, options)


# ---------------------------------------------------------------------------
# Response
# ---------------------------------------------------------------------------


class _Function(msgspec.Struct, gc=False):
    name: str
    arguments: dict[str, Any] | None = None


class _ToolCall(msgspec.Struct, gc=False):
    function: _Function
    id: str | None = None


class _Message(msgspec.Struct, gc=False):
    content: str | None = None
    thinking: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Line(msgspec.Struct, gc=False):
    model: str | None = None
    message: _Message | None = None
    done: bool = False
    done_reason: str | None = None
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    error: str | dict[str, Any] | None = None


_decode_line: Final = msgspec.json.Decoder(_Line).decode

#: the emitter key of the open text or thinking block
_SEGMENT: Final = "segment"


class OllamaCall(NDJSONCall):
    """The response state machine for one streamed Ollama chat."""

    api = "ollama"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._calls = 0

    def on_line(self, line: bytes) -> None:
        data = _decode_line(line)
        if data.error is not None:
            text = data.error if isinstance(data.error, str) else str(data.error)
            self.fail(classify_stream_error(f"{self.model.provider}: {text}"))
            return
        if self.response_model is None and data.model:
            self.response_model = data.model
        message = data.message
        if message is not None:
            # Text and thinking share one key: the emitter closes the block of
            # one kind when the other kind starts under it, so order is kept.
            if message.thinking:
                self.emit.thinking(_SEGMENT, message.thinking)
            if message.content:
                self.emit.text(_SEGMENT, message.content)
            for call in message.tool_calls or ():
                self._tool_call(call)
        if data.done:
            if data.prompt_eval_count is not None or data.eval_count is not None:
                self.usage = Usage(input=data.prompt_eval_count or 0, output=data.eval_count or 0)
            self.finish(self._stop_reason(data.done_reason))

    def _tool_call(self, call: _ToolCall) -> None:
        self.emit.end(_SEGMENT)
        number = self._calls
        self._calls += 1
        key = ("tool", number)
        self.emit.tool_start(key, call.id or f"ollama_call_{number}", call.function.name)
        self.emit.tool_delta(key, _JSON.encode(call.function.arguments or {}).decode())
        self.emit.end(key)

    def _stop_reason(self, reason: str | None) -> StopReason:
        if reason is None:  # calls make it tool_use (`finish`)
            return StopReason.STOP
        stop = DONE_REASONS_READ.get(reason)
        if stop is None:
            log.warning("ollama: unknown done_reason %r read as stop", reason)
            return StopReason.STOP
        return stop


def open_call(model: Model, context: Context, options: Options) -> OllamaCall:
    """Build the request and the call that decodes its streamed response."""
    return OllamaCall(model, context, options, build_request(model, context, options))
