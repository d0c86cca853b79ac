"""Events -> the Vercel AI SDK UI message stream (what ``useChat`` reads).

The protocol (version ``v1``, announced by the ``x-vercel-ai-ui-message-stream``
response header) is SSE whose every ``data:`` line is one JSON part with a
``type``, ended by ``data: [DONE]``. Our events map one to one:

- `Start` -> ``start`` (``messageId``) and ``start-step``;
- a text block -> ``text-start`` / ``text-delta`` (``delta``) / ``text-end``,
  a thinking block -> ``reasoning-start`` / ``reasoning-delta`` / ``reasoning-end``,
  each keyed by an ``id`` made from the block's index;
- a tool call -> ``tool-input-start`` (``toolCallId``, ``toolName``),
  ``tool-input-delta`` (``inputTextDelta``), then at its end
  ``tool-input-available`` with the parsed ``input``, or ``tool-input-error``
  (``errorText``, the raw text as ``input``) when the arguments are not a JSON
  object;
- `Done` -> ``finish-step`` and ``finish`` with ``finishReason``
  (``stop``, ``length``, ``tool-calls``);
- `Error` -> ``error`` (``errorText``): never a ``finish``, so a cut answer is
  not shown as a whole one (a tool call it cut stays ``input-streaming``).

What the protocol has no part for is left out: signatures, opaque provider
blocks (server-tool results: the server runs no client tools, so it sends no
``tool-output-*`` part), citations and token usage.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..accumulate import parse_arguments
from ..events import (
    Done,
    Error,
    Event,
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
)
from ..wire.sse import encode_sse

__all__ = [
    "FINISH_REASONS",
    "UI_STREAM_DONE",
    "UI_STREAM_HEADER",
    "UIMessageStreamEncoder",
    "ui_part_id",
]

#: the response header a UI message stream carries (the client checks the protocol by it)
UI_STREAM_HEADER: Final = (b"x-vercel-ai-ui-message-stream", b"v1")
#: the last frame of every stream
UI_STREAM_DONE: Final = b"data: [DONE]\n\n"

#: our stop reasons -> the ``finish`` part's ``finishReason``
FINISH_REASONS: Final = {
    StopReason.STOP: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_USE: "tool-calls",
    StopReason.ERROR: "error",
    StopReason.ABORTED: "other",
}

_json: Final = msgspec.json.Encoder()
_KEEP_ALIVE: Final = encode_sse(comment="keep-alive")


def ui_part_id(kind: str, index: int) -> str:
    """The ``id`` of a text or reasoning part: its kind and our block index."""
    return f"{kind}-{index}"


def _part(obj: dict[str, Any]) -> bytes:
    return b"data: " + _json.encode(obj) + b"\n\n"


class UIMessageStreamEncoder:
    """Our events in, UI message stream parts out (see the module docstring)."""

    def __init__(self, *, message_id: str) -> None:
        self.message_id = message_id
        #: open tool calls: index -> (tool call id, tool name, argument fragments)
        self._calls: dict[int, tuple[str, str, list[str]]] = {}

    def keep_alive(self) -> bytes:
        return _KEEP_ALIVE

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            return _part(
                {"type": "text-delta", "id": ui_part_id("text", event.index), "delta": event.delta}
            )
        if isinstance(event, ThinkingDelta):
            return _part(
                {
                    "type": "reasoning-delta",
                    "id": ui_part_id("reasoning", event.index),
                    "delta": event.delta,
                }
            )
        if isinstance(event, ToolCallDelta):
            call = self._calls.get(event.index)
            if call is None:
                return b""
            call[2].append(event.delta)
            return _part(
                {"type": "tool-input-delta", "toolCallId": call[0], "inputTextDelta": event.delta}
            )
        if isinstance(event, (TextStart, TextEnd)):
            kind = "text-start" if isinstance(event, TextStart) else "text-end"
            return _part({"type": kind, "id": ui_part_id("text", event.index)})
        if isinstance(event, (ThinkingStart, ThinkingEnd)):
            kind = "reasoning-start" if isinstance(event, ThinkingStart) else "reasoning-end"
            return _part({"type": kind, "id": ui_part_id("reasoning", event.index)})
        if isinstance(event, ToolCallStart):
            self._calls[event.index] = (event.id, event.name, [])
            return _part(
                {"type": "tool-input-start", "toolCallId": event.id, "toolName": event.name}
            )
        if isinstance(event, ToolCallEnd):
            return self._tool_end(event.index)
        if isinstance(event, Start):
            return _part({"type": "start", "messageId": self.message_id}) + _part(
                {"type": "start-step"}
            )
        if isinstance(event, Done):
            finish = {"type": "finish", "finishReason": FINISH_REASONS[event.stop_reason]}
            return _part({"type": "finish-step"}) + _part(finish) + UI_STREAM_DONE
        if isinstance(event, Error):
            return _part({"type": "error", "errorText": event.message}) + UI_STREAM_DONE
        return b""  # opaque blocks: no part for them

    def _tool_end(self, index: int) -> bytes:
        call = self._calls.pop(index, None)
        if call is None:
            return b""
        call_id, name, fragments = call
        text = "".join(fragments)
        arguments, problem = parse_arguments(text)
        if problem is None:
            return _part(
                {
                    "type": "tool-input-available",
                    "toolCallId": call_id,
                    "toolName": name,
                    "input": arguments,
                }
            )
        return _part(
            {
                "type": "tool-input-error",
                "toolCallId": call_id,
                "toolName": name,
                "input": text,
                "errorText": problem,
            }
        )
