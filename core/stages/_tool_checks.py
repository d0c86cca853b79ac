"""Tool calls checked against their tools' schemas, and the known glitches repaired.

A model's tool call is only worth running if its arguments are what the tool
declared (`Tool.parameters`, a JSON Schema). `ToolCallChecks` looks at each call
when it is complete (its `ToolCallEnd`; a call an error cut off never gets one,
so it is never checked nor repaired) and says on that event:

1. **Repairs** made deterministically, for glitches providers are known to
   produce, each one named in ``ToolCallEnd.repairs``:

   - two JSON objects concatenated in one arguments string (``{}{"city": "Paris"}``,
     seen from Gemini's OpenAI-compatible endpoint and Hermes-style models): when
     all of them but one are empty or the same object, that one is kept;
     different objects are not guessed between, nor more than `MAX_CONCATENATED`
     of them (the check reads the text once, whatever an upstream sends);
   - text after the arguments object (``{"city": "Paris"}</tool_call>``): dropped,
     unless it could be the start of more JSON (``{``, ``[``, a quote), which is
     what arguments cut short look like, or holds another object (``, {...}``);
   - a tool name with whitespace around it (``" get_weather"``).

2. **Errors**: where the (repaired) arguments break the tool's schema
   (`streamfn.core.json._schema_check`), arguments that are not one JSON object, or a
   name no declared tool has. An agent answers the model with these instead of
   running the call.

3. The rest goes to the caller's hook, ``Options.repair_tool_call``: called with
   the call (after the repairs above) and its errors, it returns a replacement
   `ToolCall` (its name and ``arguments`` are used, and checked again) or None to
   leave the call as it is.

4. **Cut calls are not repaired.** Arguments cut by the answer's token limit
   (``{"path": "/home/user`` then ``Done`` with stop reason ``length``) look like
   a glitch, and a lenient repair would turn them into a valid call that was never
   made. So a call with anything to repair or report is held, with the events after
   it, until the answer goes on (more text, thinking or another call: then it was
   not cut, and what is held stays a few events) or the stream's terminal event: on ``Done(LENGTH)`` or an `Error` a held
   call whose arguments do not parse, and are no known glitch, is marked ``cut at max_tokens`` (or cut by an
   error) and nothing repairs it, the hook included. A valid call passes at once.

The fold (`Accumulator`) puts the result on the `ToolCall`: ``name`` and
``arguments`` as repaired (the streamed text kept in ``streamed_arguments``),
``repairs``, ``errors``. The shells apply this to every stream, whether its context
declares function tools or not (`streamfn.client._tool_checks.with_checked_tool_calls`):
a call of a tool never declared is flagged the same way with no tools declared as
with others declared, so no client runs it unchecked. The cost is one pass over each
call's arguments at its end, and all the schema checks of one answer share one step
budget (`streamfn.core.json._check_budget.CheckBudget`), checked in slices the shells
pause between.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any, Final, TypeAlias

import msgspec

from .._accumulate import WholeToolCalls, parse_arguments
from .._events import (
    Done,
    Error,
    Event,
    StopReason,
    TextDelta,
    TextStart,
    ThinkingDelta,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from .._messages import Tool, ToolCall
from ..json._check_budget import CheckBudget, run_through
from ..json._schema_check import SchemaMismatch, checking

__all__ = [
    "MAX_CONCATENATED",
    "ToolCallChecks",
    "ToolCallRepair",
    "repair_arguments",
]

#: ``Options.repair_tool_call``: (the call, its errors) -> a replacement call, or None
ToolCallRepair: TypeAlias = Callable[[ToolCall, list[SchemaMismatch]], ToolCall | None]

_DECODER: Final = json.JSONDecoder()
#: JSON's blanks between values
_BLANKS: Final = re.compile(r"[ \t\r\n]*")
#: the most JSON values one arguments string may hold and still be repaired: the
#: glitch is two or three objects, and a string of thousands (an upstream or a model
#: in a loop) must cost no more than reading it once
MAX_CONCATENATED: Final = 8
#: what text after a value starts with when it may be more (cut) JSON, not prose
_MORE_JSON: Final = frozenset('{["')
_SHOWN: Final = 40
#: events that are more of the answer: the model went on after the calls held so far,
#: so no token limit cut them (only the answer's last call can be cut), and they are
#: released at once: what is held stays a few ends, whatever an upstream sends after
_MORE_OUTPUT: Final = (
    TextStart,
    TextDelta,
    ThinkingStart,
    ThinkingDelta,
    ToolCallStart,
    ToolCallDelta,
)
#: the deltas of prose and thinking (most of a stream): with no call held, `feeding`
#: passes them on after one set lookup, without the isinstance chain of the others
_PLAIN_DELTAS: Final = frozenset({TextDelta, ThinkingDelta})


def _after_blanks(text: str, at: int) -> int:
    """The first index from ``at`` on that is not a JSON blank (``len(text)`` if none)."""
    blanks = _BLANKS.match(text, at)
    return at if blanks is None else blanks.end()


def _values(text: str) -> tuple[list[tuple[Any, str]], str] | None:
    """The JSON values at the start of ``text`` one after another (each with its exact
    text), and what follows the last one (from its first non-blank character); None
    past `MAX_CONCATENATED` values (no glitch repeats that often). One pass: each
    value is decoded once and the blanks between them are skipped in place."""
    out: list[tuple[Any, str]] = []
    at = _after_blanks(text, 0)
    while at < len(text):
        if len(out) == MAX_CONCATENATED:
            return None
        try:
            value, end = _DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):
            break
        out.append((value, text[at:end]))
        at = _after_blanks(text, end)
    return out, text[at:]


def repair_arguments(text: str) -> tuple[str, list[str]] | None:
    """The arguments text with the known glitches repaired, and the repairs in words;
    None when it needs none (it is one JSON object, or empty) or none applies."""
    if not text.strip() or parse_arguments(text)[1] is None:
        return None
    found = _values(text)
    if found is None:
        return None
    values, rest = found
    if not values or not all(isinstance(v, dict) for v, _ in values):
        return None
    repairs: list[str] = []
    kept = values[0][1]
    if len(values) > 1:
        distinct = {msgspec.json.encode(v) for v, _ in values if v}
        if len(distinct) > 1:
            return None  # different objects: which one was meant is not ours to guess
        kept = next((raw for v, raw in values if v), values[0][1])
        repairs.append(
            f"{len(values)} JSON objects were concatenated in the arguments; "
            "kept the one with content"
        )
    if rest:
        if rest[0] in _MORE_JSON or "{" in rest:
            return None  # more JSON that does not parse (cut, broken, or another call
            # after a comma): not a glitch, and not ours to drop
        shown = rest if len(rest) <= _SHOWN else rest[:_SHOWN] + "..."
        repairs.append(f"dropped the text after the arguments object: {shown!r}")
    if not repairs:
        return None  # one value our decoder reads and the fold's does not (NaN ...): not ours
    return kept, repairs


#: why a call the answer's end cut is not repaired, by what cut it
_CUT_BY_LENGTH: Final = (
    "cut at max_tokens: the answer reached its token limit inside this call, so its "
    "arguments are incomplete; it was not repaired (raise max_tokens and ask again)"
)
_CUT_BY_ERROR: Final = (
    "cut by an error: the answer broke off inside this call, so its arguments are "
    "incomplete; it was not repaired"
)


class _Held(msgspec.Struct, gc=False):
    """A call whose end had something to say, held until the stream's end is known."""

    end: ToolCallEnd
    ident: str
    name: str
    streamed: str


