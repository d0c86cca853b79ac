"""`event_streams`: valid streams of the event protocol, as a hypothesis strategy.

Every stream drawn obeys the grammar `streamfn.core.check_protocol` enforces:
one `Start`, blocks numbered 0, 1, 2 ... in order of first appearance, each
closed before `Done`, exactly one terminal event. What may appear is set by a
`StreamShape`, so one strategy serves both a user fuzzing an agent loop (all
knobs on) and a wire format that can carry only some of it (see
`streamfn.fuzz.transcripts`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec
from hypothesis import strategies as st

from streamfn.core._events import (
    Done,
    Error,
    ErrorKind,
    Event,
    OpaqueBlock,
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
    Usage,
)

__all__ = ["StreamShape", "event_streams", "json_objects"]

USAGE_FIELDS = frozenset({"input", "output", "cache_read", "cache_write", "reasoning"})

#: signs a block: (block kind, its whole text, a random token) -> the signature to carry
Signer = Callable[[str, str, str], str]


def _plain_signature(kind: str, text: str, token: str) -> str:
    return token


@dataclass(frozen=True)
class StreamShape:
    """What a drawn stream may contain. Every field is a knob of `event_streams`.

    - ``text``, ``thinking``, ``tool_calls``, ``redacted_thinking``, ``opaque``:
      which block kinds appear (``opaque`` names the provider of opaque blocks,
      or None for none).
    - ``parallel_tool_calls``: consecutive tool calls may stream their argument
      deltas interleaved.
    - ``whole_tool_arguments``: a call's arguments arrive as one delta of
      compact JSON (formats that send calls whole).
    - ``thinking_signatures``, ``text_signatures``, ``tool_signatures``: which
      block ends may carry a signature; ``signer`` shapes it.
    - ``adjacent_same_kind``: two text (or two thinking) blocks may follow each
      other; formats without block boundaries merge them.
    - ``stop_reasons``, ``error_kinds``: the terminal events drawn; a stream
      with tool calls never stops with ``stop`` (a turn that ended with whole
      calls is ``tool_use`` whatever the wire says), and with
      ``tool_use_iff_calls`` one without calls never stops with ``tool_use``.
    - ``usage_fields``: the `Usage` fields that may be non-zero.
    - ``response_ids``: `Start` carries a response id (always, never, or either
      when None).
    - ``implicit_block_ends``: the format closes a block only when something
      else starts, so an `Error` always finds the last block open (elsewhere
      it may or may not).
    - ``max_blocks``, ``max_deltas``: size bounds.
    """

    text: bool = True
    thinking: bool = True
    tool_calls: bool = True
    redacted_thinking: bool = True
    opaque: str | None = None
    parallel_tool_calls: bool = True
    whole_tool_arguments: bool = False
    thinking_signatures: bool = True
    text_signatures: bool = True
    tool_signatures: bool = True
    signer: Signer = _plain_signature
    adjacent_same_kind: bool = True
    stop_reasons: tuple[StopReason, ...] = (StopReason.STOP, StopReason.LENGTH, StopReason.TOOL_USE)
    error_kinds: tuple[ErrorKind, ...] = tuple(ErrorKind)
    tool_use_iff_calls: bool = False
    usage_fields: frozenset[str] = field(default=USAGE_FIELDS)
    response_ids: bool | None = None
    implicit_block_ends: bool = False
    max_blocks: int = 6
    max_deltas: int = 4

    def with_(self, **changes: Any) -> StreamShape:
        return replace(self, **changes)


_text_deltas = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != "" or s == " ")
_tokens = st.from_regex(r"[A-Za-z0-9+/]{8,24}", fullmatch=True)
_names = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
_ids = st.from_regex(r"call_[A-Za-z0-9]{6,16}", fullmatch=True)
_json_leaves = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=10)


def json_objects(max_leaves: int = 8) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects as tool-call arguments: nested, with any Unicode in keys and strings."""
    values = st.recursive(
        _json_leaves,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )
    return st.dictionaries(st.text(max_size=8), values, max_size=4)


