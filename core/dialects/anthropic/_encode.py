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

import bisect
from typing import Any, Final

import msgspec

from streamfn.core._events import (
    Done,
    Error,
    ErrorKind,
    Event,
    OpaqueBlock,
    Start,
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
from streamfn.core._messages import (
    AssistantMessage,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from streamfn.core.dialects._cut import cut_error, finish_word
from streamfn.core.dialects.anthropic._citations import to_anthropic
from streamfn.core.dialects.anthropic._tables import ERROR_TYPES, STOP_REASONS

__all__ = [
    "STOP_REASONS",
    "AnthropicEncoder",
    "anthropic_block",
    "anthropic_error_body",
    "anthropic_error_type",
    "anthropic_message_body",
    "anthropic_usage",
]

_encoder: Final = msgspec.json.Encoder()


def anthropic_usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "output_tokens": usage.output,
    }


def anthropic_error_type(kind: ErrorKind | None) -> str:
    return ERROR_TYPES.get(kind, "api_error") if kind else "api_error"


def anthropic_error_body(error_type: str, message: str) -> dict[str, Any]:
    """Anthropic's error object, the same in a stream's ``error`` event and an HTTP error."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


def anthropic_message_body(
    message: AssistantMessage, *, message_id: str, model: str, paused: bool = False
) -> dict[str, Any]:
    """A whole (non-streaming) Messages response; the message is the fold of a stream
    (``paused``: its `Done` said the provider paused the turn, Anthropic's
    ``pause_turn``)."""
    content: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            text: dict[str, Any] = {"type": "text", "text": block.text}
            cited = [c for c in map(to_anthropic, block.citations) if c is not None]
            if cited:
                text["citations"] = cited
            content.append(text)
        elif isinstance(block, ThinkingContent):
            if block.redacted:
                content.append({"type": "redacted_thinking", "data": block.signature or ""})
            else:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": block.thinking,
                        "signature": block.signature or "",
                    }
                )
        elif isinstance(block, ToolCall):
            content.append(
                {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": block.arguments,
                }
            )
        elif isinstance(block, OpaqueContent):
            raw = anthropic_block(block.provider, block.json)
            if raw is not None:
                content.append(raw)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "pause_turn" if paused else finish_word(STOP_REASONS, message.stop_reason),
        "stop_sequence": None,
        "usage": anthropic_usage(message.usage),
    }


def anthropic_block(provider: str, json: str) -> dict[str, Any] | None:
    """An opaque block as the Anthropic upstream sent it (server-tool use and results,
    which the client sends back on its next turn); None for another provider's or a
    broken one, which the client does not get."""
    if provider != "anthropic":
        return None
    try:
        raw = msgspec.json.decode(json)
    except msgspec.DecodeError:
        return None
    return raw if isinstance(raw, dict) else None


def _frame(name: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + _encoder.encode(obj) + b"\n\n"


_PING: Final = _frame("ping", {"type": "ping"})
#: stands in for a delta while a frame is split around it
_HOLE: Final = "\x00"
#: what follows the delta string in every content_block_delta frame (fixed punctuation)
_DELTA_POST: Final = b"}}\n\n"


def _delta_prefix(index: int, kind: str, field: str) -> bytes:
    """The bytes before the delta string of a ``kind`` frame for block ``index``.

    A string encodes to the same JSON wherever it sits, so a delta frame is
    ``prefix + encode(delta) + _DELTA_POST`` byte for byte.
    """
    frame = _frame(
        "content_block_delta",
        {"type": "content_block_delta", "index": index, "delta": {"type": kind, field: _HOLE}},
    )
    prefix, hole, post = frame.rpartition(_encoder.encode(_HOLE))
    assert hole and post == _DELTA_POST, "unexpected content_block_delta shape"
    return prefix


class AnthropicEncoder:
    """Stateful only for thinking blocks whose start is deferred."""

    def __init__(self, *, message_id: str, model: str) -> None:
        self._id = message_id
        self._model = model
        self._pending_thinking: set[int] = set()
        # Deltas are most of a stream: their frame prefixes are encoded once per block.
        self._text_pre: dict[int, bytes] = {}
        self._thinking_pre: dict[int, bytes] = {}
        self._json_pre: dict[int, bytes] = {}
        #: our indices of blocks left out (another provider's opaque blocks): the blocks
        #: after them move down, so the client sees 0, 1, 2 ... with no gap
        self._skipped: list[int] = []

    def _out(self, index: int) -> int:
        return index - bisect.bisect_left(self._skipped, index) if self._skipped else index

    def _block_start(self, index: int, block: dict[str, Any]) -> bytes:
        return _frame(
            "content_block_start",
            {"type": "content_block_start", "index": self._out(index), "content_block": block},
        )

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        return _frame(
            "content_block_delta",
            {"type": "content_block_delta", "index": self._out(index), "delta": delta},
        )

    def _stop(self, index: int) -> bytes:
        return _frame(
            "content_block_stop", {"type": "content_block_stop", "index": self._out(index)}
        )

    def _flush_thinking(self, index: int) -> bytes:
        if index not in self._pending_thinking:
            return b""
        self._pending_thinking.discard(index)
        return self._block_start(index, {"type": "thinking", "thinking": "", "signature": ""})

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            pre = self._text_pre.get(event.index)
            if pre is None:
                pre = self._text_pre[event.index] = _delta_prefix(
                    self._out(event.index), "text_delta", "text"
                )
            return pre + _encoder.encode(event.delta) + _DELTA_POST
        if isinstance(event, ThinkingDelta):
            pre = self._thinking_pre.get(event.index)
            if pre is None:
                pre = self._thinking_pre[event.index] = _delta_prefix(
                    self._out(event.index), "thinking_delta", "thinking"
                )
            return (
                self._flush_thinking(event.index) + pre + _encoder.encode(event.delta) + _DELTA_POST
            )
        if isinstance(event, ToolCallDelta):
            pre = self._json_pre.get(event.index)
            if pre is None:
                pre = self._json_pre[event.index] = _delta_prefix(
                    self._out(event.index), "input_json_delta", "partial_json"
                )
            return pre + _encoder.encode(event.delta) + _DELTA_POST
        return self._structure(event)

    def _structure(self, event: Event) -> bytes:
        """Everything but a delta: a block's start and end, then the message's own events."""
        if isinstance(event, TextStart):
            return self._block_start(event.index, {"type": "text", "text": ""})
        if isinstance(event, ThinkingStart):
            self._pending_thinking.add(event.index)
            return b""
        if isinstance(event, ToolCallStart):
            return self._block_start(
                event.index, {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}
            )
        if isinstance(event, TextEnd) and event.citations:
            # Anthropic streams a citation as its own delta; the kinds it has a shape for
            cited = [c for c in map(to_anthropic, event.citations) if c is not None]
            deltas = [
                self._delta(event.index, {"type": "citations_delta", "citation": c}) for c in cited
            ]
            return b"".join(deltas) + self._stop(event.index)
        if isinstance(event, (TextEnd, ToolCallEnd)):
            return self._stop(event.index)
        if isinstance(event, ThinkingEnd):
            return self._thinking_end(event)
        if isinstance(event, OpaqueBlock):
            return self._opaque(event)
        return self._message_event(event)

    def _thinking_end(self, event: ThinkingEnd) -> bytes:
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

    def _opaque(self, event: OpaqueBlock) -> bytes:
        raw = anthropic_block(event.provider, event.json)
        if raw is None:  # an upstream's broken block is left out, not a crash
            self._skipped.append(event.index)
            return b""
        return self._block_start(event.index, raw) + self._stop(event.index)

    def _message_event(self, event: Event) -> bytes:
        if isinstance(event, Start):
            return self._message_start()
        if isinstance(event, Done) and event.stop_reason not in STOP_REASONS:
            event = cut_error(event)
        if isinstance(event, Done):
            return _frame(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {
                        # a turn paused and not continued here is Anthropic's own word
                        "stop_reason": "pause_turn"
                        if event.paused is True
                        else STOP_REASONS[event.stop_reason],
                        "stop_sequence": None,
                    },
                    "usage": anthropic_usage(event.usage),
                },
            ) + _frame("message_stop", {"type": "message_stop"})
        if isinstance(event, Error):
            return _frame(
                "error", anthropic_error_body(anthropic_error_type(event.kind), event.message)
            )
        return b""

    def _message_start(self) -> bytes:
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

    def keep_alive(self) -> bytes:
        """Anthropic's own keep-alive is a ``ping`` event; clients ignore it."""
        return _PING
