"""The message is a fold over the events: `accumulate` and the incremental `Accumulator`.

Events never carry a copy of the partial message, so whoever wants the
message folds the events. An `Accumulator` is fed every event as it arrives;
``acc.message`` is the live `AssistantMessage` at any moment and the final
message after `Done` or `Error`.

Cost stays linear in the length of the stream however often the live view is
read: `Accumulator.add` only appends a delta to a list, and reading
``acc.message`` brings up to date just the blocks that changed since the last
read (text is appended in place where CPython allows it; partial tool-call
arguments go through the incremental `PartialJSONParser`). Tool-call
arguments are parsed once, with msgspec, when the call ends.

The fold also enforces the event grammar (`streamfn.core._protocol`, the one
table of the rules), like h11 enforces HTTP: an event that breaks it raises
`ProtocolViolation`, and the accumulator stays broken afterwards.
`check_protocol` applies the same rules to a whole recorded stream, for
provider tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import msgspec

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
    finished_as,
)
from ._messages import (
    AssistantContent,
    AssistantMessage,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
)
from ._protocol import DELTA_KINDS, Grammar, ProtocolViolation, check_protocol
from .json._partial_json import PartialJSONParser

__all__ = [
    "Accumulator",
    "ProtocolViolation",
    "WholeToolCalls",
    "accumulate",
    "call_problem",
    "check_protocol",
    "parse_arguments",
]


class _Live:
    """A block still receiving deltas: the deltas not yet in its content, and
    (for tool calls read while streaming) the incremental arguments parser."""

    __slots__ = ("content", "field", "parser", "pending")

    def __init__(self, content: AssistantContent, field: str) -> None:
        self.content = content
        self.field = field  # the string attribute deltas extend
        self.pending: list[str] = []
        self.parser: PartialJSONParser | None = None

    def flush(self) -> str:
        """Move pending deltas into the content; return what was added."""
        pending = self.pending
        if not pending:
            return ""
        addition = pending[0] if len(pending) == 1 else "".join(pending)
        self.pending = []
        _append(self.content, self.field, addition)
        return addition

    def show_partial_arguments(self) -> None:
        """Bring a streaming tool call's best-effort ``arguments`` up to date."""
        call = self.content
        assert isinstance(call, ToolCall)
        if self.parser is None:
            self.parser = PartialJSONParser()
            self.flush()
            self.parser.feed(call.arguments_json)
        else:
            self.parser.feed(self.flush())
        value = self.parser.value()
        call.arguments = value if isinstance(value, dict) else {}
        call.parse_error = self.parser.error
        if self.parser.error is None and value is not None and not isinstance(value, dict):
            call.parse_error = _not_an_object(value)


def _append(obj: AssistantContent, field: str, addition: str) -> None:
    """``obj.field += addition`` without copying the whole string, where CPython can.

    Dropping the struct's reference first leaves the local name as the only
    one, so CPython's ``+=`` resizes the string in place; that keeps reading
    the live view after every delta linear overall. If anybody else holds the
    old string it is copied instead, so nothing visible ever changes.
    """
    text: str = getattr(obj, field)
    setattr(obj, field, "")
    text += addition
    setattr(obj, field, text)


_arguments_decoder: Final = msgspec.json.Decoder()

#: the ``parse_error`` of a tool call an `Error` ended before the call did
_CUT_TOOL_CALL: Final = (
    "the stream ended with an error before this tool call was complete; "
    "its arguments are unfinished and must not be used"
)


def _not_an_object(value: object) -> str:
    return f"tool call arguments must be a JSON object, got {type(value).__name__}"


#: the argument deltas kept apart before they are joined: a str object per delta costs
#: ~50 bytes over its text, and an upstream may send one character a delta, so they
#: are joined in runs and what is held stays close to the text itself
_JOIN_EVERY: Final = 256


class _Arguments:
    """A call's argument text as it streams: runs of joined deltas, then the latest."""

    __slots__ = ("_pieces", "_runs")

    def __init__(self) -> None:
        self._runs: list[str] = []
        self._pieces: list[str] = []

    def add(self, delta: str) -> None:
        pieces = self._pieces
        pieces.append(delta)
        if len(pieces) >= _JOIN_EVERY:  # each character is copied once more, at most
            self._runs.append("".join(pieces))
            pieces.clear()

    def text(self) -> str:
        return "".join(self._runs) + "".join(self._pieces)