@st.composite
def _usage(draw: st.DrawFn, fields: frozenset[str]) -> Usage:
    def number(name: str, top: int) -> int:
        return draw(st.integers(0, top)) if name in fields else 0

    output = number("output", 50_000)
    return Usage(
        input=number("input", 200_000),
        output=output,
        cache_read=number("cache_read", 100_000),
        cache_write=number("cache_write", 100_000),
        reasoning=number("reasoning", output),  # a subset of output, by convention
    )


def _kinds(shape: StreamShape) -> list[str]:
    kinds = [
        k
        for k, on in (
            ("text", shape.text),
            ("thinking", shape.thinking),
            ("tool", shape.tool_calls),
            ("redacted", shape.redacted_thinking),
            ("opaque", shape.opaque is not None),
        )
        if on
    ]
    return kinds


@st.composite
def _block(draw: st.DrawFn, shape: StreamShape, kind: str, index: int) -> list[Event]:
    """The events of one block, in order (tool calls may be interleaved later)."""
    if kind in ("text", "thinking"):
        deltas = draw(st.lists(_text_deltas, min_size=1, max_size=shape.max_deltas))
        signs = shape.text_signatures if kind == "text" else shape.thinking_signatures
        token = draw(st.none() | _tokens) if signs else None
        signature = None if token is None else shape.signer(kind, "".join(deltas), token)
        if kind == "text":
            return [
                TextStart(index),
                *(TextDelta(index, d) for d in deltas),
                TextEnd(index, signature),
            ]
        return [
            ThinkingStart(index),
            *(ThinkingDelta(index, d) for d in deltas),
            ThinkingEnd(index, signature),
        ]
    if kind == "redacted":
        return [ThinkingStart(index), ThinkingEnd(index, draw(_tokens), redacted=True)]
    if kind == "opaque":
        assert shape.opaque is not None
        block_type = draw(st.sampled_from(["web_search_call", "server_tool_use", "mcp_call"]))
        body = {"type": block_type, "id": draw(_ids), "result": draw(json_objects(4))}
        return [OpaqueBlock(index, shape.opaque, block_type, msgspec.json.encode(body).decode())]
    arguments = msgspec.json.encode(draw(json_objects())).decode()
    if shape.whole_tool_arguments:
        pieces = [arguments]
    else:
        cuts = sorted(draw(st.lists(st.integers(0, len(arguments)), max_size=shape.max_deltas)))
        bounds = [0, *cuts, len(arguments)]
        pieces = [arguments[a:b] for a, b in itertools.pairwise(bounds) if a < b]
    signature = draw(st.none() | _tokens) if shape.tool_signatures else None
    if signature is not None:
        signature = shape.signer("tool", arguments, signature)
    return [
        ToolCallStart(index, f"{draw(_ids)}_{index}", draw(_names)),
        *(ToolCallDelta(index, p) for p in pieces),
        ToolCallEnd(index, signature),
    ]


@st.composite
def _interleaved(draw: st.DrawFn, calls: list[list[Event]]) -> list[Event]:
    """Parallel tool calls: starts in order, argument deltas merged in any order that
    keeps each call's own order, ends in order."""
    starts = [c[0] for c in calls]
    ends = [c[-1] for c in calls]
    queues = [list(c[1:-1]) for c in calls]
    merged: list[Event] = []
    while any(queues):
        live = [q for q in queues if q]
        merged.append(draw(st.sampled_from(live)).pop(0))
    return [*starts, *merged, *ends]


