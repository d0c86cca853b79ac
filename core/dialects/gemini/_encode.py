"""Events -> Gemini ``streamGenerateContent?alt=sse`` chunks (the inverse of the gemini decoder).

Each text or thinking delta is one part; a block's signature rides on its last
part as ``thoughtSignature`` (Gemini attaches it to the part it belongs to).
Function calls are whole in this form, so a call's argument deltas are
gathered until its end and sent as one ``functionCall`` part. Pure; what the
format cannot carry: redacted thinking, a boundary between two adjacent blocks
of the same kind, opaque blocks of other providers, cache writes.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from streamfn.core._accumulate import WholeToolCalls
from streamfn.core._events import (
    Done,
    Error,
    ErrorKind,
    Event,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from streamfn.core.content._citations import Citation
from streamfn.core.dialects._cut import cut_error, unpaused
from streamfn.core.dialects.gemini._citations import to_gemini_grounding

__all__ = ["GeminiEncoder", "gemini_usage"]

_encoder: Final = msgspec.json.Encoder()

FINISH_REASONS: Final = {
    StopReason.STOP: "STOP",
    StopReason.TOOL_USE: "STOP",  # Gemini has no tool-use reason: calls imply it
    StopReason.LENGTH: "MAX_TOKENS",
}

#: our error kinds -> (HTTP-like code, google.rpc status) of an in-stream error
ERROR_STATUS: Final = {
    ErrorKind.THROTTLED: (429, "RESOURCE_EXHAUSTED"),
    ErrorKind.CONTEXT_OVERFLOW: (400, "INVALID_ARGUMENT"),
    ErrorKind.AUTH: (403, "PERMISSION_DENIED"),
    ErrorKind.NETWORK: (503, "UNAVAILABLE"),
    ErrorKind.INVALID_REQUEST: (400, "INVALID_ARGUMENT"),
    ErrorKind.CONTENT_FILTER: (400, "INVALID_ARGUMENT"),
    ErrorKind.PROTOCOL: (500, "INTERNAL"),
    ErrorKind.LIMIT: (500, "INTERNAL"),
    ErrorKind.BUDGET: (403, "PERMISSION_DENIED"),
}


def gemini_usage(usage: Usage) -> dict[str, int]:
    """Our usage back into ``usageMetadata`` (thoughts counted apart from candidates)."""
    return {
        "promptTokenCount": usage.input + usage.cache_read + usage.cache_write,
        "cachedContentTokenCount": usage.cache_read,
        "candidatesTokenCount": max(usage.output - usage.reasoning, 0),
        "thoughtsTokenCount": usage.reasoning,
        "totalTokenCount": usage.total,
    }


class GeminiEncoder:
    """Stateful: the last part of a block waits for the block's end (it may carry the
    signature), and a function call waits for its arguments."""

    def __init__(self, *, response_id: str, model: str) -> None:
        self._id = response_id
        self._model = model
        self._held: dict[str, Any] | None = None  # the open block's last part
        self._calls = WholeToolCalls()
        self._cited: list[Citation] = []  # groundingMetadata is the candidate's whole list

    def _chunk(self, parts: list[dict[str, Any]], **extra: Any) -> bytes:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        candidate.update(extra.pop("candidate", {}))
        obj = {"candidates": [candidate], "modelVersion": self._model, "responseId": self._id}
        obj.update(extra)
        return b"data: " + _encoder.encode(obj) + b"\r\n\r\n"

    def _hold(self, part: dict[str, Any]) -> bytes:
        out = self._chunk([self._held]) if self._held is not None else b""
        self._held = part
        return out

    def _release(self, signature: str | None, citations: tuple[Citation, ...] = ()) -> bytes:
        part, self._held = self._held, None
        if part is None:
            part = {"text": ""}
        if signature:
            part = {**part, "thoughtSignature": signature}
        self._cited += citations
        grounding = to_gemini_grounding(self._cited) if citations else None
        if grounding is not None:
            return self._chunk([part], candidate={"groundingMetadata": grounding})
        return self._chunk([part])

    def encode(self, event: Event) -> bytes:
        """Bytes to write for one event (empty when the format has nothing to say)."""
        if isinstance(event, TextDelta):
            return self._hold({"text": event.delta})
        if isinstance(event, ThinkingDelta):
            return self._hold({"text": event.delta, "thought": True})
        if isinstance(event, TextEnd):
            return self._release(event.signature, event.citations)
        if isinstance(event, ThinkingEnd):
            return self._release(event.signature)
        if isinstance(event, (ToolCallStart, ToolCallDelta)):
            self._calls.add(event)
            return b""
        if isinstance(event, ToolCallEnd):
            ident, name, args = self._calls.end(event)
            part: dict[str, Any] = {"functionCall": {"id": ident, "name": name, "args": args}}
            if event.signature:
                part["thoughtSignature"] = event.signature
            return self._chunk([part])
        if isinstance(event, Done):
            event = unpaused(event)  # a paused turn is MAX_TOKENS, not STOP
        if isinstance(event, Done) and event.stop_reason not in FINISH_REASONS:
            event = cut_error(event)  # a cut answer is no "STOP"
        if isinstance(event, Done):
            return self._chunk(
                [],
                candidate={"finishReason": FINISH_REASONS[event.stop_reason]},
                usageMetadata=gemini_usage(event.usage),
            )
        if isinstance(event, Error):
            out = self._chunk([self._held]) if self._held is not None else b""
            self._held = None
            code, status = ERROR_STATUS[event.kind] if event.kind else (500, "INTERNAL")
            error = {
                "error": {"code": code, "message": event.message, "status": status},
                "responseId": self._id,
            }
            return out + b"data: " + _encoder.encode(error) + b"\r\n\r\n"
        if isinstance(event, Start):
            return b""
        return b""
