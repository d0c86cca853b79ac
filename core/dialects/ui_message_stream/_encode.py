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
  (``errorText``) when the arguments are not a JSON object or the tool-call
  checks found them breaking the tool's schema (`streamfn.core.stages._tool_checks`:
  a front end must not run such a call); the name and arguments are the ones
  those checks repaired, where they did;
- `Done` -> ``finish-step`` and ``finish`` with ``finishReason``
  (``stop``, ``length``, ``tool-calls``);
- `Error`, and a `Done` whose stop reason says the answer did not finish
  (`streamfn.core.dialects._cut`) -> ``error`` (``errorText``): never a ``finish``,
  so a cut answer is not shown as a whole one (a tool call it cut stays
  ``input-streaming``).

What the protocol has no part for is left out: signatures, opaque provider
blocks (server-tool results: the server runs no client tools, so it sends no
``tool-output-*`` part), citations and token usage.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from streamfn.core._accumulate import WholeToolCalls, call_problem, parse_arguments
from streamfn.core._events import (
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
)
from streamfn.core.dialects._cut import cut_error, finish_word, unpaused
from streamfn.core.dialects.ui_message_stream._tables import FINISH_REASONS
from streamfn.core.wire._sse import encode_sse

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
        self._calls = WholeToolCalls()

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
            call_id = self._calls.add(event)
            if call_id is None:
                return b""
            return _part(
                {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": event.delta}
            )
        if isinstance(event, (TextStart, TextEnd)):
            kind = "text-start" if isinstance(event, TextStart) else "text-end"
            return _part({"type": kind, "id": ui_part_id("text", event.index)})
        if isinstance(event, (ThinkingStart, ThinkingEnd)):
            kind = "reasoning-start" if isinstance(event, ThinkingStart) else "reasoning-end"
            return _part({"type": kind, "id": ui_part_id("reasoning", event.index)})
        if isinstance(event, ToolCallStart):
            self._calls.add(event)
            return _part(
                {"type": "tool-input-start", "toolCallId": event.id, "toolName": event.name}
            )
        if isinstance(event, ToolCallEnd):
            return self._tool_end(event)
        if isinstance(event, Start):
            return _part({"type": "start", "messageId": self.message_id}) + _part(
                {"type": "start-step"}
            )
        if isinstance(event, Done):
            event = unpaused(event)  # a paused turn finishes with "length", not "stop"
        if isinstance(event, Done) and event.stop_reason not in FINISH_REASONS:
            event = cut_error(event)  # a cut answer is no "finish"
        if isinstance(event, Done):
            reason = finish_word(FINISH_REASONS, event.stop_reason)
            finish = {"type": "finish", "finishReason": reason}
            return _part({"type": "finish-step"}) + _part(finish) + UI_STREAM_DONE
        if isinstance(event, Error):
            return _part({"type": "error", "errorText": event.message}) + UI_STREAM_DONE
        return b""  # opaque blocks: no part for them

    def _tool_end(self, event: ToolCallEnd) -> bytes:
        call = self._calls.end_text(event)  # as the tool-call checks repaired it
        if call is None:
            return b""
        call_id, name, text = call
        arguments, unparsed = parse_arguments(text)
        problem = call_problem(event, unparsed)
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
                "input": text if unparsed is not None else arguments,
                "errorText": problem,
            }
        )