class WholeToolCalls:
    """Tool calls gathered until their end, for wire formats that send a call whole
    (Gemini's ``functionCall``, Ollama's ``tool_calls``) or that send it checked
    (the UI message stream, AG-UI): `add` takes a call's start and argument deltas;
    at its end `end_text` returns ``(id, name, arguments text)`` as the tool-call
    checks repaired them, and `end` the arguments parsed by the fold's own rule
    (`parse_arguments`)."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[int, tuple[str, str, _Arguments]] = {}

    def add(self, event: ToolCallStart | ToolCallDelta) -> str | None:
        """Take a start or a delta; the call's id (None: a delta of no open call)."""
        if isinstance(event, ToolCallStart):
            self._calls[event.index] = (event.id, event.name, _Arguments())
            return event.id
        call = self._calls.get(event.index)
        if call is None:
            return None
        call[2].add(event.delta)
        return call[0]

    def end_text(self, event: ToolCallEnd) -> tuple[str, str, str] | None:
        """The ended call's id, name and arguments text (None: no such call was open)."""
        call = self.streamed(event)
        if call is None:
            return None
        ident, name, text = call
        text = text if event.arguments is None else event.arguments  # as repaired
        return ident, event.name or name, text

    def streamed(self, event: ToolCallEnd) -> tuple[str, str, str] | None:
        """The ended call's id, name and arguments as they streamed (None: no such call)."""
        call = self._calls.pop(event.index, None)
        if call is None:
            return None
        ident, name, arguments = call
        return ident, name, arguments.text()

    def clear(self) -> None:
        """Forget the open calls (an `Error` cut them: they never end)."""
        self._calls.clear()

    def end(self, event: ToolCallEnd) -> tuple[str, str, dict[str, Any]]:
        call = self.end_text(event)
        if call is None:
            raise KeyError(event.index)
        ident, name, text = call
        return ident, name, parse_arguments(text)[0]  # {} when not one object


def _apply_checks(call: ToolCall, end: ToolCallEnd) -> None:
    """What the tool-call checks said at the call's end (`streamfn.core.stages._tool_checks`):
    the repaired name and arguments (the streamed text kept), the repairs, the errors."""
    if end.name is not None:
        call.name = end.name
    if end.arguments is not None:
        call.streamed_arguments = call.arguments_json
        call.arguments_json = end.arguments
    if end.repairs:
        call.repairs = list(end.repairs)
    if end.errors:
        call.errors = list(end.errors)


def call_problem(end: ToolCallEnd, parse_error: str | None) -> str | None:
    """Why a finished call must not run (None: it may): the tool-call checks' errors
    (`streamfn.core.stages._tool_checks`), else its arguments' parse error. The one rule for
    every encoder that tells a client which calls to run."""
    if end.errors:
        return "; ".join(str(error) for error in end.errors)
    return parse_error


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """The final arguments of a finished tool call, and why they are unusable if they are.

    One rule for the fold and every encoder that must send an object: text that
    is not one JSON object gives ``{}`` and the reason.
    """
    if not text.strip():
        return {}, None
    try:
        value = _arguments_decoder.decode(text)
    except msgspec.DecodeError as exc:
        return {}, f"tool call arguments are not valid JSON: {exc}"
    except RecursionError:
        return {}, "tool call arguments are nested too deeply to parse"
    if not isinstance(value, dict):
        return {}, _not_an_object(value)
    return value, None


