"""The event grammar, written once: the tables below are the whole state machine.

A stream is ``Start``, then blocks, then one terminal event (``Done`` or
``Error``). Every block has a kind (text, thinking, tool call, opaque) and an
index, 0, 1, 2 ... in order of first appearance; a block is started, gets
deltas of its own kind, and ends (an opaque block arrives whole). ``Done``
needs every block closed; ``Error`` may cut blocks off. Nothing follows the
terminal event.

Two machines read these tables, like h11's ``_state.py`` serves both peers:

- `streamfn.core._emitter.Emitter` *writes* streams: providers hand it keyed
  block updates and it produces only the transitions the tables allow (it
  opens and closes blocks with the classes `EVENT_FOR` names; the per-delta
  paths name theirs inline);
- `Grammar` *checks* streams: the fold (`Accumulator`), `check_protocol` and
  the proxy client hold every event against the tables and raise
  `ProtocolViolation` at the first one that breaks them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ._errors import ProtocolViolation
from ._events import (
    Done,
    Error,
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
    event_type,
)

__all__ = [
    "BLOCK",
    "BLOCK_EVENTS",
    "BLOCK_TRANSITIONS",
    "EVENT_FOR",
    "OPAQUE",
    "STREAM_TRANSITIONS",
    "TEXT",
    "THINKING",
    "TOOL",
    "Grammar",
    "ProtocolViolation",
    "check_protocol",
]

# -- the vocabulary ------------------------------------------------------------

#: block kinds (also what `Emitter.open_kind` answers)
TEXT: Final = "text"
THINKING: Final = "thinking"
TOOL: Final = "tool"
OPAQUE: Final = "opaque"
#: how a kind is named in a violation's reason
KIND_NAMES: Final = {TEXT: "text", THINKING: "thinking", TOOL: "tool call", OPAQUE: "opaque"}

#: what a block event does to its block
START: Final = "start"
DELTA: Final = "delta"
END: Final = "end"
WHOLE: Final = "whole"

#: stream states
IDLE: Final = "idle"  # nothing yet: only Start may come
STREAMING: Final = "streaming"
FINISHED: Final = "finished"  # after Done or Error: nothing may come
#: block states (a block with the next free index is NEW)
NEW: Final = "new"
OPEN: Final = "open"
CLOSED: Final = "closed"
#: stands for every block event in `STREAM_TRANSITIONS`
BLOCK: Final = "block event"

# -- the machine -----------------------------------------------------------------

#: every block event: (kind of block, what it does to it)
BLOCK_EVENTS: Final[dict[type, tuple[str, str]]] = {
    TextStart: (TEXT, START),
    TextDelta: (TEXT, DELTA),
    TextEnd: (TEXT, END),
    ThinkingStart: (THINKING, START),
    ThinkingDelta: (THINKING, DELTA),
    ThinkingEnd: (THINKING, END),
    ToolCallStart: (TOOL, START),
    ToolCallDelta: (TOOL, DELTA),
    ToolCallEnd: (TOOL, END),
    OpaqueBlock: (OPAQUE, WHOLE),
}
#: the event class of each (kind, step): what an emitter sends
EVENT_FOR: Final[dict[tuple[str, str], type]] = {role: cls for cls, role in BLOCK_EVENTS.items()}

#: the stream: state -> {event class (or BLOCK) -> next state}
STREAM_TRANSITIONS: Final[dict[str, dict[object, str]]] = {
    IDLE: {Start: STREAMING},
    STREAMING: {BLOCK: STREAMING, Done: FINISHED, Error: FINISHED},
    FINISHED: {},
}
#: terminal events that require every block closed first (an Error may cut blocks off)
NEEDS_CLOSED_BLOCKS: Final[frozenset[type]] = frozenset({Done})

#: each block: state -> {step -> next state}
BLOCK_TRANSITIONS: Final[dict[str, dict[str, str]]] = {
    NEW: {START: OPEN, WHOLE: CLOSED},
    OPEN: {DELTA: OPEN, END: CLOSED},
    CLOSED: {},
}

#: delta event class -> the block kind it extends (`Grammar.check`'s fast path,
#: and `Accumulator.extend`'s, which folds in the same test)
DELTA_KINDS: Final[dict[type, str]] = {
    cls: kind for cls, (kind, step) in BLOCK_EVENTS.items() if step == DELTA
}


def _name(event: object) -> str:
    try:
        return event_type(event)  # type: ignore[arg-type]
    except AttributeError:
        return type(event).__name__


# -- checking ------------------------------------------------------------------


class Grammar:
    """Holds a stream, event by event, to the tables; the one checker of the rules.

    Shared by `Accumulator` (event by event), `check_protocol` (a whole stream)
    and the proxy client, so providers are held to exactly what the fold accepts.
    """

    __slots__ = ("count", "kinds", "open", "state", "violation")

    def __init__(self) -> None:
        self.count = 0
        self.state = IDLE
        self.kinds: list[str] = []  # block kind by index
        self.open: dict[int, str] = {}  # open blocks: index -> kind
        self.violation: ProtocolViolation | None = None

    @property
    def started(self) -> bool:
        return self.state != IDLE

    @property
    def finished(self) -> bool:
        return self.state == FINISHED

    def check(self, event: object) -> None:
        # Most of a stream is deltas to an open block of their kind: accept those
        # without the full rules (an open block means the stream is live and
        # unbroken). Anything else, valid or not, takes the long way.
        kind = DELTA_KINDS.get(type(event))
        if kind is not None:
            index = event.index  # type: ignore[attr-defined]
            if type(index) is int and self.open.get(index) == kind:
                self.count += 1
                return
        if self.violation is not None:
            raise ProtocolViolation(
                f"the stream already broke the protocol ({self.violation.reason}); "
                "no further events are accepted",
                position=self.count,
                event=event,
            )
        reason = self._rule_broken(event)
        if reason is not None:
            self.violation = ProtocolViolation(reason, position=self.count, event=event)
            self.open.clear()  # a broken stream has no live blocks: the fast path stays shut
            raise self.violation
        self.count += 1

    def _rule_broken(self, event: object) -> str | None:
        """Apply ``event``; return why it is not allowed here, or None."""
        cls = type(event)
        role = BLOCK_EVENTS.get(cls)
        following = STREAM_TRANSITIONS[self.state].get(BLOCK if role else cls)
        if following is None:
            return self._stream_reason(event)
        if role is None:
            if cls in NEEDS_CLOSED_BLOCKS and self.open:
                return f"Done while blocks {sorted(self.open)} are still open"
            self.state = following
            if following == FINISHED:
                self.open.clear()
            return None
        return self._block_rule_broken(event, *role)

    def _stream_reason(self, event: object) -> str:
        if self.state == FINISHED:
            return f"{_name(event)} after the terminal event; nothing may follow Done or Error"
        if self.state == IDLE:
            return f"the first event must be Start, got {_name(event)}"
        if type(event) is Start:
            return "a second Start; a stream has exactly one"
        return f"{type(event).__name__} is not a streamfn event"

    def _block_rule_broken(self, event: object, kind: str, step: str) -> str | None:
        index = getattr(event, "index", None)
        if type(index) is not int:
            return f"{_name(event)} has a non-integer index {index!r}"
        known = len(self.kinds)
        if index == known:
            state = NEW
        elif 0 <= index < known:
            state = OPEN if index in self.open else CLOSED
            if step in (DELTA, END) and self.kinds[index] != kind:
                return (
                    f"{_name(event)} for block {index}, "
                    f"which is a {KIND_NAMES[self.kinds[index]]} block"
                )
        else:
            state = ""  # an index no block can have yet
        following = BLOCK_TRANSITIONS.get(state, {}).get(step)
        if following is None:
            return _block_reason(event, index, step, state, known)
        if state == NEW:
            self.kinds.append(kind)
        if following == OPEN:
            self.open[index] = kind
        else:
            self.open.pop(index, None)
        return None


def _block_reason(event: object, index: int, step: str, state: str, known: int) -> str:
    if step in (START, WHOLE):
        if state in (OPEN, CLOSED):
            return f"{_name(event)} for block {index}, which was already started"
        return (
            f"{_name(event)} for block {index}, expected block {known}: "
            "indices are 0, 1, 2 ... in order of first appearance"
        )
    if state == CLOSED:
        return f"{_name(event)} for block {index}, which is already closed"
    return f"{_name(event)} for block {index}, which was never started"


def check_protocol(events: Iterable[Event]) -> None:
    """Raise `ProtocolViolation` unless ``events`` is one complete, valid stream.

    Valid means: exactly one `Start`, first; block indices 0, 1, 2 ... in
    order of first appearance; every delta and end for an open block of the
    same kind; every block closed before `Done`; exactly one terminal event
    (`Done` or `Error`), last.
    """
    grammar = Grammar()
    for event in events:
        grammar.check(event)
    if not grammar.finished:
        raise ProtocolViolation(
            "the stream has no terminal event (Done or Error)"
            if grammar.started
            else "the stream is empty; it must begin with Start",
            position=grammar.count,
            event=None,
        )


# -- writing ---------------------------------------------------------------------
