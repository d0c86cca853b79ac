"""Events -> OpenAI Chat Completions stream chunks (the inverse of the openai-chat decoder).

Used by `streamfn serve` so any OpenAI client can stream from any model
streamfn reaches. Pure: the caller supplies the id and creation time.

What the format cannot carry, and so is dropped: thinking signatures and
redaction, text signatures, opaque server-tool blocks, cache-write token
counts. Thinking travels as ``reasoning_content`` deltas (the DeepSeek /
vLLM convention the openai-chat decoder reads back). A tool call's signature
(Gemini 3's ``thoughtSignature``) travels the way Gemini's own OpenAI-compatible
endpoint carries it, ``extra_content.google.thought_signature`` on the tool
call, so a client that replays its turn sends it back (`THOUGHT_SIGNATURE`).
https://ai.google.dev/gemini-api/docs/thought-signatures
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from streamfn.core._events import (
    Done,
    Error,
    ErrorKind,
    Event,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from streamfn.core._messages import AssistantMessage, TextContent
from streamfn.core.dialects._cut import cut_error, finish_word, unpaused
from streamfn.core.dialects._openai_citations import to_openai_annotation
from streamfn.core.dialects._openai_common import ERROR_CODES, signature_carrier
from streamfn.core.dialects.openai_chat._tables import FINISH_REASONS
from streamfn.core.wire._sse import encode_sse

__all__ = [
    "FINISH_REASONS",
    "OpenAIChatEncoder",
    "openai_completion_body",
    "openai_error_type",
    "openai_usage",
]

_encoder: Final = msgspec.json.Encoder()

#: an SSE comment: ignored by clients, resets idle timers on the way
_KEEP_ALIVE: Final = encode_sse(comment="keep-alive")
#: stands in for a delta while a frame is split around it
_HOLE: Final = "\x00"


def _around(frame: Callable[[str], bytes]) -> tuple[bytes, bytes]:
    """The bytes of ``frame`` before and after its one string slot.

    A string encodes to the same JSON wherever it sits, so a delta frame is
    ``before + encode(delta) + after`` byte for byte; the slot is the last
    string in the frame (only fixed punctuation follows it), hence rpartition.
    """
    before, hole, after = frame(_HOLE).rpartition(_encoder.encode(_HOLE))
    assert hole, "the frame has no slot for a string"
    return before, after


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
    return ERROR_CODES.get(kind, "server_error") if kind else "server_error"


def openai_completion_body(
    message: AssistantMessage, *, response_id: str, model: str, created: int
) -> dict[str, Any]:
    """A whole (non-streaming) chat completion; the message is the fold of a stream."""
    tool_calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments_json or "{}"},
            **({"extra_content": signature_carrier(c.signature)} if c.signature else {}),
        }
        for c in message.tool_calls
    ]
    msg: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    annotations = _annotations(message)
    if annotations:
        msg["annotations"] = annotations
    if message.thinking:
        msg["reasoning_content"] = message.thinking
    if tool_calls:
        msg["tool_calls"] = tool_calls
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": msg,
                "finish_reason": finish_word(FINISH_REASONS, message.stop_reason),
                "logprobs": None,
            }
        ],
        "usage": openai_usage(message.usage),
    }


def _annotations(message: AssistantMessage) -> list[dict[str, Any]]:
    """The text blocks' citations as annotations, spans counted in the joined text."""
    out: list[dict[str, Any]] = []
    offset = 0
    for block in message.content:
        if isinstance(block, TextContent):
            for citation in block.citations:
                annotation = to_openai_annotation(citation, nested=True, offset=offset)
                if annotation is not None:
                    out.append(annotation)
            offset += len(block.text)
    return out


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
        # Deltas are most of a stream: their envelopes are encoded once, not per delta.
        self._content_pre, self._content_post = _around(
            lambda v: self._frame(self._chunk({"content": v}))
        )
        self._reasoning_pre, self._reasoning_post = _around(
            lambda v: self._frame(self._chunk({"reasoning_content": v}))
        )
        self._arguments: dict[int, tuple[bytes, bytes]] = {}  # by content index
        #: characters of content sent so far, and where each open text block began:
        #: annotation spans count in the whole message's content
        self._chars = 0
        self._text_base: dict[int, int] = {}

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
        """Bytes to write for one event (empty when the format has nothing to say).

        The per-delta events are framed inline (the hot path); the rare ones
        (a block's start or end, the stream's end) have their own methods."""
        if isinstance(event, TextDelta):
            self._chars += len(event.delta)
            return self._content_pre + _encoder.encode(event.delta) + self._content_post
        if isinstance(event, TextStart):
            self._text_base[event.index] = self._chars
            return b""
        if isinstance(event, TextEnd):
            return self._text_end(event)
        if isinstance(event, ThinkingDelta):
            return self._reasoning_pre + _encoder.encode(event.delta) + self._reasoning_post
        if isinstance(event, ToolCallDelta):
            around = self._arguments.get(event.index)
            if around is None:
                return b""
            return around[0] + _encoder.encode(event.delta) + around[1]
        if isinstance(event, ToolCallStart):
            return self._tool_call_start(event)
        if isinstance(event, ToolCallEnd) and event.signature:
            slot = self._tool_slots.get(event.index, 0)
            call = {"index": slot, "extra_content": signature_carrier(event.signature)}
            return self._frame(self._chunk({"tool_calls": [call]}))
        if isinstance(event, Start):
            return self._frame(self._chunk({"role": "assistant", "content": ""}))
        if isinstance(event, Done):
            return self._done(event)
        if isinstance(event, Error):
            return self._error(event)
        return b""

    def encode_many(self, events: list[Event]) -> bytes:
        """The bytes of ``events`` in one write: `encode` of each, joined (text deltas,
        most of a stream, framed here without a call per delta)."""
        pre, post, dumps = self._content_pre, self._content_post, _encoder.encode
        out: list[bytes] = []
        chars = 0  # counted here, added to the message's before any other event
        for event in events:
            if type(event) is TextDelta:
                text = event.delta
                chars += len(text)
                out += (pre, dumps(text), post)
            else:
                self._chars += chars
                chars = 0
                out.append(self.encode(event))
        self._chars += chars
        return b"".join(out)

    def _text_end(self, event: TextEnd) -> bytes:
        """The block's citations as annotations, their offsets counted over the whole message."""
        base = self._text_base.pop(event.index, 0)
        annotations = [
            a
            for c in event.citations
            if (a := to_openai_annotation(c, nested=True, offset=base)) is not None
        ]
        return self._frame(self._chunk({"annotations": annotations})) if annotations else b""

    def _tool_call_start(self, event: ToolCallStart) -> bytes:
        slot = self._tool_slots.setdefault(event.index, len(self._tool_slots))
        if event.index not in self._arguments:
            self._arguments[event.index] = _around(
                lambda v: self._frame(
                    self._chunk({"tool_calls": [{"index": slot, "function": {"arguments": v}}]})
                )
            )
        call = {
            "index": slot,
            "id": event.id,
            "type": "function",
            "function": {"name": event.name, "arguments": ""},
        }
        return self._frame(self._chunk({"tool_calls": [call]}))

    def _done(self, event: Done) -> bytes:
        event = unpaused(event)
        if event.stop_reason not in FINISH_REASONS:
            return self._error(cut_error(event))
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

    def _error(self, event: Error) -> bytes:
        body = {
            "error": {
                "message": event.message,
                "type": openai_error_type(event.kind),
                "code": event.kind.value if event.kind else None,
            }
        }
        # [DONE] after the error: the stream's end is explicit, so no client
        # mistakes it for a dropped connection
        return self._frame(body) + b"data: [DONE]\n\n"

    def keep_alive(self) -> bytes:
        """An SSE comment: ignored by clients, resets idle timers on the way."""
        return _KEEP_ALIVE