class Accumulator:
    """Folds events into an `AssistantMessage`, one `add` per event.

    ``message`` is a live view: the same object every time, updated in place
    as events arrive (copy it, e.g. with ``msgspec.structs.replace`` or
    ``copy.deepcopy``, to keep a snapshot). After the terminal event it is the
    final message. An event that breaks the grammar raises
    `ProtocolViolation`; from then on every `add` raises too.
    """

    __slots__ = ("_dirty", "_grammar", "_live", "_message")

    def __init__(self) -> None:
        self._grammar = Grammar()
        self._message = AssistantMessage()
        self._live: dict[int, _Live] = {}  # open blocks by index
        self._dirty: dict[int, _Live] = {}  # open blocks with deltas not yet in the message

    # -- reading ----------------------------------------------------------
    @property
    def message(self) -> AssistantMessage:
        """The message so far; costs only the deltas that arrived since the last read."""
        if self._dirty:
            for live in self._dirty.values():
                if isinstance(live.content, ToolCall):
                    live.show_partial_arguments()
                else:
                    live.flush()
            self._dirty.clear()
        return self._message

    @property
    def finished(self) -> bool:
        """The terminal event (`Done` or `Error`) has been added."""
        return self._grammar.finished

    @property
    def violation(self) -> ProtocolViolation | None:
        """The protocol violation that broke this accumulator, if one did."""
        return self._grammar.violation

    def partial_arguments(self, index: int) -> dict[str, Any]:
        """Best-effort arguments of the tool call at content ``index``, while it streams.

        Unfinished strings are shown as far as they arrived; keys without a
        value, unfinished numbers and literals are left out. After the call
        ends this is its parsed ``arguments``.
        """
        content = self._message.content
        if not 0 <= index < len(content):
            raise IndexError(f"no content block {index} (the message has {len(content)})")
        call = content[index]
        if not isinstance(call, ToolCall):
            raise ValueError(f"content block {index} is {type(call).__name__}, not a ToolCall")
        live = self._dirty.pop(index, None)
        if live is not None:
            live.show_partial_arguments()
        return call.arguments

    # -- folding ----------------------------------------------------------
    def add(self, event: Event) -> None:
        """Fold one event in; O(1) amortised. Raises `ProtocolViolation`."""
        self._grammar.check(event)
        if isinstance(event, (TextDelta, ThinkingDelta, ToolCallDelta)):
            if event.delta:
                live = self._live[event.index]
                live.pending.append(event.delta)
                self._dirty[event.index] = live
        elif isinstance(event, TextStart):
            self._open(event.index, TextContent(text=""), "text")
        elif isinstance(event, ThinkingStart):
            self._open(event.index, ThinkingContent(thinking=""), "thinking")
        elif isinstance(event, ToolCallStart):
            self._open(event.index, ToolCall(id=event.id, name=event.name), "arguments_json")
        elif isinstance(event, TextEnd):
            text = self._close(event.index)
            assert isinstance(text, TextContent)
            text.signature = event.signature
            if event.citations:
                text.citations = list(event.citations)
        elif isinstance(event, ThinkingEnd):
            thinking = self._close(event.index)
            assert isinstance(thinking, ThinkingContent)
            thinking.signature = event.signature
            thinking.redacted = event.redacted
        elif isinstance(event, ToolCallEnd):
            call = self._close(event.index)
            assert isinstance(call, ToolCall)
            call.signature = event.signature
            _apply_checks(call, event)
            call.arguments, call.parse_error = parse_arguments(call.arguments_json)
        elif isinstance(event, OpaqueBlock):
            self._message.content.append(
                OpaqueContent(provider=event.provider, block_type=event.block_type, json=event.json)
            )
        elif isinstance(event, Start):
            message = self._message
            message.api = event.api
            message.provider = event.provider
            message.model = event.model
            message.response_id = event.response_id
        elif isinstance(event, Done):
            message = self._message
            message.stop_reason = finished_as(event)  # a paused turn is not a finished one
            message.usage = event.usage
            message.cost = event.cost
        elif isinstance(event, Error):
            self._fail(event)

    def extend(self, events: Iterable[Event]) -> None:
        """`add` each event in order; faster than calling `add` per event.

        A delta to an open block of its kind (most of a stream) is folded right
        here, after the same test `Grammar.check` accepts it with, so a batch
        of deltas costs a dict lookup and an append each; anything else goes
        through `add`.
        """
        grammar = self._grammar
        open_blocks = grammar.open  # cleared, never replaced, when the stream breaks
        live_blocks = self._live
        dirty = self._dirty
        for event in events:
            kind = DELTA_KINDS.get(type(event))
            if kind is not None:
                index = event.index  # type: ignore[union-attr]
                if type(index) is int and open_blocks.get(index) == kind:
                    grammar.count += 1
                    delta = event.delta  # type: ignore[union-attr]
                    if delta:
                        live = live_blocks[index]
                        live.pending.append(delta)
                        dirty[index] = live
                    continue
            self.add(event)

    def _open(self, index: int, content: AssistantContent, field: str) -> None:
        self._message.content.append(content)
        self._live[index] = _Live(content, field)

    def _close(self, index: int) -> AssistantContent:
        live = self._live.pop(index)
        self._dirty.pop(index, None)
        live.flush()
        return live.content

    def _fail(self, error: Error) -> None:
        """Keep what arrived; tool calls the error cut off keep their raw text only.

        The live view's repaired arguments (``{"path": "/home/user"}`` from
        ``{"path": "/home/user``) are for display while a call streams; a final
        message must never present them as the call's input, or a caller that
        runs the tools would act on a path, a query or an amount the model
        never finished. So a cut call ends with ``arguments == {}``, its
        ``arguments_json`` as far as it arrived, and ``parse_error`` saying why.
        """
        message = self._message
        message.stop_reason = error.stop_reason
        if error.usage is not None:
            message.usage = error.usage
        message.error_message = error.message
        message.error_kind = error.kind
        for live in self._live.values():
            live.flush()
            if isinstance(live.content, ToolCall):
                live.content.arguments = {}
                live.content.parse_error = _CUT_TOOL_CALL
        self._live.clear()
        self._dirty.clear()


def accumulate(events: Iterable[Event]) -> AssistantMessage:
    """The message these events describe (the final one if the stream is complete).

    Raises `ProtocolViolation` if the events break the grammar; a stream cut
    short without a terminal event gives the partial message.
    """
    acc = Accumulator()
    acc.extend(events)
    return acc.message
