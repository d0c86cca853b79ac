"""OpenAI Responses API (``POST {base_url}/responses``, streamed): request and state machine.

The stream is SSE whose ``data`` is a JSON object with a ``type``; we route on
that ``type`` (the ``event:`` line repeats it and some relays drop it). The
answer is a list of output *items* (message, reasoning, function_call, and
server-side tool items); blocks are keyed by ``output_index`` plus the
content or summary index, so interleaved items stay apart.

Decisions worth knowing:

- Reasoning summaries (and the plain ``reasoning_text`` some servers such as
  DeepSeek stream) become one thinking block per reasoning item; summary parts
  are joined with a blank line.
- A reasoning item's ``encrypted_content`` is carried as the ThinkingEnd
  signature: a JSON object ``{"type": "reasoning", "encrypted_content": ...,
  "summary": [...]}`` (the item id is deliberately left out: with
  ``store: false`` an id makes the server look the item up and fail). The
  request builder sends that object back verbatim on the next turn.
- Requests use ``store: false`` and, for reasoning models,
  ``include: ["reasoning.encrypted_content"]``: the conversation travels in
  the request, nothing depends on server-side state. No item ids are sent.
- Server-side tool items (web search, code interpreter, MCP ...) become
  `OpaqueBlock`s carrying the finished item's JSON, replayed verbatim to the
  same provider.
- ``output_item.done`` may arrive before (or without) ``output_item.added``
  and may carry content that was never streamed: the done item is the source
  of truth and fills in whatever the deltas did not deliver.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import Any, Final

import msgspec

from streamfn.core._classify import classify_stream_error
from streamfn.core._events import Error, StopReason, Usage
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects._openai_citations import openai_citation
from streamfn.core.dialects._openai_common import error_text
from streamfn.core.dialects.openai_responses._request import build_request
from streamfn.core.providers._base import HTTPRequest, SSECall
from streamfn.core.wire._sse import ServerSentEvent

__all__ = ["OpenAIResponsesCall", "build_request", "open_call"]

log = logging.getLogger("streamfn")


_JSON: Final = msgspec.json.Encoder()

# ---------------------------------------------------------------------------
# Response: wire structs (only the fields we read)
# ---------------------------------------------------------------------------


class _Text(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    refusal: str | None = None
    annotations: list[Any] | None = None


class _Item(msgspec.Struct, gc=False):
    type: str
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    encrypted_content: str | None = None
    summary: list[_Text] | None = None
    content: list[_Text] | None = None


class _InputDetails(msgspec.Struct, gc=False):
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


class _OutputDetails(msgspec.Struct, gc=False):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct, gc=False):
    input_tokens: int = 0
    output_tokens: int = 0
    input_tokens_details: _InputDetails | None = None
    output_tokens_details: _OutputDetails | None = None


class _ErrorInfo(msgspec.Struct, gc=False):
    message: str | None = None
    code: str | int | None = None
    type: str | None = None


class _Incomplete(msgspec.Struct, gc=False):
    reason: str | None = None


class _Response(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    status: str | None = None
    usage: _Usage | None = None
    error: _ErrorInfo | None = None
    incomplete_details: _Incomplete | None = None


class _Event(msgspec.Struct, gc=False):
    type: str
    output_index: int = 0
    content_index: int = 0
    summary_index: int = 0
    delta: str | None = None
    text: str | None = None
    refusal: str | None = None
    arguments: str | None = None
    item: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    response: _Response | None = None
    # the ``error`` event: fields at the top level (documented) or nested (seen on the wire)
    error: _ErrorInfo | None = None
    message: str | None = None
    code: str | int | None = None
    annotation: Any = None
    #: the event's place in the response, what a resumed stream starts after
    sequence_number: int | None = None


def _after(sequence: int | None) -> int:
    """The number of the event after ``sequence`` (a resumed stream is only asked for
    once one was read: `streamfn.core.resumable`)."""
    return 0 if sequence is None else sequence + 1


_decode_event: Final = msgspec.json.Decoder(_Event).decode
_decode_item: Final = msgspec.json.Decoder(_Item).decode


def convert_usage(wire: _Usage) -> Usage:
    """Responses usage (cache reads and writes counted inside ``input_tokens``) into ours."""
    details = wire.input_tokens_details
    cached = (details.cached_tokens if details else 0) or 0
    written = (details.cache_write_tokens if details else 0) or 0
    reasoning = (
        wire.output_tokens_details.reasoning_tokens if wire.output_tokens_details else 0
    ) or 0
    return Usage(
        input=max(wire.input_tokens - cached - written, 0),
        cache_read=cached,
        cache_write=written,
        output=wire.output_tokens,
        reasoning=min(reasoning, wire.output_tokens),
    )


class _Tool:
    """A function call: its arguments wait here until its name is known.

    The streamed arguments are kept as pieces (appending to one string would
    copy it per delta: quadratic in a long call) and joined only when the
    final arguments must be compared with them.
    """

    __slots__ = ("pending", "started", "streamed")

    def __init__(self) -> None:
        self.started = False
        self.pending: list[str] = []
        self.streamed: list[str] = []


#: item types that are ours to interpret; everything else is carried opaque


class OpenAIResponsesCall(SSECall):
    """The response state machine for one streamed Responses API call."""

    api = "openai-responses"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._tools: dict[int, _Tool] = {}
        self._streamed: dict[Hashable, bool] = {}  # text keys that got deltas
        self._parts_streamed: set[tuple[int, tuple[str, int]]] = set()
        self._last_part: dict[int, tuple[str, int]] = {}  # reasoning item -> last part seen
        #: the ``sequence_number`` of the last event handled: a resumed stream starts after it
        self.last_sequence: int | None = None
        #: this call reads a resumed stream: each event must be numbered the one after
        self._resumed = False

    # -- routing ----------------------------------------------------------------
    def on_event(self, event: ServerSentEvent) -> None:
        data = event.data
        if not data or data.isspace() or data == "[DONE]":
            return
        ev = _decode_event(data)  # a body cut inside this event: see SSECall._eof
        kind = ev.type
        handler = _HANDLERS.get(kind)
        if self._resumed and kind != "error" and ev.sequence_number != _after(self.last_sequence):
            self._discontinuous(ev.sequence_number)
            return
        if ev.sequence_number is not None:
            self.last_sequence = ev.sequence_number
        if handler is not None:
            handler(self, ev)
        elif kind.endswith((".in_progress", ".searching", ".interpreting", ".generating")):
            pass  # progress notices of server-side tools; their items arrive whole at done
        else:
            log.debug("openai-responses: ignoring event type %r", kind)

    # -- resuming (``Options(recover="resume")``, see `streamfn.core.recovery`) ------------
    def resume(self, request: HTTPRequest) -> OpenAIResponsesCall:
        """This call once more, reading the rest of its response from ``request``: from
        then on every event is checked to be the one after the last one read."""
        super().resume(request)
        self._resumed = True
        return self

    def _discontinuous(self, got: int | None) -> None:
        """A resumed stream that does not go on from where the cut left it (the server
        ignored ``starting_after``, numbered its events afresh, or skipped some): what
        it says would repeat or leave out part of the answer, so the stream ends here in
        an `Error` (never a `Done`: the answer is cut) and nothing of it is used."""
        expected = _after(self.last_sequence)
        if got is None:
            said, why = "an event without a sequence_number", "its place is unknown"
        else:
            said, why = f"event {got}", "a repeat or a restart" if got < expected else "a gap"
        self.fail(
            Error.protocol(
                f"{self.model.provider}: the resumed response {self.response_id} did not "
                f"go on where it was cut: expected event {expected}, got {said} ({why}; "
                "the server ignored starting_after or numbered its events anew); the "
                "answer is cut there, nothing of the resumed stream is used"
            )
        )

    # -- lifecycle ----------------------------------------------------------------
    def _on_created(self, ev: _Event) -> None:
        if ev.response is not None and ev.response.id:
            self.response_id = ev.response.id
            self.response_model = ev.response.model or None

    def _on_completed(self, ev: _Event) -> None:
        self._take_usage(ev)
        self._flush_tools()
        self.finish(StopReason.STOP)  # tool calls make it tool_use (`finish`)

    def _on_incomplete(self, ev: _Event) -> None:
        self._take_usage(ev)
        self._flush_tools()
        details = ev.response.incomplete_details if ev.response else None
        reason = details.reason if details else None
        if reason == "content_filter":
            self.fail(
                Error.content_filter(
                    f"{self.model.provider}: the answer was stopped by the content filter"
                )
            )
            return
        if reason != "max_output_tokens":
            log.warning("openai-responses: incomplete for reason %r, read as length", reason)
        self.finish(StopReason.LENGTH)

    def _on_failed(self, ev: _Event) -> None:
        self._take_usage(ev)
        info = ev.response.error if ev.response else None
        self._fail_with(info, "the response failed")

    def _on_error(self, ev: _Event) -> None:
        info = ev.error or _ErrorInfo(message=ev.message, code=ev.code)
        self._fail_with(info, "stream error")

    def _fail_with(self, info: _ErrorInfo | None, fallback: str) -> None:
        if info is None:
            label, message = None, fallback
        else:
            label, message = error_text(info.message, info.code, info.type, fallback=fallback)
        self.fail(classify_stream_error(f"{self.model.provider}: {message}", code=label))

    def _take_usage(self, ev: _Event) -> None:
        if ev.response is not None:
            if ev.response.id:
                self.response_id = ev.response.id
            if ev.response.usage is not None:
                self.usage = convert_usage(ev.response.usage)

    # -- items ----------------------------------------------------------------------
    def _on_item_added(self, ev: _Event) -> None:
        if not ev.item:
            return
        item = _decode_item(ev.item)
        if item.type == "function_call":
            self._start_tool(ev.output_index, item)

    def _on_item_done(self, ev: _Event) -> None:
        if not ev.item:
            raise ValueError("output_item.done without an item")
        item = _decode_item(ev.item)
        index = ev.output_index
        if item.type == "function_call":
            self._finish_tool(index, item)
        elif item.type == "reasoning":
            self._finish_reasoning(index, item)
        elif item.type == "message":
            for ci, part in enumerate(item.content or []):
                key = ("text", index, ci)
                text = part.text if part.type == "output_text" else part.refusal
                if text and not self._streamed.get(key):
                    self.emit.text(key, text)
                if part.annotations:  # the whole list: replaces what annotation.added gave
                    self.emit.cite(key, map(openai_citation, part.annotations), replace=True)
                self.emit.end(key)
        else:
            self.emit.opaque(self.model.provider, item.type, bytes(ev.item).decode())

    # -- text -----------------------------------------------------------------------
    def _on_text_delta(self, ev: _Event) -> None:
        key = ("text", ev.output_index, ev.content_index)
        if ev.delta:
            self._streamed[key] = True
        self.emit.text(key, ev.delta or "")

    def _on_text_done(self, ev: _Event) -> None:
        key = ("text", ev.output_index, ev.content_index)
        final = ev.text if ev.text is not None else ev.refusal
        if final and not self._streamed.get(key):
            self.emit.text(key, final)
            self._streamed[key] = True

    def _on_annotation(self, ev: _Event) -> None:
        key = ("text", ev.output_index, ev.content_index)
        self.emit.cite(key, [openai_citation(ev.annotation)])

    # -- reasoning --------------------------------------------------------------------
    # One thinking block per reasoning item; its parts are summary parts ("s", i)
    # or plain reasoning text parts ("c", i), joined with a blank line.
    def _on_summary_delta(self, ev: _Event) -> None:
        self._thinking(ev.output_index, ("s", ev.summary_index), ev.delta or "")

    def _on_summary_done(self, ev: _Event) -> None:
        self._thinking_done(ev.output_index, ("s", ev.summary_index), ev.text)

    def _on_reasoning_text_delta(self, ev: _Event) -> None:
        self._thinking(ev.output_index, ("c", ev.content_index), ev.delta or "")

    def _on_reasoning_text_done(self, ev: _Event) -> None:
        self._thinking_done(ev.output_index, ("c", ev.content_index), ev.text)

    def _thinking(self, output_index: int, part: tuple[str, int], delta: str) -> None:
        key = ("thinking", output_index)
        if delta:
            last = self._last_part.get(output_index)
            if last is not None and last != part:
                delta = "\n\n" + delta
            self._last_part[output_index] = part
            self._parts_streamed.add((output_index, part))
        self.emit.thinking(key, delta)

    def _thinking_done(self, output_index: int, part: tuple[str, int], text: str | None) -> None:
        if text and (output_index, part) not in self._parts_streamed:
            self._thinking(output_index, part, text)

    def _finish_reasoning(self, index: int, item: _Item) -> None:
        key = ("thinking", index)
        for i, p in enumerate(item.summary or []):
            self._thinking_done(index, ("s", i), p.text)
        for i, p in enumerate(item.content or []):
            self._thinking_done(index, ("c", i), p.text)
        signature = None
        if item.encrypted_content:
            signature = _JSON.encode(
                {
                    "type": "reasoning",
                    "encrypted_content": item.encrypted_content,
                    "summary": [
                        {"type": "summary_text", "text": p.text or ""} for p in item.summary or []
                    ],
                }
            ).decode()
            if not self.emit.is_open(key):
                self.emit.thinking(key, "")
        self.emit.end(key, signature=signature)

    # -- tool calls -------------------------------------------------------------------
    def _start_tool(self, index: int, item: _Item) -> None:
        tool = self._tools.setdefault(index, _Tool())
        if tool.started:
            return
        if not item.call_id or not item.name:
            raise ValueError("function_call item without call_id or name")
        tool.started = True
        key = ("tool", index)
        self.emit.tool_start(key, item.call_id, item.name)
        if item.arguments:
            tool.pending.insert(0, item.arguments)
        if tool.pending:
            self._tool_delta(index, tool, "".join(tool.pending))
            tool.pending = []

    def _tool_delta(self, index: int, tool: _Tool, delta: str) -> None:
        tool.streamed.append(delta)
        self.emit.tool_delta(("tool", index), delta)

    def _on_args_delta(self, ev: _Event) -> None:
        tool = self._tools.setdefault(ev.output_index, _Tool())
        if not ev.delta:
            return
        if tool.started:
            self._tool_delta(ev.output_index, tool, ev.delta)
        else:
            tool.pending.append(ev.delta)

    def _on_args_done(self, ev: _Event) -> None:
        tool = self._tools.setdefault(ev.output_index, _Tool())
        if ev.arguments is not None and not tool.started:
            tool.pending = [ev.arguments]
        elif ev.arguments is not None:
            self._reconcile(ev.output_index, tool, ev.arguments)

    def _finish_tool(self, index: int, item: _Item) -> None:
        tool = self._tools.setdefault(index, _Tool())
        if not tool.started:
            if item.arguments is not None:
                tool.pending = []  # the done item's arguments are complete
            self._start_tool(index, item)
        elif item.arguments is not None:
            self._reconcile(index, tool, item.arguments)
        self.emit.end(("tool", index))

    def _reconcile(self, index: int, tool: _Tool, final: str) -> None:
        """Deliver what the deltas missed of the final arguments."""
        streamed = "".join(tool.streamed)
        tool.streamed = [streamed]
        if final == streamed:
            return
        if final.startswith(streamed):
            self._tool_delta(index, tool, final[len(streamed) :])
        else:
            log.warning(
                "openai-responses: streamed arguments of output %d differ from the final ones",
                index,
            )

    def _flush_tools(self) -> None:
        for index, tool in self._tools.items():
            if not tool.started and tool.pending:
                log.warning("openai-responses: arguments for output %d without a call", index)


_HANDLERS: Final[dict[str, Any]] = {
    "response.created": OpenAIResponsesCall._on_created,
    "response.in_progress": OpenAIResponsesCall._on_created,
    "response.queued": OpenAIResponsesCall._on_created,
    "response.completed": OpenAIResponsesCall._on_completed,
    "response.incomplete": OpenAIResponsesCall._on_incomplete,
    "response.failed": OpenAIResponsesCall._on_failed,
    "error": OpenAIResponsesCall._on_error,
    "response.output_item.added": OpenAIResponsesCall._on_item_added,
    "response.output_item.done": OpenAIResponsesCall._on_item_done,
    "response.output_text.delta": OpenAIResponsesCall._on_text_delta,
    "response.output_text.done": OpenAIResponsesCall._on_text_done,
    "response.output_text.annotation.added": OpenAIResponsesCall._on_annotation,
    "response.refusal.delta": OpenAIResponsesCall._on_text_delta,
    "response.refusal.done": OpenAIResponsesCall._on_text_done,
    "response.reasoning_summary_text.delta": OpenAIResponsesCall._on_summary_delta,
    "response.reasoning_summary_text.done": OpenAIResponsesCall._on_summary_done,
    "response.reasoning_text.delta": OpenAIResponsesCall._on_reasoning_text_delta,
    "response.reasoning_text.done": OpenAIResponsesCall._on_reasoning_text_done,
    "response.function_call_arguments.delta": OpenAIResponsesCall._on_args_delta,
    "response.function_call_arguments.done": OpenAIResponsesCall._on_args_done,
}


def open_call(model: Model, context: Context, options: Options) -> OpenAIResponsesCall:
    """Build the request and the call that decodes its streamed response."""
    return OpenAIResponsesCall(model, context, options, build_request(model, context, options))
