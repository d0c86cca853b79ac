"""Events -> OpenAI Chat Completions stream chunks (the inverse of the openai-chat decoder).

Used by `streamfn serve` so any OpenAI client can stream from any model
streamfn reaches. Pure: the caller supplies the id and creation time.

What the format cannot carry, and so is dropped: thinking signatures and
redaction, text/tool-call signatures, opaque server-tool blocks, cache-write
token counts. Thinking travels as ``reasoning_content`` deltas (the DeepSeek
/ vLLM convention the openai-chat decoder reads back).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from .events import (
    Done,
    Error,
    ErrorKind,
    Event,
    Start,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStart,
    Usage,
)
from .sse import encode_sse

__all__ = ["FINISH_REASONS", "OpenAIChatEncoder", "openai_error_type", "openai_usage"]

#: our stop reasons -> OpenAI ``finish_reason`` (streamed and whole responses alike)
FINISH_REASONS: Final = {
    StopReason.STOP: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_USE: "tool_calls",
    StopReason.ERROR: "stop",
    StopReason.ABORTED: "stop",
}

#: our error kinds -> OpenAI error ``type`` values clients know
_ERROR_TYPES: Final = {
    ErrorKind.THROTTLED: "rate_limit_exceeded",
    ErrorKind.CONTEXT_OVERFLOW: "context_length_exceeded",
    ErrorKind.AUTH: "invalid_api_key",
    ErrorKind.NETWORK: "server_error",
    ErrorKind.INVALID_REQUEST: "invalid_request_error",
    ErrorKind.CONTENT_FILTER: "content_filter",
    ErrorKind.PROTOCOL: "server_error",
    ErrorKind.LIMIT: "server_error",
}

_encoder: Final = msgspec.json.Encoder()


def openai_usage(usage: Usage) -> dict[str, Any]:
    """Our usage convention back into OpenAI's (cached tokens inside prompt_tokens)."""
    prompt = usage.input + usage.cache_read + usage.cache_write
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output,
        "total_tokens": prompt + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    }


def openai_error_type(kind: ErrorKind | None) -> str:
    return _ERROR_TYPES.get(kind, "server_error") if kind else "server_error"


class OpenAIChatEncoder:
    """Stateful: tool calls are numbered per message, as OpenAI's ``index`` is."""

    def __init__(
        self, *, response_id: str, model: str, created: int, include_usage: bool = False
    ) -> None:
        self._id = response_id
        self._model = model
        self._created = created
        self._include_usage = include_usage
        self._tool_slots: dict[int, int] = {}

    def _chunk(
        self, delta: dict[str, Any], finish: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }

    def _frame(self, obj: dict[str, Any]) -> bytes:
        return b"data: " + _encoder.encode(obj) + b"\n\n"

    def encode(self, event: Event) -> bytes:
        """Bytes to write for one event (empty when the format has nothing to say)."""
        if isinstance(event, TextDelta):
            return self._frame(self._chunk({"content": event.delta}))
        if isinstance(event, ThinkingDelta):
            return self._frame(self._chunk({"reasoning_content": event.delta}))
        if isinstance(event, ToolCallDelta):
            slot = self._tool_slots.get(event.index)
            if slot is None:
                return b""
            call = {"index": slot, "function": {"arguments": event.delta}}
            return self._frame(self._chunk({"tool_calls": [call]}))
        if isinstance(event, ToolCallStart):
            slot = self._tool_slots.setdefault(event.index, len(self._tool_slots))
            call = {
                "index": slot,
                "id": event.id,
                "type": "function",
                "function": {"name": event.name, "arguments": ""},
            }
            return self._frame(self._chunk({"tool_calls": [call]}))
        if isinstance(event, Start):
            return self._frame(self._chunk({"role": "assistant", "content": ""}))
        if isinstance(event, Done):
            out = self._frame(self._chunk({}, FINISH_REASONS[event.stop_reason]))
            if self._include_usage:
                out += self._frame(
                    {
                        "id": self._id,
                        "object": "chat.completion.chunk",
                        "created": self._created,
                        "model": self._model,
                        "choices": [],
                        "usage": openai_usage(event.usage),
                    }
                )
            return out + b"data: [DONE]\n\n"
        if isinstance(event, Error):
            body = {
                "error": {
                    "message": event.message,
                    "type": openai_error_type(event.kind),
                    "code": event.kind.value if event.kind else None,
                }
            }
            return self._frame(body)
        return b""

    def keep_alive(self) -> bytes:
        """An SSE comment: ignored by clients, resets idle timers on the way."""
        return encode_sse(comment="keep-alive")
