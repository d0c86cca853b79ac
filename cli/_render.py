"""How `streamfn chat` draws a stream for people (``--json`` prints the events instead)."""

from __future__ import annotations

from typing import IO, Final

from streamfn.core import (
    Done,
    Error,
    Event,
    TextDelta,
    TextEnd,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)

__all__ = ["Renderer"]


class Renderer:
    """Draws a stream for people: text as it comes, thinking dimmed, tool calls inline."""

    #: between thinking and the answer when there is no colour to tell them apart
    SEPARATOR: Final = "---\n"

    def __init__(self, out: IO[str], *, color: bool) -> None:
        self.out = out
        self.color = color
        self.dim, self.reset = ("\x1b[2m", "\x1b[0m") if color else ("", "")
        self.at_line_start = True

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.at_line_start = text.endswith("\n")

    def newline(self) -> None:
        if not self.at_line_start:
            self.write("\n")

    def event(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self.write(event.delta)
        elif isinstance(event, ThinkingStart):
            self.newline()
            self.write(self.dim + "thinking: ")
        elif isinstance(event, ThinkingDelta):
            self.write(event.delta)
        elif isinstance(event, ThinkingEnd):
            self.write(self.reset)
            self.newline()
            if not self.color:
                self.write(self.SEPARATOR)
        elif isinstance(event, TextEnd):
            pass
        elif isinstance(event, ToolCallStart):
            self.newline()
            self.write(f"{self.dim}-> {event.name}(")
        elif isinstance(event, ToolCallDelta):
            self.write(event.delta)
        elif isinstance(event, ToolCallEnd):
            self.write(")" + self.reset + "\n")
        elif isinstance(event, (Done, Error)):
            self.newline()
