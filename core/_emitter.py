"""`Emitter`: a provider's keyed block updates in, a valid event sequence out.

The writing half of the event grammar; the tables it follows (and the
`Grammar` that checks what it wrote) are in `streamfn.core._protocol`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Final, cast

import msgspec

from ._events import (
    Cost,
    Done,
    Error,
    Event,
    OpaqueBlock,
    StopReason,
    TextDelta,
    TextEnd,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallDelta,
    ToolCallStart,
    Usage,
)
from ._protocol import (
    DELTA,
    END,
    EVENT_FOR,
    FINISHED,
    NEEDS_CLOSED_BLOCKS,
    START,
    STREAM_TRANSITIONS,
    STREAMING,
    TEXT,
    THINKING,
    TOOL,
)
from .content._citations import Citation

__all__ = ["Emitter"]


#: what the emitter sends to open a text or thinking block, and to close a text
#: or tool-call block (a thinking end also carries ``redacted``), from the table
_OPENS: Final = {
    kind: cast("Callable[[int], Event]", EVENT_FOR[kind, START]) for kind in (TEXT, THINKING)
}
_CLOSES: Final = {
    kind: cast("Callable[[int, str | None], Event]", EVENT_FOR[kind, END]) for kind in (TEXT, TOOL)
}
#: a text or thinking block's delta event, from the table
_DELTAS: Final = {
    kind: cast("Callable[[int, str], Event]", EVENT_FOR[kind, DELTA]) for kind in (TEXT, THINKING)
}


class _Block:
    """An open block: its kind and content index. A plain class, not a struct: in a
    compiled build it is native, so each delta reads its two fields directly."""

    __slots__ = ("index", "kind")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind  # TEXT | THINKING | TOOL
        self.index = index


class Emitter:
    """Turns a provider's keyed block updates into a valid event sequence.

    Providers name their blocks however the wire does (Anthropic's ``index``,
    OpenAI's tool-call ``index``, a constant for "the text") and the emitter
    assigns content indices in order of first appearance, opens and closes
    blocks, and counts content bytes against the cap. It never emits anything
    after a terminal event.
    """

    def __init__(
        self,
        *,
        max_content_bytes: int | None = None,
        before_first: Callable[[], Event] | None = None,
    ) -> None:
        self.events: list[Event] = []
        self.finished = False
        #: makes the event that must precede all others (`Start`), at the moment
        #: the first one is emitted: that moment is a fixed point in the byte
        #: stream, so what Start carries does not depend on the chunking.
        self._before_first = before_first
        self._open: dict[Hashable, _Block] = {}
        #: citations gathered for open text blocks, sent with their `TextEnd`
        self._citations: dict[Hashable, list[Citation]] = {}
        #: signatures for the next thinking block each key closes (see `sign`)
        self._signatures: dict[Hashable, str] = {}
        self._next_index = 0
        #: the blocks an `Error` left open, for `reopen` (a resumed stream goes on in them)
        self._cut: dict[Hashable, _Block] = {}
        self._content_bytes = 0
        self._max_content = max_content_bytes
        #: tool calls started so far (a turn that made any ended for them: `tool_use`)
        self.tool_calls = 0

    def _push(self, event: Event) -> None:
        if self._before_first is not None:
            self.events.append(self._before_first())
            self._before_first = None
        self.events.append(event)

    def start_before_first(self, make: Callable[[], Event]) -> None:
        """Emit ``make()`` right before the next event (once)."""
        self._before_first = make

    def drain(self) -> list[Event]:
        out, self.events = self.events, []
        return out

    # -- blocks ---------------------------------------------------------
    def is_open(self, key: Hashable) -> bool:
        return key in self._open

    def open_kind(self, key: Hashable) -> str | None:
        block = self._open.get(key)
        return block.kind if block else None

    @property
    def open_keys(self) -> list[Hashable]:
        return list(self._open)

    def _open_block(self, key: Hashable, kind: str) -> int:
        existing = self._open.get(key)
        if existing is not None:
            if existing.kind == kind:
                return existing.index
            self.end(key)
        index = self._next_index
        self._next_index += 1
        self._open[key] = _Block(kind, index)
        return index

    def _over_limit(self) -> None:
        """The content so far (counted inline by each delta) passed the cap."""
        self.error(
            Error.limit(
                f"response content exceeded max_content_bytes={self._max_content}; "
                "raise Options.max_content_bytes or ask for less"
            )
        )

    def text(self, key: Hashable, delta: str) -> None:
        """Append ``delta`` to ``key``'s text block (opened if needed)."""
        self.delta(key, delta, TEXT)

    def thinking(self, key: Hashable, delta: str) -> None:
        """Append ``delta`` to ``key``'s thinking block (opened if needed)."""
        self.delta(key, delta, THINKING)

    def delta(self, key: Hashable, delta: str, kind: str) -> None:
        """The one body of `text` and `thinking` (``kind``: ``TEXT`` or ``THINKING``):
        the delta into ``key``'s block of that kind, opening one (and closing what
        ``key`` had) if needed. A provider's hot loop that knows the kind calls it
        directly: one call fewer per delta than `text`. A finished emitter has no open
        blocks (done/error clear them), so a block found open means the stream is live;
        the content cap is counted inline."""
        block = self._open.get(key)
        if block is not None and block.kind == kind:
            index = block.index
        else:
            opened = self._start_stream(key, kind)
            if opened is None:
                return
            index = opened
        if delta:
            self._content_bytes += len(delta)
            if self._max_content is None or self._content_bytes <= self._max_content:
                self.events.append(_DELTAS[kind](index, delta))
            else:
                self._over_limit()

    def texts(self, key: Hashable, deltas: list[str]) -> None:
        """`text` for each of ``deltas`` in order, in one call (a provider's run)."""
        self._run(key, deltas, TEXT, TextDelta, self.text)

    def thinkings(self, key: Hashable, deltas: list[str]) -> None:
        """`thinking` for each of ``deltas`` in order, in one call (a provider's run)."""
        self._run(key, deltas, THINKING, ThinkingDelta, self.thinking)

    def tool_deltas(self, key: Hashable, deltas: list[str]) -> None:
        """`tool_delta` for each of ``deltas`` in order, in one call (a provider's run)."""
        self._run(key, deltas, TOOL, ToolCallDelta, self.tool_delta)

    def _run(
        self,
        key: Hashable,
        deltas: list[str],
        kind: str,
        make: Callable[[int, str], Event],
        one: Callable[[Hashable, str], None],
    ) -> None:
        """A run into ``key``'s open block of ``kind`` in one step; anything else
        (a block to open, a closed one, the cap inside the run) one by one."""
        block = self._open.get(key)
        if (
            len(deltas) == 1
            or block is None
            or block.kind != kind
            or not self._extend(block.index, make, deltas)
        ):
            for delta in deltas:
                one(key, delta)

    def _extend(self, index: int, make: Callable[[int, str], Event], deltas: list[str]) -> bool:
        """Append a run of deltas to the open block ``index`` if they fit under the
        cap; False (nothing done) when the cap falls inside the run."""
        total = self._content_bytes + sum(map(len, deltas))
        if self._max_content is not None and total > self._max_content:
            return False
        self._content_bytes = total
        self.events += [make(index, delta) for delta in deltas if delta]
        return True

    def _start_stream(self, key: Hashable, kind: str) -> int | None:
        """Open a text or thinking block (closing whatever ``key`` had open)."""
        if self.finished:
            return None
        index = self._open_block(key, kind)
        self._push(_OPENS[kind](index))
        return index

    def tool_start(self, key: Hashable, id: str, name: str) -> None:
        if self.finished:
            return
        if key in self._open:
            self.end(key)
        index = self._open_block(key, TOOL)
        self.tool_calls += 1
        self._push(ToolCallStart(index, id, name))

    def tool_delta(self, key: Hashable, delta: str) -> None:
        if self.finished or not delta:
            return
        block = self._open.get(key)
        if block is None or block.kind != TOOL:
            raise ValueError(f"tool-call arguments for a call that never started ({key!r})")
        self._content_bytes += len(delta)
        if self._max_content is None or self._content_bytes <= self._max_content:
            self.events.append(ToolCallDelta(block.index, delta))
        else:
            self._over_limit()

    def sign(self, key: Hashable, signature: str | None) -> None:
        """The signature for the next thinking block or tool call that ends under ``key``
        (None: nothing to record).

        For wires that send a signature apart from the block's end (OpenRouter's
        ``reasoning_details``, a tool call's ``extra_content``): the block then closes
        with it however it closes, explicitly or because text starts under ``key``.
        """
        if signature:
            self._signatures[key] = signature

    def cite(
        self, key: Hashable, citations: Iterable[Citation | None], *, replace: bool = False
    ) -> None:
        """Add citations (None entries are skipped) to the open text block ``key``; they
        go out on its `TextEnd`. ``replace``: these are the whole list so far (a
        provider that repeats its cumulative metadata). No open text block: dropped."""
        block = self._open.get(key)
        if self.finished or block is None or block.kind != TEXT:
            return
        kept = [c for c in citations if c is not None]
        if replace:
            self._citations[key] = kept
        elif kept:
            self._citations.setdefault(key, []).extend(kept)

    def end(self, key: Hashable, *, signature: str | None = None, redacted: bool = False) -> None:
        """Close a block if it is open (closing twice is harmless)."""
        if self.finished:
            return
        block = self._open.pop(key, None)
        if block is None:
            return
        if block.kind != TEXT and self._signatures:  # a signature `sign` kept for it
            pending = self._signatures.pop(key, None)
            signature = pending if signature is None else signature
        if block.kind == THINKING:
            self.events.append(ThinkingEnd(block.index, signature, redacted))
        elif block.kind == TEXT:
            cited = self._citations.pop(key, None)
            self.events.append(TextEnd(block.index, signature, tuple(cited) if cited else ()))
        else:
            self.events.append(_CLOSES[block.kind](block.index, signature))

    def opaque(self, provider: str, block_type: str, json: str) -> None:
        if self.finished:
            return
        index = self._next_index
        self._next_index += 1
        self._push(OpaqueBlock(index, provider, block_type, json))

    def close_all(self) -> None:
        for key in list(self._open):
            self.end(key)

    # -- terminal ---------------------------------------------------------
    def done(
        self, stop_reason: StopReason, usage: Usage, cost: Cost, *, paused: bool = False
    ) -> None:
        mark: bool | msgspec.UnsetType = True if paused else msgspec.UNSET
        self._terminal(Done(stop_reason=stop_reason, usage=usage, cost=cost, paused=mark))

    def error(self, error: Error) -> None:
        self._terminal(error)

    def _terminal(self, event: Done | Error) -> None:
        if self.finished:
            return
        if type(event) in NEEDS_CLOSED_BLOCKS:
            self.close_all()
        self._push(event)
        self.finished = STREAM_TRANSITIONS[STREAMING][type(event)] == FINISHED
        self._cut = dict(self._open) if isinstance(event, Error) else {}
        self._open.clear()

    def reopen(self) -> None:
        """Go on after an `Error` ended the stream, with the blocks it left open.

        For a provider that continues the same response on a new request (see
        `Splice` in `streamfn.core`): the `Error` is not handed out, the next events
        carry on the same blocks and indexes.
        """
        self.events = [e for e in self.events if not isinstance(e, Error)]
        if self.finished:  # the cut was seen here (a body that ended early)
            self._open, self._cut = self._cut, {}
            self.finished = False