class ToolCallChecks:
    """Checks and repairs tool calls; `feed` takes a batch of events and returns the
    ones to pass on (the `ToolCallEnd` of a call with something to say carries it).

    A call that needs a repair or has errors is held, with every event after it,
    until more output shows the answer went on past it, or the stream's terminal
    event says how the answer ended: a call the answer's
    token limit (``Done`` with `StopReason.LENGTH`) or an `Error` cut off has
    unparsable arguments because they are incomplete, and repairing those (least of
    all by the caller's hook) would turn a cut call into a valid one. Such a call is
    marked cut, with no repair. A call with nothing to say passes at once.

    One instance checks one answer, and every schema check of it draws on one
    `CheckBudget`: an answer of many calls costs at most one budget, not one per
    call (a call checked after the budget ran out does not pass). `feeding` and
    `finishing` are `feed` and `finish` pausing between slices of that work, so an
    event loop can serve others while a large answer is checked. With no tools
    declared every call is flagged: it names no declared tool.
    """

    def __init__(
        self,
        tools: Sequence[Tool],
        repair: ToolCallRepair | None = None,
        budget: CheckBudget | None = None,
    ) -> None:
        self._schemas = {tool.name: tool.parameters for tool in tools}
        self._repair = repair
        self._budget = CheckBudget() if budget is None else budget
        self._calls = WholeToolCalls()
        self._held: list[Event | _Held] = []
        #: the errors of the held calls' texts, by (name, arguments text): a held call
        #: is judged at its end and again when released, and charged once
        self._judged: dict[tuple[str, str], list[SchemaMismatch]] = {}

    def feed(self, events: Iterable[Event]) -> list[Event]:
        return run_through(self.feeding(events))

    def finish(self) -> list[Event]:
        """What is still held when the stream ended without a terminal event (cut)."""
        return run_through(self.finishing())

    def feeding(self, events: Iterable[Event]) -> Generator[None, None, list[Event]]:
        """`feed`, pausing between slices of the schema checks."""
        out: list[Event] = []
        for event in events:
            if type(event) in _PLAIN_DELTAS and not self._held:
                out.append(event)  # the common case: nothing to check, nothing held
                continue
            item: Event | _Held = event
            if isinstance(event, (ToolCallDelta, ToolCallStart)):
                self._calls.add(event)
            elif isinstance(event, ToolCallEnd):
                call = self._calls.streamed(event)
                if call is not None and (yield from self._needs_a_look(call[1], call[2])):
                    item = _Held(event, *call)
            elif isinstance(event, Error):
                self._calls.clear()  # calls it cut open are never checked nor repaired
            if self._held and isinstance(event, _MORE_OUTPUT):
                out += yield from self._flush("")  # the held calls were complete
            if not self._held and item is event:
                out.append(event)  # nothing held: the common case costs nothing more
                continue
            self._held.append(item)
            if isinstance(event, (Done, Error)):
                out += yield from self._release(event)
        return out

    def finishing(self) -> Generator[None, None, list[Event]]:
        """`finish`, pausing between slices of the schema checks."""
        if not self._held:
            return []
        return (yield from self._release(None))

    def _needs_a_look(self, name: str, streamed: str) -> Generator[None, None, bool]:
        if name.strip() != name:
            return True
        return bool((yield from self._judged_text(name, streamed)))

    def _release(self, terminal: Done | Error | None) -> Generator[None, None, list[Event]]:
        cut = _CUT_BY_ERROR
        if isinstance(terminal, Done):
            cut = _CUT_BY_LENGTH if terminal.stop_reason == StopReason.LENGTH else ""
        self._calls.clear()
        return (yield from self._flush(cut))

    def _flush(self, cut: str) -> Generator[None, None, list[Event]]:
        """The held events, each held call's end said (``cut``: see `_end`)."""
        held, self._held = self._held, []
        out: list[Event] = []
        for item in held:
            out.append((yield from self._end(item, cut)) if isinstance(item, _Held) else item)
        self._judged.clear()
        return out

    def errors(
        self, name: str, arguments: dict[str, Any], parse_error: str | None
    ) -> list[SchemaMismatch]:
        """Why a call of ``name`` with these arguments should not run (empty: it may)."""
        return run_through(self._errors(name, arguments, parse_error))

    def _errors(
        self, name: str, arguments: dict[str, Any], parse_error: str | None
    ) -> Generator[None, None, list[SchemaMismatch]]:
        if parse_error is not None:
            return [SchemaMismatch("", parse_error)]
        schema = self._schemas.get(name)
        if schema is None:
            declared = ", ".join(sorted(self._schemas)) or "none"
            return [
                SchemaMismatch("", f"no tool named {name!r} was declared (declared: {declared})")
            ]
        return (yield from checking(arguments, schema, budget=self._budget))

    def _judged_text(self, name: str, text: str) -> Generator[None, None, list[SchemaMismatch]]:
        """The errors of a call of ``name`` with the arguments ``text``, judged once."""
        found = self._judged.get((name, text))
        if found is None:
            arguments, parse_error = parse_arguments(text)
            found = yield from self._errors(name, arguments, parse_error)
            self._judged[(name, text)] = found
        return found

    def _end(self, held: _Held, cut: str) -> Generator[None, None, ToolCallEnd]:
        """The held call's end with its repairs and errors; ``cut`` (when the answer
        was cut) marks arguments no known glitch explains (incomplete ones) as cut and
        repairs nothing of that call."""
        parse_error = parse_arguments(held.streamed)[1]
        if cut and parse_error is not None and repair_arguments(held.streamed) is None:
            errors = (SchemaMismatch("", parse_error), SchemaMismatch("", cut))
            return msgspec.structs.replace(held.end, errors=errors)
        return (yield from self._repaired(held.end, held.ident, held.name, held.streamed))

    def _repaired(
        self, event: ToolCallEnd, ident: str, name: str, streamed: str
    ) -> Generator[None, None, ToolCallEnd]:
        repairs: list[str] = []
        new_name: str | None = None
        if name.strip() and name.strip() != name:
            new_name = name.strip()
            repairs.append(f"removed the whitespace around the tool name {name!r}")
        new_arguments: str | None = None
        repaired = repair_arguments(streamed)
        if repaired is not None:
            new_arguments, notes = repaired
            repairs += notes
        text = streamed if new_arguments is None else new_arguments
        arguments, parse_error = parse_arguments(text)
        errors = yield from self._judged_text(new_name or name, text)
        if errors and self._repair is not None:
            call = ToolCall(
                id=ident,
                name=new_name or name,
                arguments=arguments,
                arguments_json=text,
                parse_error=parse_error,
            )
            replacement = self._repair(call, list(errors))
            if replacement is not None:
                if replacement.name != name:
                    new_name = replacement.name
                new_arguments = msgspec.json.encode(replacement.arguments).decode()
                repairs.append("replaced by Options.repair_tool_call")
                errors = yield from self._errors(replacement.name, replacement.arguments, None)
        if new_name is None and new_arguments is None and not errors:
            return event
        return msgspec.structs.replace(
            event,
            name=new_name,
            arguments=new_arguments,
            repairs=tuple(repairs),
            errors=tuple(errors),
        )
