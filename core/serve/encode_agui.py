"""Events -> the AG-UI event protocol (what an AG-UI client such as ``HttpAgent`` reads).

AG-UI sends one JSON event per SSE ``data:`` line, each with a ``type`` in
capitals and camelCase fields. Our events map one to one:

- `Start` -> ``RUN_STARTED`` (``threadId``, ``runId``: the client's own);
- a text block -> ``TEXT_MESSAGE_START`` (``messageId``, ``role: assistant``) /
  ``TEXT_MESSAGE_CONTENT`` (``delta``) / ``TEXT_MESSAGE_END``;
- a thinking block -> ``REASONING_START``, ``REASONING_MESSAGE_START``
  (``role: reasoning``), ``REASONING_MESSAGE_CONTENT``, its signature (when the
  provider gave one) as ``REASONING_ENCRYPTED_VALUE``, ``REASONING_MESSAGE_END``,
  then ``REASONING_END``;
- a tool call -> ``TOOL_CALL_START`` (``toolCallId``, ``toolCallName``,
  ``parentMessageId``) / ``TOOL_CALL_ARGS`` (``delta``) / ``TOOL_CALL_END``;
- `Done` -> ``RUN_FINISHED`` with a success ``outcome`` naming the tool calls the
  client is to answer (``pendingToolCallIds``), token ``usage``, and the stop
  reason in ``metadata.stopReason``;
- `Error` -> ``RUN_ERROR`` (``message``, ``code``: the error kind): never a
  ``RUN_FINISHED``, so a cut answer is not shown as a whole one.

Message ids: the answer's first text block carries the message id the server
drew (tool calls name it as their parent); later text blocks add their index.
Empty deltas are not sent (the protocol requires a non-empty ``delta``).
Opaque provider blocks have no event and are left out.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..events import (
    Done,
    Error,
    Event,
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
from ..wire.sse import encode_sse

__all__ = ["AGUIEncoder", "agui_usage"]

_json: Final = msgspec.json.Encoder()
_KEEP_ALIVE: Final = encode_sse(comment="keep-alive")


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + _json.encode(obj) + b"\n\n"


def agui_usage(usage: Usage) -> dict[str, int]:
    """`Usage` in AG-UI's accounting: totals for input and output, cache and reasoning
    counts as parts of them (our ``input`` excludes cached tokens, theirs includes them)."""
    prompt = usage.input + usage.cache_read + usage.cache_write
    return {
        "inputTokens": prompt,
        "outputTokens": usage.output,
        "totalTokens": prompt + usage.output,
        "reasoningTokens": usage.reasoning,
        "cachedInputTokens": usage.cache_read,
        "cacheWriteInputTokens": usage.cache_write,
    }


class AGUIEncoder:
    """Our events in, AG-UI events out (see the module docstring)."""

    def __init__(self, *, thread_id: str, run_id: str, message_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.message_id = message_id
        self._texts: dict[int, str] = {}  # text block index -> its message id
        self._first_text = True
        self._calls: dict[int, str] = {}  # tool block index -> its tool call id
        self._called: list[str] = []

    def keep_alive(self) -> bytes:
        return _KEEP_ALIVE

    def _reasoning_id(self, index: int) -> str:
        return f"{self.message_id}-reasoning-{index}"

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            if not event.delta:
                return b""
            message = self._texts.get(event.index, self.message_id)
            return _event(
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": event.delta}
            )
        if isinstance(event, ThinkingDelta):
            if not event.delta:
                return b""
            rid = self._reasoning_id(event.index)
            return _event(
                {"type": "REASONING_MESSAGE_CONTENT", "messageId": rid, "delta": event.delta}
            )
        if isinstance(event, ToolCallDelta):
            call = self._calls.get(event.index)
            if call is None or not event.delta:
                return b""
            return _event({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": event.delta})
        return self._structure(event)

    def _structure(self, event: Event) -> bytes:
        if isinstance(event, TextStart):
            message = self.message_id if self._first_text else f"{self.message_id}-{event.index}"
            self._first_text = False
            self._texts[event.index] = message
            return _event({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"})
        if isinstance(event, TextEnd):
            message = self._texts.pop(event.index, self.message_id)
            return _event({"type": "TEXT_MESSAGE_END", "messageId": message})
        if isinstance(event, ThinkingStart):
            rid = self._reasoning_id(event.index)
            return _event({"type": "REASONING_START", "messageId": rid}) + _event(
                {"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"}
            )
        if isinstance(event, ThinkingEnd):
            rid = self._reasoning_id(event.index)
            out = b""
            if event.signature:
                out += _event(
                    {
                        "type": "REASONING_ENCRYPTED_VALUE",
                        "subtype": "message",
                        "entityId": rid,
                        "encryptedValue": event.signature,
                    }
                )
            out += _event({"type": "REASONING_MESSAGE_END", "messageId": rid})
            return out + _event({"type": "REASONING_END", "messageId": rid})
        if isinstance(event, ToolCallStart):
            self._calls[event.index] = event.id
            self._called.append(event.id)
            return _event(
                {
                    "type": "TOOL_CALL_START",
                    "toolCallId": event.id,
                    "toolCallName": event.name,
                    "parentMessageId": self.message_id,
                }
            )
        if isinstance(event, ToolCallEnd):
            call = self._calls.pop(event.index, None)
            return b"" if call is None else _event({"type": "TOOL_CALL_END", "toolCallId": call})
        return self._run_event(event)

    def _run_event(self, event: Event) -> bytes:
        run = {"threadId": self.thread_id, "runId": self.run_id}
        if isinstance(event, Start):
            return _event({"type": "RUN_STARTED", **run})
        if isinstance(event, Done):
            outcome: dict[str, Any] = {"type": "success"}
            if self._called:
                outcome["pendingToolCallIds"] = list(self._called)
            return _event(
                {
                    "type": "RUN_FINISHED",
                    **run,
                    "outcome": outcome,
                    "usage": [agui_usage(event.usage)],
                    "metadata": {"stopReason": event.stop_reason.value},
                }
            )
        if isinstance(event, Error):
            error: dict[str, Any] = {"type": "RUN_ERROR", "message": event.message}
            if event.kind is not None:
                error["code"] = event.kind.value
            return _event(error)
        return b""  # opaque blocks: no event for them
