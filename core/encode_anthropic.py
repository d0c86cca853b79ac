"""Events -> Anthropic Messages stream events (the inverse of the anthropic decoder).

Used by `streamfn serve` so Anthropic clients can stream from any model.
Content indices are ours unchanged: both protocols number blocks 0..n in
order of first appearance. Opaque blocks are replayed as the provider
described them (start + stop), so server-tool blocks round-trip.

Redacted thinking is only known at `ThinkingEnd`, so a thinking block's
start is held back until its first delta or its end. What the format
cannot carry: text/tool-call signatures (Gemini's), and usage reasoning
counts.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from .events import (
    Done,
    Error,
    ErrorKind,
    Event,
    OpaqueBlock,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

__all__ = ["STOP_REASONS", "AnthropicEncoder", "anthropic_error_type", "anthropic_usage"]

#: our stop reasons -> Anthropic ``stop_reason`` (streamed and whole messages alike)
STOP_REASONS: Final = {
    StopReason.STOP: "end_turn",
    StopReason.LENGTH: "max_tokens",
    StopReason.TOOL_USE: "tool_use",
    StopReason.ERROR: "end_turn",
    StopReason.ABORTED: "end_turn",
}

_ERROR_TYPES: Final = {
    ErrorKind.THROTTLED: "rate_limit_error",
    ErrorKind.CONTEXT_OVERFLOW: "invalid_request_error",
    ErrorKind.AUTH: "authentication_error",
    ErrorKind.NETWORK: "overloaded_error",
    ErrorKind.INVALID_REQUEST: "invalid_request_error",
    ErrorKind.CONTENT_FILTER: "invalid_request_error",
    ErrorKind.PROTOCOL: "api_error",
    ErrorKind.LIMIT: "api_error",
}

_encoder: Final = msgspec.json.Encoder()


def anthropic_usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "output_tokens": usage.output,
    }


def anthropic_error_type(kind: ErrorKind | None) -> str:
    return _ERROR_TYPES.get(kind, "api_error") if kind else "api_error"


def _frame(name: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + _encoder.encode(obj) + b"\n\n"


class AnthropicEncoder:
    """Stateful only for thinking blocks whose start is deferred."""

    def __init__(self, *, message_id: str, model: str) -> None:
        self._id = message_id
        self._model = model
        self._pending_thinking: set[int] = set()

    def _block_start(self, index: int, block: dict[str, Any]) -> bytes:
        return _frame(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        )

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        return _frame(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )

    def _stop(self, index: int) -> bytes:
        return _frame("content_block_stop", {"type": "content_block_stop", "index": index})

    def _flush_thinking(self, index: int) -> bytes:
        if index not in self._pending_thinking:
            return b""
        self._pending_thinking.discard(index)
        return self._block_start(index, {"type": "thinking", "thinking": "", "signature": ""})

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            return self._delta(event.index, {"type": "text_delta", "text": event.delta})
        if isinstance(event, ThinkingDelta):
            return self._flush_thinking(event.index) + self._delta(
                event.index, {"type": "thinking_delta", "thinking": event.delta}
            )
        if isinstance(event, ToolCallDelta):
            return self._delta(
                event.index, {"type": "input_json_delta", "partial_json": event.delta}
            )
        if isinstance(event, TextStart):
            return self._block_start(event.index, {"type": "text", "text": ""})
        if isinstance(event, ThinkingStart):
            self._pending_thinking.add(event.index)
            return b""
        if isinstance(event, ToolCallStart):
            return self._block_start(
                event.index, {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}
            )
        if isinstance(event, (TextEnd, ToolCallEnd)):
            return self._stop(event.index)
        if isinstance(event, ThinkingEnd):
            if event.redacted and event.index in self._pending_thinking:
                self._pending_thinking.discard(event.index)
                block = {"type": "redacted_thinking", "data": event.signature or ""}
                return self._block_start(event.index, block) + self._stop(event.index)
            out = self._flush_thinking(event.index)
            if event.signature:
                out += self._delta(
                    event.index, {"type": "signature_delta", "signature": event.signature}
                )
            return out + self._stop(event.index)
        if isinstance(event, OpaqueBlock):
            raw: Any = msgspec.json.decode(event.json) if event.provider == "anthropic" else None
            if not isinstance(raw, dict):
                return b""
            return self._block_start(event.index, raw) + self._stop(event.index)
        if isinstance(event, Start):
            return _frame(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": self._id,
                        "type": "message",
                        "role": "assistant",
                        "model": self._model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 0, "output_tokens": 0},
                    },
                },
            )
        if isinstance(event, Done):
            return _frame(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": STOP_REASONS[event.stop_reason],
                        "stop_sequence": None,
                    },
                    "usage": anthropic_usage(event.usage),
                },
            ) + _frame("message_stop", {"type": "message_stop"})
        if isinstance(event, Error):
            return _frame(
                "error",
                {
                    "type": "error",
                    "error": {"type": anthropic_error_type(event.kind), "message": event.message},
                },
            )
        return b""

    def keep_alive(self) -> bytes:
        """Anthropic's own keep-alive is a ``ping`` event; clients ignore it."""
        return _frame("ping", {"type": "ping"})
