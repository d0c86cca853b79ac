"""Tool calls a model wrote into its text, turned into real tool-call blocks.

Some models (and the gateways in front of them) answer a tool request not with
the provider's native tool call but with markup in the text:

- the MCP XML form ``<mcp__server__tool>{"url": "..."}</mcp__server__tool>``
  (the tool name is the tag, the body is the arguments);
- Hermes/Qwen ``<tool_call>{"name": "...", "arguments": {...}}</tool_call>``;
- anything else of either shape, described by a `Markup` (Llama's
  ``<function=name>{...}</function>`` is `LLAMA_FUNCTION`).

`text_tool_calls` rewrites a whole event stream and `TextToolCalls` does the
same one event at a time, for a shell or a server that streams. Both are pure
and optional: the shells apply it only when the request
(``Options.text_tool_calls=["mcp", "hermes"]``) or the model
(``Model.extra={"text_tool_calls": "mcp,hermes"}``) names markups.

The rules, each chosen so the output is a stream like any provider's:

- Detection works across any split of the text deltas: a text suffix that may
  still grow into markup is held back until the next delta decides, so every
  chunking of the same text gives the same events once adjacent deltas of a
  block are joined (the property every decoder here promises).
- Text before and after a call stays text, each run in its own text block;
  every block is renumbered in order of first appearance, so the result obeys
  the event grammar (`check_protocol`). Text after a call starts at its first
  non-whitespace character (models put newlines around markup).
- A call's arguments are the JSON text the model wrote. JSON that does not
  parse is kept verbatim and the fold records why in ``ToolCall.parse_error``,
  as for any provider's broken arguments. (The reference gateway substitutes
  ``{"input": raw}``, which invents an argument the tool never declared and
  hides the failure from the caller; we keep the evidence instead.)
- Markup that is not a call stays text, verbatim, so nothing the model wrote is
  lost: a Hermes body without a readable name, a tag name with characters no
  tool name has, markup still open when its text block ends, and a body longer
  than ``max_markup_chars``.
- A name that is not among the declared tools is corrected when one declared
  tool is clearly meant (`correct_tool_name`: exact suffix, then substring,
  then token overlap); the ``streamfn`` logger warns with the old and new name.
- ``Done.stop_reason`` ``stop`` becomes ``tool_use`` when a call was extracted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from typing import Final

import msgspec

from .._emitter import Emitter
from .._events import (
    Done,
    Error,
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
)
from .._messages import Tool
from .._options import Options
from ..catalogue._models import Model
from ._tool_text import call_envelope, first_tag, held_prefix

__all__ = [
    "DEFAULT_MARKUPS",
    "HERMES",
    "LLAMA_FUNCTION",
    "MARKUPS",
    "MCP_XML",
    "Markup",
    "TextToolCalls",
    "correct_tool_name",
    "markups_for",
    "text_tool_calls",
]

log = logging.getLogger("streamfn")


class Markup(msgspec.Struct, frozen=True, kw_only=True):
    """One way of writing a tool call in text.

    ``open`` is the literal that starts the markup. With ``name_in_tag`` the
    tool name follows it up to ``>`` (``name_prefix`` is put back in front:
    the MCP tool ``mcp__srv__tool`` is written ``<mcp__srv__tool>``) and the
    body is the arguments; otherwise the body is an envelope
    ``{"name": ..., "arguments": ...}``. ``close`` ends the markup; ``{name}``
    in it stands for the full tool name.
    """

    open: str
    close: str
    name_in_tag: bool = False
    name_prefix: str = ""


#: ``<mcp__server__tool>{json}</mcp__server__tool>``
MCP_XML: Final = Markup(open="<mcp__", close="</{name}>", name_in_tag=True, name_prefix="mcp__")
#: ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` (Hermes, Qwen, SmolLM3)
HERMES: Final = Markup(open="<tool_call>", close="</tool_call>")
#: ``<function=name>{json}</function>`` (Llama 3.x custom tool format)
LLAMA_FUNCTION: Final = Markup(open="<function=", close="</function>", name_in_tag=True)
#: what `text_tool_calls` looks for unless told otherwise
DEFAULT_MARKUPS: Final = (MCP_XML, HERMES)

#: characters a tool name written in a tag may have (providers allow ``[A-Za-z0-9_.:-]``)
_NAME_CHARS: Final = re.compile(r"[A-Za-z0-9_.:\-]*")
_MAX_NAME: Final = 256
_TOKENS: Final = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")

#: where a text block's scanner is: in plain text, in a tag's tool name, in a call's body
_TEXT: Final = "text"
_NAME: Final = "name"
_BODY: Final = "body"


class _TextBlock:
    """The scanning state of one input text block."""

    __slots__ = (
        "close",
        "index",
        "markup",
        "mode",
        "name",
        "pending",
        "produced",
        "raw",
        "raw_len",
        "segment",
        "strip",
        "tail",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.segment = 0  # output text blocks cut from this one so far
        self.mode = _TEXT
        self.pending = ""  # text that may still grow into markup
        self.markup: Markup | None = None
        self.name = ""  # the name read from the tag so far
        self.raw: list[str] = []  # the markup body so far, in pieces (joined once, at its end)
        self.raw_len = 0
        self.close = ""
        self.tail = ""  # the body's last len(close) - 1 characters: a close may straddle
        self.strip = False  # drop leading whitespace: the text follows a call
        self.produced = False  # anything came out of this block

    def key(self) -> tuple[str, int, int]:
        return ("text", self.index, self.segment)


class TextToolCalls:
    """The incremental form of `text_tool_calls`: ``feed`` each event, get events back.

    ``tools`` are the declared tools (`Tool` objects or names) that names are
    corrected against; ``markups`` the forms to recognise (`DEFAULT_MARKUPS`).
    Extracted calls get the ids ``{id_prefix}0``, ``{id_prefix}1`` ...
    """

    def __init__(
        self,
        *,
        tools: Iterable[Tool | str] = (),
        markups: Sequence[Markup] = DEFAULT_MARKUPS,
        max_markup_chars: int = 1 << 20,
        id_prefix: str = "text_call_",
    ) -> None:
        opens = [m.open for m in markups]
        for a in opens:
            for b in opens:
                if a is not b and b.startswith(a):
                    raise ValueError(f"markup {a!r} is a prefix of {b!r}; which one is meant?")
        self.tools = [t.name if isinstance(t, Tool) else t for t in tools]
        self._markups = {m.open: m for m in markups}
        self._opens = tuple(opens)
        self._max = max_markup_chars
        self._id_prefix = id_prefix
        self._blocks: dict[int, _TextBlock] = {}
        self._calls = 0
        self.emit = Emitter()

    @property
    def calls(self) -> int:
        """How many tool calls were extracted from text so far."""
        return self._calls

    def feed(self, event: Event) -> list[Event]:
        emit = self.emit
        if isinstance(event, TextDelta):
            block = self._blocks.get(event.index)
            if block is not None:
                self._scan(block, event.delta, final=False)
        elif isinstance(event, ThinkingDelta):
            emit.thinking(("in", event.index), event.delta)
        elif isinstance(event, ToolCallDelta):
            emit.tool_delta(("in", event.index), event.delta)
        elif isinstance(event, TextStart):
            self._blocks[event.index] = _TextBlock(event.index)
        elif isinstance(event, TextEnd):
            block = self._blocks.pop(event.index, None)
            if block is not None:
                self._end_text(block, event.signature)
        elif isinstance(event, ThinkingStart):
            emit.thinking(("in", event.index), "")
        elif isinstance(event, ThinkingEnd):
            emit.end(("in", event.index), signature=event.signature, redacted=event.redacted)
        elif isinstance(event, ToolCallStart):
            emit.tool_start(("in", event.index), event.id, event.name)
        elif isinstance(event, ToolCallEnd):
            emit.end(("in", event.index), signature=event.signature)
        elif isinstance(event, OpaqueBlock):
            emit.opaque(event.provider, event.block_type, event.json)
        elif isinstance(event, Start):
            emit.events.append(event)
        elif isinstance(event, Done):
            for block in list(self._blocks.values()):
                self._end_text(block, None)
            reason = event.stop_reason
            if self._calls and reason == StopReason.STOP:
                reason = StopReason.TOOL_USE
            emit.done(reason, event.usage, event.cost, paused=event.paused is True)
        elif isinstance(event, Error):
            # Cut off mid-answer: what was held back goes out as text, then the error.
            for block in self._blocks.values():
                self._scan(block, "", final=True)
            emit.error(event)
        return emit.drain()

    # -- scanning one text block ---------------------------------------------------
    def _end_text(self, block: _TextBlock, signature: str | None) -> None:
        self._scan(block, "", final=True)
        self._blocks.pop(block.index, None)
        key = block.key()
        if not block.produced or (signature is not None and not self.emit.is_open(key)):
            self.emit.text(key, "")  # an empty block stays a block; a signature needs one
        self.emit.end(key, signature=signature)

    def _scan(self, block: _TextBlock, text: str, *, final: bool) -> None:
        buffer = block.pending + text
        block.pending = ""
        while buffer or (final and block.mode != _TEXT):
            if block.mode == _TEXT:
                found = first_tag(buffer, self._opens)
                if found is None:
                    keep = 0 if final else held_prefix(buffer, self._opens)
                    self._text(block, buffer[: len(buffer) - keep])
                    block.pending = buffer[len(buffer) - keep :]
                    return
                at, tag = found
                self._text(block, buffer[:at])
                buffer = buffer[at + len(tag) :]
                markup = block.markup = self._markups[tag]
                block.name = block.tail = ""
                block.raw, block.raw_len = [], 0
                if markup.name_in_tag:
                    block.mode = _NAME
                else:
                    block.mode = _BODY
                    block.close = markup.close
            else:
                read = self._read_name if block.mode == _NAME else self._read_body
                rest = read(block, buffer, final)
                if rest is None:
                    return
                buffer = rest

    def _read_name(self, block: _TextBlock, buffer: str, final: bool) -> str | None:
        """Read the tag name; the rest of ``buffer`` to scan next, None when it needs more."""
        markup = block.markup
        assert markup is not None
        chars = _NAME_CHARS.match(buffer)
        assert chars is not None
        block.name += chars.group()
        rest = buffer[chars.end() :]
        if len(block.name) <= _MAX_NAME:
            if not rest and not final:
                return None
            if rest[:1] == ">" and block.name:
                block.mode = _BODY
                block.close = markup.close.replace("{name}", markup.name_prefix + block.name)
                return rest[1:]
        # Not a tag after all: what was read is text, and scanning goes on after it.
        block.mode = _TEXT
        self._text(block, markup.open + block.name)
        return rest

    def _read_body(self, block: _TextBlock, buffer: str, final: bool) -> str | None:
        """Collect the body up to the close literal; the rest to scan, None when it needs more."""
        close = block.close
        # Only the new text (and the tail a close could start in) is searched: linear
        # in the body however it is split, not quadratic.
        window = block.tail + buffer
        found = window.find(close)
        at = found + block.raw_len - len(block.tail) if found >= 0 else -1
        block.raw.append(buffer)
        block.raw_len += len(buffer)
        if 0 <= at <= self._max:
            raw = "".join(block.raw)
            block.mode = _TEXT
            if not self._call(block, raw[:at]):
                self._text(block, self._opening(block) + raw[: at + len(close)])
            return raw[at + len(close) :]
        # No close can start at or before the cap any more, or the block ended: verbatim.
        if final or block.raw_len - len(close) + 1 > self._max:
            raw = "".join(block.raw)
            cut = min(len(raw), self._max)
            block.mode = _TEXT
            self._text(block, self._opening(block) + raw[:cut])
            return raw[cut:]
        block.tail = window[max(0, len(window) - len(close) + 1) :] if len(close) > 1 else ""
        return None

    @staticmethod
    def _opening(block: _TextBlock) -> str:
        markup = block.markup
        assert markup is not None
        return markup.open + block.name + ">" if markup.name_in_tag else markup.open

    def _text(self, block: _TextBlock, text: str) -> None:
        if block.strip:
            text = text.lstrip()
            if not text:
                return
            block.strip = False
        if text:
            block.produced = True
            self.emit.text(block.key(), text)

    def _call(self, block: _TextBlock, body: str) -> bool:
        """Emit the call written in ``body``; False when it is no call (stays text)."""
        markup = block.markup
        assert markup is not None
        if markup.name_in_tag:
            name, arguments = markup.name_prefix + block.name, body.strip()
        else:
            found = call_envelope(body)
            if found is None:
                return False
            name, arguments = found
        better = correct_tool_name(name, self.tools)
        if better is not None:
            log.warning("text tool call: corrected tool name %r to %r", name, better)
            name = better
        emit = self.emit
        emit.end(block.key())
        block.segment += 1
        block.strip = block.produced = True
        key = ("call", self._calls)
        emit.tool_start(key, f"{self._id_prefix}{self._calls}", name)
        emit.tool_delta(key, arguments)
        emit.end(key)
        self._calls += 1
        return True


def text_tool_calls(
    events: Iterable[Event],
    *,
    tools: Iterable[Tool | str] = (),
    markups: Sequence[Markup] = DEFAULT_MARKUPS,
    max_markup_chars: int = 1 << 20,
    id_prefix: str = "text_call_",
) -> list[Event]:
    """``events`` with tool calls written in text turned into tool-call blocks.

    See the module docstring for the rules; `TextToolCalls` is the same
    transform event by event.
    """
    transform = TextToolCalls(
        tools=tools, markups=markups, max_markup_chars=max_markup_chars, id_prefix=id_prefix
    )
    out: list[Event] = []
    for event in events:
        out += transform.feed(event)
    return out


# -- tool-name correction ----------------------------------------------------------


def _tokens(name: str) -> set[str]:
    return {t.lower() for t in _TOKENS.findall(name)}


def _unique_best(scored: list[tuple[float, str]]) -> str | None:
    if not scored:
        return None
    scored.sort(key=lambda item: (-item[0], item[1]))
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None  # two tools fit equally well: guessing would call the wrong one
    return scored[0][1]


def correct_tool_name(name: str, declared: Sequence[str]) -> str | None:
    """The declared tool ``name`` most likely means, or None (declared, or no clear match).

    Three strategies, tried in order; each must single out one tool:

    1. exact suffix: a declared name ends with ``name`` (``puppeteer_navigate``
       -> ``mcp__puppeteer__puppeteer_navigate``); the shortest such wins;
    2. substring: one contains the other, case-insensitively (three characters
       at least), for exactly one declared tool;
    3. token overlap: the words of the names (split at ``_``, ``-``, ``.``
       and camelCase) overlap in at least half of ``name``'s words; the
       highest share of common words wins.
    """
    if not declared or name in declared or not name:
        return None
    suffix = [(-float(len(d)), d) for d in declared if d.endswith(name)]
    found = _unique_best(suffix)
    if found is not None:
        return found
    lower = name.lower()
    if len(lower) >= 3:
        contained = [
            (0.0, d) for d in declared if len(d) >= 3 and (lower in d.lower() or d.lower() in lower)
        ]
        found = _unique_best(contained)
        if found is not None:
            return found
    words = _tokens(name)
    overlap = []
    for d in declared:
        theirs = _tokens(d)
        common = len(words & theirs)
        if common and 2 * common >= len(words):
            overlap.append((common / len(words | theirs), d))
    return _unique_best(overlap)


# -- turning it on per model or per request ------------------------------------------

#: the markups a model or a request may name (``Options.text_tool_calls``,
#: ``Model.extra["text_tool_calls"]``, comma-separated there)
MARKUPS: Final[dict[str, Markup]] = {"mcp": MCP_XML, "hermes": HERMES, "llama": LLAMA_FUNCTION}


def markups_for(model: Model, options: Options) -> list[Markup] | None:
    """The markups to detect for this call, or None (the default: off).

    The request's ``Options.text_tool_calls`` wins over the model's
    ``extra["text_tool_calls"]``; an empty list turns it off for the request.
    """
    names = options.text_tool_calls
    if names is None:
        configured = (model.extra or {}).get("text_tool_calls")
        if not configured:
            return None
        names = [n.strip() for n in configured.split(",") if n.strip()]
    unknown = [n for n in names if n not in MARKUPS]
    if unknown:
        raise ValueError(f"unknown text tool-call markup(s) {unknown}; known: {', '.join(MARKUPS)}")
    return [MARKUPS[n] for n in names] or None
