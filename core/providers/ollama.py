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

from ..classify import classify_message
from ..events import StopReason, Usage
from ..messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)
from ..models import Model
from ..options import Options, ThinkingLevel
from .base import HTTPRequest, NDJSONCall, json_request, request_headers
from .convert import prepare_messages

__all__ = ["DEFAULT_BASE_URL", "OllamaCall", "build_request", "open_call"]

log = logging.getLogger("streamfn")

DEFAULT_BASE_URL: Final = "http://localhost:11434"


_JSON: Final = msgspec.json.Encoder()

# ---------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------


def _url(model: Model, options: Options) -> str:
    return (options.base_url or model.base_url or DEFAULT_BASE_URL).rstrip("/") + "/api/chat"


def _headers(model: Model, options: Options) -> list[tuple[str, str]]:
    # a key only for Ollama's cloud and authenticating proxies
    auth = ("authorization", f"Bearer {options.api_key}") if options.api_key else None
    return request_headers(model, options, accept="application/x-ndjson", auth=auth)


def _split(content: str | list[Any], model: Model) -> tuple[str, list[str]]:
    """Text joined, images as the bare base64 list Ollama wants."""
    if isinstance(content, str):
        return content, []
    text = "\n".join(p.text for p in content if isinstance(p, TextContent))
    images = [p.data for p in content if isinstance(p, ImageContent)]
    if images and not model.images:
        log.debug("model %s takes no images; dropping them", model.key)
        images = []
    return text, images


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


def _messages(messages: list[Message], context: Context, model: Model) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"role": "system", "content": context.system_prompt})
    for message in messages:
        if isinstance(message, UserMessage):
            text, images = _split(message.content, model)
            entry: dict[str, Any] = {"role": "user", "content": text}
            if images:
                entry["images"] = images
            out.append(entry)
        elif isinstance(message, AssistantMessage):
            converted = _assistant(message)
            if converted is not None:
                out.append(converted)
        else:
            text, images = _split(message.content, model)
            entry = {"role": "tool", "content": text, "tool_name": message.tool_name}
            if images:
                entry["images"] = images
            out.append(entry)
    return out


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed chat; pure."""
    body: dict[str, Any] = {
        "model": model.id,
        "messages": _messages(prepare_messages(context, model), context, model),
        "stream": True,
    }
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in context.tools
        ]
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
    message: _Message | None = None
    done: bool = False
    done_reason: str | None = None
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    error: str | dict[str, Any] | None = None


_decode_line: Final = msgspec.json.Decoder(_Line).decode

_STOP_REASONS: Final = {
    "stop": StopReason.STOP,
    "length": StopReason.LENGTH,
    # "load" / "unload": an empty request that only (un)loaded the model
    "load": StopReason.STOP,
    "unload": StopReason.STOP,
}


class OllamaCall(NDJSONCall):
    """The response state machine for one streamed Ollama chat."""

    api = "ollama"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._segment = 0
        self._mode = ""  # "text" | "thinking" | "" : the open text-like block
        self._calls = 0

    def on_line(self, line: bytes) -> None:
        data = _decode_line(line)
        if data.error is not None:
            text = data.error if isinstance(data.error, str) else str(data.error)
            self.fail(classify_message(f"{self.model.provider}: {text}"))
            return
        message = data.message
        if message is not None:
            if message.thinking:
                self._text_like("thinking", message.thinking)
            if message.content:
                self._text_like("text", message.content)
            for call in message.tool_calls or ():
                self._tool_call(call)
        if data.done:
            if data.prompt_eval_count is not None or data.eval_count is not None:
                self.usage = Usage(input=data.prompt_eval_count or 0, output=data.eval_count or 0)
            self.finish(self._stop_reason(data.done_reason))

    def _text_like(self, mode: str, delta: str) -> None:
        if self._mode != mode:
            self.emit.end(self._segment)
            self._segment += 1
            self._mode = mode
        if mode == "text":
            self.emit.text(self._segment, delta)
        else:
            self.emit.thinking(self._segment, delta)

    def _tool_call(self, call: _ToolCall) -> None:
        self.emit.end(self._segment)
        self._mode = ""
        number = self._calls
        self._calls += 1
        key = ("tool", number)
        self.emit.tool_start(key, call.id or f"ollama_call_{number}", call.function.name)
        self.emit.tool_delta(key, _JSON.encode(call.function.arguments or {}).decode())
        self.emit.end(key)

    def _stop_reason(self, reason: str | None) -> StopReason:
        if self._calls and reason in (None, "stop"):
            return StopReason.TOOL_USE
        if reason is None:
            return StopReason.STOP
        stop = _STOP_REASONS.get(reason)
        if stop is None:
            log.warning("ollama: unknown done_reason %r read as stop", reason)
            return StopReason.STOP
        return stop


def open_call(model: Model, context: Context, options: Options) -> OllamaCall:
    """Build the request and the call that decodes its streamed response."""
    return OllamaCall(model, context, options, build_request(model, context, options))
