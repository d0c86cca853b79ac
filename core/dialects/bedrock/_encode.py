"""Events -> Bedrock ConverseStream frames (the inverse of the bedrock decoder).

Binary AWS event-stream frames, one Converse event each, CRCs included. Pure.
Block indices are ours unchanged. What the format cannot carry: text and
tool-call signatures, reasoning token counts, opaque blocks.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from streamfn.core._events import (
    Done,
    Error,
    Event,
    TextDelta,
    TextEnd,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from streamfn.core.dialects._cut import cut_error, unpaused
from streamfn.core.dialects.bedrock._tables import EXCEPTIONS, STOP_REASONS
from streamfn.core.wire._eventstream import encode_message

__all__ = ["BedrockEncoder"]

_encoder: Final = msgspec.json.Encoder()


def _event(name: str, payload: dict[str, Any]) -> bytes:
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, _encoder.encode(payload))


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return _event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})


class BedrockEncoder:
    """Stateless but for the message start, sent before the first block."""

    def __init__(self) -> None:
        self._started = False

    def encode(self, event: Event) -> bytes:
        """Bytes to write for one event (empty when the format has nothing to say)."""
        head = b""
        if not self._started:
            self._started = True
            head = _event("messageStart", {"role": "assistant"})
        return head + self._encode(event)

    def _encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            return _delta(event.index, {"text": event.delta})
        if isinstance(event, ThinkingDelta):
            return _delta(event.index, {"reasoningContent": {"text": event.delta}})
        if isinstance(event, ToolCallStart):
            start = {"toolUse": {"toolUseId": event.id, "name": event.name}}
            return _event("contentBlockStart", {"contentBlockIndex": event.index, "start": start})
        if isinstance(event, ToolCallDelta):
            return _delta(event.index, {"toolUse": {"input": event.delta}})
        if isinstance(event, ThinkingEnd):
            out = b""
            if event.signature:
                field = "redactedContent" if event.redacted else "signature"
                out = _delta(event.index, {"reasoningContent": {field: event.signature}})
            return out + self._stop(event.index)
        if isinstance(event, (TextEnd, ToolCallEnd)):
            return self._stop(event.index)
        if isinstance(event, Done):
            event = unpaused(event)  # a paused turn is max_tokens, not end_turn
        if isinstance(event, Done) and event.stop_reason not in STOP_REASONS:
            event = cut_error(event)  # a cut answer is no "end_turn"
        if isinstance(event, Done):
            usage = event.usage
            return _event("messageStop", {"stopReason": STOP_REASONS[event.stop_reason]}) + _event(
                "metadata",
                {
                    "usage": {
                        "inputTokens": usage.input,
                        "outputTokens": usage.output,
                        "totalTokens": usage.total,
                        "cacheReadInputTokens": usage.cache_read,
                        "cacheWriteInputTokens": usage.cache_write,
                    },
                    "metrics": {"latencyMs": 0},
                },
            )
        if isinstance(event, Error):
            name = EXCEPTIONS[event.kind] if event.kind else "internalServerException"
            headers = {
                ":exception-type": name,
                ":content-type": "application/json",
                ":message-type": "exception",
            }
            return encode_message(headers, _encoder.encode({"message": event.message}))
        return b""

    @staticmethod
    def _stop(index: int) -> bytes:
        return _event("contentBlockStop", {"contentBlockIndex": index})
