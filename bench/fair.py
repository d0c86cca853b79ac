"""The two references every provider benchmark reports, and the answer they all must give.

A ratio is only as honest as what it divides by. Two references, both decoding
the same bytes into the same answer:

- ``floor``: msgspec alone. The ``data:`` payloads are split out of the body
  before the clock starts; the timed part decodes each payload into the
  smallest struct that still holds the answer (text, thinking, tool-call
  arguments) and appends the strings. No framing, no events, no state machine:
  nothing a streaming decoder does can cost less.
- ``split``: the tight split-based streaming reference. Per chunk, one C-level
  ``split(b"\\n")`` with the partial last line carried over, ``data: `` lines
  sliced and decoded like the floor. No CR handling, no caps, no spec work.

`Answer` is what every contender must agree on before any time is printed:
the joined text, the joined thinking and each tool call's joined arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import msgspec

from streamfn.core._events import Event, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallStart
from streamfn.core._messages import AssistantMessage, TextContent, ThinkingContent, ToolCall

__all__ = [
    "Answer",
    "answer_of_events",
    "answer_of_message",
    "floor",
    "payloads",
    "split",
]

#: (text, thinking, arguments of each tool call in order)
Answer = tuple[str, str, tuple[str, ...]]


class _Collect:
    """Strings gathered in wire order; the tool calls keyed by their wire index."""

    __slots__ = ("text", "thinking", "tools")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.tools: dict[int, list[str]] = {}

    def answer(self) -> Answer:
        tools = tuple("".join(self.tools[k]) for k in sorted(self.tools))
        return "".join(self.text), "".join(self.thinking), tools


# -- minimal structs -----------------------------------------------------------


class _OFunction(msgspec.Struct, gc=False):
    arguments: str | None = None


class _OToolCall(msgspec.Struct, gc=False):
    index: int = 0
    function: _OFunction | None = None


class _ODelta(msgspec.Struct, gc=False):
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[_OToolCall] | None = None


class _OChoice(msgspec.Struct, gc=False):
    delta: _ODelta | None = None


class _OChunk(msgspec.Struct, gc=False):
    choices: list[_OChoice] | None = None


class _ADelta(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None


class _AEvent(msgspec.Struct, gc=False):
    type: str
    index: int = 0
    delta: _ADelta | None = None


def _openai_sink() -> tuple[_Collect, Callable[[bytes], None]]:
    decode = msgspec.json.Decoder(_OChunk).decode
    out = _Collect()
    text, thinking, tools = out.text, out.thinking, out.tools

    def sink(payload: bytes) -> None:
        if payload == b"[DONE]":
            return
        for choice in decode(payload).choices or ():
            delta = choice.delta
            if delta is None:
                continue
            if delta.content:
                text.append(delta.content)
            elif delta.reasoning_content:
                thinking.append(delta.reasoning_content)
            elif delta.tool_calls:
                for call in delta.tool_calls:
                    if call.function is not None and call.function.arguments is not None:
                        tools.setdefault(call.index, []).append(call.function.arguments)

    return out, sink


def _anthropic_sink() -> tuple[_Collect, Callable[[bytes], None]]:
    decode = msgspec.json.Decoder(_AEvent).decode
    out = _Collect()
    text, thinking, tools = out.text, out.thinking, out.tools

    def sink(payload: bytes) -> None:
        event = decode(payload)
        delta = event.delta
        if event.type != "content_block_delta" or delta is None:
            return
        kind = delta.type
        if kind == "text_delta":
            text.append(delta.text or "")
        elif kind == "thinking_delta":
            thinking.append(delta.thinking or "")
        elif kind == "input_json_delta":
            tools.setdefault(event.index, []).append(delta.partial_json or "")

    return out, sink


_SINKS = {"openai": _openai_sink, "anthropic": _anthropic_sink}


def payloads(body: bytes) -> list[bytes]:
    """The ``data:`` payloads of a body with single-line events (done before timing)."""
    return [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]


def floor(pre_split: Sequence[bytes], provider: str) -> Answer:
    out, sink = _SINKS[provider]()
    for payload in pre_split:
        sink(payload)
    return out.answer()


def split(chunks: Iterable[bytes], provider: str) -> Answer:
    out, sink = _SINKS[provider]()
    tail = b""
    for chunk in chunks:
        lines = (tail + chunk if tail else chunk).split(b"\n")
        tail = lines.pop()
        for line in lines:
            if line[:6] == b"data: ":
                sink(line[6:])
    if tail[:6] == b"data: ":
        sink(tail[6:])
    return out.answer()


def answer_of_events(events: Iterable[Event]) -> Answer:
    out = _Collect()
    tool_index: dict[int, int] = {}
    for event in events:
        kind = type(event)
        if kind is TextDelta:
            out.text.append(event.delta)  # type: ignore[union-attr]
        elif kind is ThinkingDelta:
            out.thinking.append(event.delta)  # type: ignore[union-attr]
        elif kind is ToolCallStart:
            tool_index[event.index] = len(tool_index)  # type: ignore[union-attr]
            out.tools[tool_index[event.index]] = []  # type: ignore[union-attr]
        elif kind is ToolCallDelta:
            out.tools[tool_index[event.index]].append(event.delta)  # type: ignore[union-attr]
    return out.answer()


def answer_of_message(message: AssistantMessage) -> Answer:
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    thinking = "".join(b.thinking for b in message.content if isinstance(b, ThinkingContent))
    tools = tuple(b.arguments_json for b in message.content if isinstance(b, ToolCall))
    return text, thinking, tools
