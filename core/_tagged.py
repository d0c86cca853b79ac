"""Raw chat-model output (bytes) -> the event protocol, for models without an API.

A local model produces one byte stream in which reasoning and tool calls are
marked up inline: ``<think>...</think>`` and Hermes/Qwen/SmolLM3-style
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``. `TaggedDecoder`
turns that stream into the very events a provider stream gives, so a caller
cannot tell a local model from a hosted one. Like every provider state machine
it is pure (bytes in, events out) and any chunking of the same bytes yields
the same events once adjacent deltas of a block are joined.

Three stages, each holding back only what it must:

1. an incremental UTF-8 decoder (a character split across tokens waits for
   its last byte; invalid bytes become U+FFFD, never an exception);
2. stop sequences: the text ends right before the first one, and `stopped`
   tells the driver to stop generating;
3. the tag scanner: a possible tag prefix (``<th``) waits for the next bytes.

Layout decisions, so output looks like a provider's:

- a block starts at its first non-whitespace character, so the newlines
  models put around tags never make empty or whitespace-only blocks;
- tool-call arguments stream as ToolCallDelta fragments as soon as the name is
  known (``{"name": "...", "arguments": `` seen); the fragments are the raw
  JSON text of the arguments object;
- malformed tool calls never raise. Once the name is known the call is a tool
  call whatever follows: truncated or invalid argument JSON is delivered as
  streamed and the fold records the parse error (the model *meant* to call
  that tool). Markup whose name cannot be read at all is delivered verbatim as
  text, so nothing the model wrote is lost and no nameless call reaches a
  tool dispatcher.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from typing import Final

import msgspec

from ._emitter import Emitter
from ._events import Cost, Error, Event, Start, StopReason, Usage
from ._protocol import TEXT, THINKING, TOOL
from .stages._tool_text import (
    MAX_HEAD,
    TOOL_HEAD,
    JSONValueEnd,
    arguments_json,
    first_tag,
    held_prefix,
    parse_object,
)

__all__ = ["TaggedDecoder"]

#: where the scanner is: the kind of block the text goes to (also its emitter key)
_TEXT: Final = TEXT
_THINKING: Final = THINKING
_TOOL: Final = TOOL


class _ToolCall:
    """One ``<tool_call>`` body: head (waiting for the name), args (streaming), tail."""

    def __init__(self, key: tuple[str, int], call_id: str) -> None:
        self.key = key
        self.id = call_id
        self.raw = ""  # everything inside the tag, for the fallback parse
        self.started = False  # ToolCallStart emitted
        self.streaming = False  # arguments object being streamed
        self.head_failed = False  # no ``{"name": ..., "arguments":`` head: parse at the close
        self.args_at = 0  # where the arguments value starts in ``raw``
        self.value = JSONValueEnd()


class TaggedDecoder:
    """Bytes of a chat model's raw output in, events out (see the module docstring).

    Drive it like a provider call: ``receive_data`` for each chunk, then
    ``receive_eof`` with the token usage and whether the token limit cut the
    answer. ``stopped`` turns true when a stop sequence ended the answer, so
    the driver can stop generating; later data is ignored.
    """

    def __init__(
        self,
        *,
        start: Start | None = None,
        stop: Sequence[str] = (),
        start_in_thinking: bool = False,
        think_tags: tuple[str, str] = ("<think>", "</think>"),
        tool_tags: tuple[str, str] = ("<tool_call>", "</tool_call>"),
        max_content_bytes: int | None = None,
        max_tool_call_bytes: int = 1 << 20,
    ) -> None:
        self.emit = Emitter(max_content_bytes=max_content_bytes)
        self._start: Start | None = start or Start(api="local", provider="local")
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stops = tuple(s for s in stop if s)
        self._stop_hold = ""
        self.stopped = False
        self._think_open, self._think_close = think_tags
        self._tool_open, self._tool_close = tool_tags
        self._mode = _THINKING if start_in_thinking else _TEXT
        self._pending = ""  # characters held back because they may begin a tag
        self._block_started = False  # the current text/thinking block has content
        self._tool: _ToolCall | None = None
        self._tool_count = 0
        self._max_tool = max_tool_call_bytes
        # The tags that can end each mode, built once rather than on every scan step.
        self._tags_by_mode: dict[str, tuple[str, ...]] = {
            _TEXT: (self._think_open, self._tool_open),
            _THINKING: (self._think_close,),
            _TOOL: (self._tool_close,),
        }

    # -- public contract --------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.emit.finished

    def receive_data(self, data: bytes) -> list[Event]:
        if not self.emit.finished and not self.stopped and data:
            self._stop_scan(self._utf8.decode(data))
        return self._drain()

    def receive_eof(
        self, *, usage: Usage | None = None, length: bool = False, cost: Cost | None = None
    ) -> list[Event]:
        """The model stopped; ``length`` means it hit the token limit, not an end token."""
        if not self.emit.finished:
            if not self.stopped:
                self._stop_scan(self._utf8.decode(b"", final=True))
                self._scan(self._stop_hold, final=True)
                self._stop_hold = ""
            else:
                self._scan("", final=True)
            self._close_tool(closed=False)
            if self.stopped:
                reason = StopReason.STOP
            elif length:
                reason = StopReason.LENGTH
            elif self._tool_count:
                reason = StopReason.TOOL_USE
            else:
                reason = StopReason.STOP
            self.emit.done(reason, usage or Usage(), cost or Cost())
        return self._drain()

    def abort(
        self, message: str = "aborted by the caller", usage: Usage | None = None
    ) -> list[Event]:
        """The caller gave up: end the stream with ``stop_reason=aborted``."""
        self.emit.error(Error.aborted(message, usage=usage))
        return self._drain()

    def fail(self, error: Error) -> list[Event]:
        """The generator failed (for example the prompt exceeds the context window)."""
        self.emit.error(error)
        return self._drain()

    # -- stage 2: stop sequences -----------------------------------------
    def _stop_scan(self, text: str) -> None:
        if not self._stops:
            self._scan(text)
            return
        buffer = self._stop_hold + text
        found = first_tag(buffer, self._stops)
        if found is not None:
            self._stop_hold = ""
            self._scan(buffer[: found[0]], final=True)
            self.stopped = True
            return
        keep = held_prefix(buffer, self._stops)
        self._stop_hold = buffer[len(buffer) - keep :]
        self._scan(buffer[: len(buffer) - keep])

    # -- stage 3: tags ----------------------------------------------------
    def _scan(self, text: str, *, final: bool = False) -> None:
        buffer = self._pending + text
        self._pending = ""
        while buffer and not self.emit.finished:
            tags = self._tags_by_mode[self._mode]
            found = first_tag(buffer, tags)
            if found is None:
                keep = 0 if final else held_prefix(buffer, tags)
                self._content(buffer[: len(buffer) - keep])
                self._pending = buffer[len(buffer) - keep :]
                return
            at, tag = found
            self._content(buffer[:at])
            self._switch(tag)
            buffer = buffer[at + len(tag) :]

    def _switch(self, tag: str) -> None:
        if tag == self._think_open:
            self.emit.end(_TEXT)
            self._mode = _THINKING
        elif tag == self._tool_open:
            self.emit.end(_TEXT)
            self._tool = _ToolCall((_TOOL, self._tool_count), f"call_{self._tool_count}")
            self._tool_count += 1
            self._mode = _TOOL
        elif tag == self._think_close:
            self.emit.end(_THINKING)
            self._mode = _TEXT
        else:  # tool close
            self._close_tool(closed=True)
            return
        self._block_started = False

    def _content(self, text: str) -> None:
        if not text:
            return
        if self._mode == _TOOL:
            self._tool_content(text)
            return
        if not self._block_started:
            text = text.lstrip()
            if not text:
                return
            self._block_started = True
        if self._mode == _TEXT:
            self.emit.text(_TEXT, text)
        else:
            self.emit.thinking(_THINKING, text)

    # -- tool calls -------------------------------------------------------
    def _tool_content(self, text: str) -> None:
        call = self._tool
        if call is None:
            return
        if len(call.raw) + len(text) > self._max_tool:
            self.emit.error(
                Error.limit(
                    f"a tool call exceeded {self._max_tool} bytes; "
                    "raise Options.max_event_bytes or ask for less"
                )
            )
            return
        call.raw += text
        if call.streaming:
            self._stream_arguments(call, text)
        elif not call.started and not call.head_failed:
            self._try_head(call)

    def _try_head(self, call: _ToolCall) -> None:
        # Matching a fixed-size prefix keeps the outcome independent of chunking.
        match = TOOL_HEAD.match(call.raw[:MAX_HEAD])
        if match is None:
            call.head_failed = len(call.raw) >= MAX_HEAD
            return
        name = msgspec.json.decode(match.group(1), type=str)
        self.emit.tool_start(call.key, call.id, name)
        call.started = True
        call.args_at = match.end()
        rest = call.raw[call.args_at :]
        if rest[0] in "{[":
            call.streaming = True
            self._stream_arguments(call, rest)

    def _stream_arguments(self, call: _ToolCall, text: str) -> None:
        end = call.value.scan(text)
        if end >= 0:
            text = text[:end]
            call.streaming = False
        self.emit.tool_delta(call.key, text)

    def _close_tool(self, *, closed: bool) -> None:
        """End the current tool call; ``closed`` is False when the stream ended inside it."""
        call, self._tool = self._tool, None
        self._mode = _TEXT
        self._block_started = False
        if call is None or self.emit.finished:
            return
        if call.started:
            if call.value.depth == 0 and not call.value.done:
                # The arguments were not an object (a JSON-encoded string, say): whole parse.
                parsed = parse_object(call.raw)
                args = arguments_json(parsed) if parsed else call.raw[call.args_at :].strip()
                self.emit.tool_delta(call.key, args)
            self.emit.end(call.key)
            return
        parsed = parse_object(call.raw)
        name = parsed.get("name") if parsed is not None else None
        if parsed is not None and isinstance(name, str) and name:
            self.emit.tool_start(call.key, call.id, name)
            self.emit.tool_delta(call.key, arguments_json(parsed))
            self.emit.end(call.key)
            return
        # No readable name: the markup is text, verbatim (see the module docstring).
        self._tool_count -= 1
        self._content(self._tool_open + call.raw + (self._tool_close if closed else ""))
        self._block_started = True

    # -- helpers ----------------------------------------------------------
    def _drain(self) -> list[Event]:
        events = self.emit.drain()
        if self._start is not None:
            events.insert(0, self._start)
            self._start = None
        return events
