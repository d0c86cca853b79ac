"""Events -> Ollama ``/api/chat`` NDJSON lines (the inverse of the ollama decoder).

Ollama streams text and thinking as deltas but tool calls whole, with their
arguments as a JSON object: a call's argument deltas are gathered until its
end and sent as one line. Pure; what the format cannot carry: signatures,
redacted thinking, opaque blocks, cache and reasoning token counts.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from streamfn.core._accumulate import WholeToolCalls
from streamfn.core._events import (
    Done,
    Error,
    Event,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from streamfn.core.dialects._cut import cut_error, unpaused
from streamfn.core.dialects.ollama._tables import DONE_REASONS

__all__ = ["OllamaEncoder"]

_encoder: Final = msgspec.json.Encoder()


class OllamaEncoder:
    """Stateful: tool-call arguments wait for the call's end."""

    def __init__(self, *, model: str) -> None:
        self._model = model
        self._calls = WholeToolCalls()

    def _line(self, obj: dict[str, Any]) -> bytes:
        return _encoder.encode({"model": self._model, **obj}) + b"\n"

    def _message(self, **fields: Any) -> bytes:
        return self._line({"message": {"role": "assistant", **fields}, "done": False})

    def encode(self, event: Event) -> bytes:
        """Bytes to write for one event (empty when the format has nothing to say)."""
        if isinstance(event, TextDelta):
            return self._message(content=event.delta)
        if isinstance(event, ThinkingDelta):
            return self._message(content="", thinking=event.delta)
        if isinstance(event, (ToolCallStart, ToolCallDelta)):
            self._calls.add(event)
            return b""
        if isinstance(event, ToolCallEnd):
            ident, name, arguments = self._calls.end(event)
            call = {"id": ident, "function": {"name": name, "arguments": arguments}}
            return self._message(content="", tool_calls=[call])
        if isinstance(event, Done):
            event = unpaused(event)  # a paused turn is "length", not "stop"
        if isinstance(event, Done) and event.stop_reason not in DONE_REASONS:
            event = cut_error(event)  # a cut answer is no "stop"
        if isinstance(event, Done):
            return self._line(
                {
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": DONE_REASONS[event.stop_reason],
                    "prompt_eval_count": event.usage.input,
                    "eval_count": event.usage.output,
                }
            )
        if isinstance(event, Error):
            return _encoder.encode({"error": event.message}) + b"\n"
        return b""