@st.composite
def _stream(draw: st.DrawFn, shape: StreamShape) -> list[Event]:
    kinds = _kinds(shape)
    plan: list[str] = []
    for _ in range(draw(st.integers(0, shape.max_blocks)) if kinds else 0):
        choices = kinds
        if not shape.adjacent_same_kind and plan and plan[-1] in ("text", "thinking"):
            choices = [
                k
                for k in kinds
                if k != plan[-1] and not (plan[-1] == "thinking" and k == "redacted")
            ]
        if not shape.adjacent_same_kind and plan and plan[-1] == "redacted":
            choices = [k for k in kinds if k not in ("thinking", "redacted")]
        if not choices:
            break
        plan.append(draw(st.sampled_from(choices)))
    ids = {None: st.none() | _ids, True: _ids, False: st.none()}[shape.response_ids]
    events: list[Event] = [Start(response_id=draw(ids))]
    i = 0
    while i < len(plan):
        if plan[i] == "tool" and shape.parallel_tool_calls:
            run = 1
            while i + run < len(plan) and plan[i + run] == "tool":
                run += 1
            calls = [draw(_block(shape, "tool", i + k)) for k in range(run)]
            if run > 1 and draw(st.booleans()):
                events += draw(_interleaved(calls))
            else:
                events += [e for c in calls for e in c]
            i += run
            continue
        events += draw(_block(shape, plan[i], i))
        i += 1
    terminal = draw(_terminal(shape, has_calls="tool" in plan))
    if isinstance(terminal, Error) and _open_at_error(draw, shape, events):
        events.pop()  # the last block is cut by the error: its end never came
    events.append(terminal)
    return events


def _open_at_error(draw: st.DrawFn, shape: StreamShape, events: list[Event]) -> bool:
    last = events[-1]
    if not isinstance(last, (TextEnd, ThinkingEnd, ToolCallEnd)):
        return False
    if last.signature and not shape.implicit_block_ends:
        return False  # an explicit end that carries something stays
    if isinstance(last, ThinkingEnd) and last.redacted:
        return False
    if isinstance(last, ToolCallEnd) and shape.whole_tool_arguments:
        return False  # a whole call arrives with its end
    if isinstance(events[-2], (TextStart, ThinkingStart)):
        return False  # a block with no delta is only known by its end
    return shape.implicit_block_ends or draw(st.booleans())


@st.composite
def _terminal(draw: st.DrawFn, shape: StreamShape, *, has_calls: bool) -> Event:
    usage = draw(_usage(shape.usage_fields))
    if shape.error_kinds and draw(st.integers(0, 4)) == 0:
        kind = draw(st.sampled_from(shape.error_kinds))
        return Error(message=draw(st.sampled_from(_ERROR_WORDS[kind])), kind=kind)
    reasons = list(shape.stop_reasons)
    if has_calls:  # a turn that ended with its calls is tool_use, on every wire
        reasons = [StopReason.TOOL_USE if r is StopReason.STOP else r for r in reasons]
    if shape.tool_use_iff_calls:
        wanted = StopReason.TOOL_USE if has_calls else StopReason.STOP
        reasons = [r for r in reasons if r in (wanted, StopReason.LENGTH)]
    return Done(stop_reason=draw(st.sampled_from(reasons)), usage=usage)


#: messages in providers' own words, so a format that classifies errors by their
#: wording (most do) gives the same kind back
_ERROR_WORDS: dict[ErrorKind, list[str]] = {
    ErrorKind.THROTTLED: ["Rate limit reached for requests", "Too many requests"],
    ErrorKind.CONTEXT_OVERFLOW: ["prompt is too long: 210000 tokens > 200000 maximum"],
    ErrorKind.AUTH: ["invalid x-api-key", "Incorrect API key provided"],
    ErrorKind.NETWORK: ["Overloaded", "The server is temporarily unavailable"],
    ErrorKind.INVALID_REQUEST: ["messages: field required"],
    ErrorKind.CONTENT_FILTER: ["blocked by the content filter"],
    ErrorKind.PROTOCOL: ["malformed stream"],
    ErrorKind.LIMIT: ["response exceeded max_response_bytes"],
    ErrorKind.BUDGET: ["the spending cap (Options.max_cost) is reached"],
}


def event_streams(shape: StreamShape | None = None, **knobs: Any) -> st.SearchStrategy[list[Event]]:
    """Valid event streams: ``event_streams()`` for everything, or restricted by a
    `StreamShape` and/or its fields as keywords (``event_streams(thinking=False)``)."""
    return _stream((shape or StreamShape()).with_(**knobs))
