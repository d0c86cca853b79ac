"""Anthropic Messages (``POST {base_url}/v1/messages``, ``stream: true``) as one state machine.

Decisions a caller can rely on (each one is a choice the wire leaves open):

- **Blocks** are routed by the wire's ``index``, so parallel blocks and tool
  calls keep their own content index. Text, ``thinking`` (with the
  ``signature_delta`` on `ThinkingEnd`), ``redacted_thinking`` (no text; its
  ``data`` is `ThinkingEnd.signature` with ``redacted=True``) and client
  ``tool_use`` become streamfn blocks. Every other block type (server tool use
  and results: web search, code execution, MCP, text editor, tool search, and
  any type added later) is carried whole as an `OpaqueBlock` at its
  ``content_block_stop``, with its streamed ``input_json_delta`` folded into
  ``input``, so a caller can show it and a replay to Anthropic sends it back
  verbatim (`OpaqueContent`). Its content index is taken at that stop (the
  emitter numbers an opaque block when it is complete); Anthropic streams
  server blocks start to stop, so this is the wire order.
- **Terminal marker**: ``message_stop``. A body that ends before it ends in
  ``Error(kind=network, "stream ended early")`` even after ``message_delta``:
  Anthropic always sends ``message_stop``, so its absence means a cut stream.
  A last event cut mid-JSON by the end of the body is that too, not a
  protocol error.
- **Stop reasons**: ``end_turn``/``stop_sequence`` -> stop; ``max_tokens`` ->
  length (a tool call cut by it is closed; the fold reports its unparsable
  arguments); ``tool_use`` -> tool_use; ``pause_turn`` -> stop with ``Done.paused``:
  a long server-tool turn paused; the shells continue it (`streamfn.core.stages._pause_turn`).
  ``refusal`` -> ``Error(kind=content_filter)``: it is set by Anthropic's
  streaming safety classifiers, not by the model declining in words, so it is
  the provider's safety system, as ``content_filter`` is for OpenAI; the text
  streamed before it stays in the folded message.
  ``model_context_window_exceeded`` -> ``Error(kind=context_overflow)``.
- **Errors inside the stream** (``event: error``: overloaded, rate limit,
  api error) go through `classify_stream_error`; the error ``type`` is used as the
  tie-breaker Anthropic documents (``overloaded_error`` is its 529) without
  claiming an HTTP status for a 200 stream.
- **Usage** in our convention: ``input_tokens`` (already without cache) ->
  input, ``cache_read_input_tokens`` -> cache_read,
  ``cache_creation_input_tokens`` -> cache_write, ``output_tokens`` -> output.
  ``message_start`` gives the first counts; ``message_delta`` counts are
  cumulative and override field by field. Anthropic does not report thinking
  tokens apart, so ``reasoning`` stays 0.
- Citations (``citations_delta``) are gathered per text block and sent with
  its ``TextEnd`` (``citations``), as every provider's are.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import msgspec

import streamfn.core.dialects.anthropic._response_structs as structs
from streamfn.core._classify import classify_stream_error
from streamfn.core._events import Error, StopReason, Usage
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core._protocol import OPAQUE, TEXT, THINKING, TOOL
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects.anthropic._citations import anthropic_citation
from streamfn.core.dialects.anthropic._request import build_request
from streamfn.core.dialects.anthropic._tables import ERROR_STATUS, STOP_REASONS_READ
from streamfn.core.json._structured import ANSWER_TOOL, answers_with_tool
from streamfn.core.providers._base import HTTPRequest, SSECall
from streamfn.core.wire._sse import decode_data

__all__ = ["AnthropicCall", "build_request", "open_call"]

log = logging.getLogger("streamfn")

_JSON: Final = msgspec.json.Encoder()


_decode_event: Final = structs.decode_event
_decode_hot: Final = structs.decode_hot
_decode_head: Final = structs.decode_head
_decode_object: Final = msgspec.json.Decoder(dict[str, Any]).decode

#: what each wire block index holds: the protocol's block kinds, plus Anthropic's
#: redacted thinking (a thinking block that arrives whole, as opaque data)
_TEXT: Final = TEXT
_THINKING: Final = THINKING
_REDACTED: Final = "redacted thinking"
_TOOL: Final = TOOL
_OPAQUE: Final = OPAQUE
_ANSWER: Final = "answer"  # the forced answer tool of emulated structured output, shown as text
#: the hot delta each kind of open block takes (`on_run`)
_PIECE_OF: Final[dict[str, type]] = {
    _TEXT: structs.HotText,
    _THINKING: structs.HotThinking,
    _TOOL: structs.HotJson,
}


class _Opaque:
    """A server-side block held until its stop, with its streamed input."""

    __slots__ = ("head", "parts", "type")

    def __init__(self, head: bytes, block_type: str) -> None:
        self.head = head
        self.type = block_type
        self.parts: list[str] = []

    def json(self) -> str:
        if not self.parts:
            return self.head.decode()
        block = _decode_object(self.head)
        text = "".join(self.parts)
        block["input"] = _decode_object(text) if text.strip() else {}
        return _JSON.encode(block).decode()


class AnthropicCall(SSECall):
    """The response state machine for one streamed Messages API call."""

    api = "anthropic"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._kinds: dict[int, str] = {}  # wire index -> block kind, for open blocks
        self._signatures: dict[int, str] = {}
        self._opaque: dict[int, _Opaque] = {}
        self._stop_reason: str | None = None
        #: structured output rides on a forced tool: its input is the answer, as text
        self._answer_tool = answers_with_tool(model, options)
        self._answered: dict[int, bool] = {}  # answer block -> any text yet
        #: `on_run`'s gathered deltas, reused: empty between reads (each run flushes it)
        self._pending: list[str] = []

    # -- SSE events -----------------------------------------------------------
    raw_data = True
    runs_any_type = True  # the type is in the data too

    def on_run(self, datas: list[bytes]) -> bool:
        # The one path for events: a text, thinking or tool-argument delta for an
        # open block of that kind joins `pending` while the block stays the same,
        # handed to the emitter in one call; any other event flushes it and goes
        # the general way.
        kinds = self._kinds
        pending = self._pending
        run_index = -1
        run_kind = ""
        for data in datas:
            try:
                hot: structs.HotDelta | None = _decode_hot(data)
            except Exception:  # another event, invalid UTF-8 or a fault: the general way
                hot = None
            if hot is not None:
                index = hot.index
                kind = kinds.get(index, "")
                delta = hot.delta
                if type(delta) is _PIECE_OF.get(kind):  # the delta the open block takes
                    if pending and (index != run_index or kind != run_kind):
                        self._flush_run(run_kind, run_index, pending)
                        if self.emit.finished:  # the cap fell inside the run
                            return True
                    run_index = index
                    run_kind = kind
                    pending.append(delta.piece)
                    continue
            if pending:
                self._flush_run(run_kind, run_index, pending)
                if self.emit.finished:
                    return True
            # the spec's decoding of invalid UTF-8; a fault raises
            self._on_wire(decode_data(_decode_event, data))
            if self.emit.finished:
                return True
        if pending:
            self._flush_run(run_kind, run_index, pending)
        return self.emit.finished

    def _flush_run(self, kind: str, index: int, pending: list[str]) -> None:
        """The run gathered so far to the emitter; ``pending`` is emptied."""
        emit = self.emit
        if len(pending) == 1:  # a live stream's read: one delta, no run to set up
            if kind == _TOOL:
                emit.tool_delta(index, pending[0])
            else:  # text or thinking: the emitter's one body for both, called directly
                emit.delta(index, pending[0], kind)
        elif kind == _TEXT:
            emit.texts(index, pending)
        elif kind == _THINKING:
            emit.thinkings(index, pending)
        else:
            emit.tool_deltas(index, pending)
        pending.clear()

    def _on_wire(self, wire: structs.WireEvent) -> None:
        kind = wire.type
        if kind == "content_block_delta":
            self._delta(wire)
        elif kind == "content_block_start":
            self._start(wire)
        elif kind == "content_block_stop":
            self._stop(_index(wire))
        elif kind == "message_start":
            message = wire.message
            if message is None:
                raise ValueError("message_start without a message")
            self.response_id = message.id
            self.response_model = message.model or None
            if message.usage is not None:
                self._usage(message.usage)
        elif kind == "message_delta":
            if wire.delta is not None and wire.delta.stop_reason is not None:
                self._stop_reason = wire.delta.stop_reason
            if wire.usage is not None:
                self._usage(wire.usage)
        elif kind == "message_stop":
            self._complete()
        elif kind == "error":
            self._stream_error(wire.error)
        elif kind != "ping":
            log.debug("anthropic: ignoring event type %r", kind)

    # -- blocks ---------------------------------------------------------------
    def _start(self, wire: structs.WireEvent) -> None:
        index = _index(wire)
        if index in self._kinds:
            raise ValueError(f"content block {index} started twice")
        raw = wire.content_block
        if not raw:
            raise ValueError("content_block_start without a content_block")
        head = _decode_head(raw)
        block_type = head.type
        if block_type == "text":
            self._kinds[index] = _TEXT
            self.emit.text(index, head.text)
            if head.citations:
                self.emit.cite(index, [anthropic_citation(c) for c in head.citations])
        elif block_type == "thinking":
            self._kinds[index] = _THINKING
            self.emit.thinking(index, head.thinking)
            if head.signature:
                self._signatures[index] = head.signature
        elif block_type == "redacted_thinking":
            self._kinds[index] = _REDACTED
            self.emit.thinking(index, "")
            self._signatures[index] = head.data
        elif block_type == "tool_use" and self._answer_tool and head.name == ANSWER_TOOL:
            self._kinds[index] = _ANSWER
            initial = bytes(head.input).strip()
            text = initial.decode() if initial and initial != b"{}" else ""
            self._answered[index] = bool(text)
            self.emit.text(index, text)
        elif block_type == "tool_use":
            self._kinds[index] = _TOOL
            self.emit.tool_start(index, head.id, head.name)
            initial = bytes(head.input).strip()
            if initial and initial != b"{}":
                # A complete input in the start (no deltas will follow).
                self.emit.tool_delta(index, initial.decode())
        else:
            self._kinds[index] = _OPAQUE
            self._opaque[index] = _Opaque(bytes(raw), block_type)

    def _delta(self, wire: structs.WireEvent) -> None:
        index = _index(wire)
        delta = wire.delta
        if delta is None:
            raise ValueError("content_block_delta without a delta")
        kind = self._kinds.get(index)
        if kind is None:
            raise ValueError(f"delta for content block {index}, which is not open")
        dtype = delta.type
        if dtype == "text_delta":
            if kind != _TEXT or delta.text is None:
                raise ValueError(f"text_delta for a non-text block {index}")
            self.emit.text(index, delta.text)
        elif dtype == "input_json_delta":
            if delta.partial_json is None:
                raise ValueError("input_json_delta without partial_json")
            if kind == _TOOL:
                self.emit.tool_delta(index, delta.partial_json)
            elif kind == _ANSWER:
                self._answered[index] = self._answered[index] or bool(delta.partial_json)
                self.emit.text(index, delta.partial_json)
            elif kind == _OPAQUE:
                self._opaque[index].parts.append(delta.partial_json)
            else:
                raise ValueError(f"input_json_delta for block {index}, which takes no input")
        elif dtype == "thinking_delta":
            if kind != _THINKING or delta.thinking is None:
                raise ValueError(f"thinking_delta for a non-thinking block {index}")
            self.emit.thinking(index, delta.thinking)
        elif dtype == "citations_delta":
            if kind != _TEXT:
                raise ValueError(f"citations_delta for a non-text block {index}")
            self.emit.cite(index, [anthropic_citation(delta.citation)])
        elif dtype == "signature_delta":
            if kind != _THINKING or delta.signature is None:
                raise ValueError(f"signature_delta for a non-thinking block {index}")
            self._signatures[index] = self._signatures.get(index, "") + delta.signature
        else:
            log.debug("anthropic: ignoring %s for block %d", dtype, index)

    def _stop(self, index: int) -> None:
        kind = self._kinds.pop(index, None)
        if kind is None:
            raise ValueError(f"content_block_stop for block {index}, which is not open")
        if kind == _OPAQUE:
            block = self._opaque.pop(index)
            self.emit.opaque("anthropic", block.type, block.json())
        else:
            if kind == _ANSWER and not self._answered.get(index):
                self.emit.text(index, "{}")  # an empty input streams no delta at all
            signature = self._signatures.pop(index, None) or None
            self.emit.end(index, signature=signature, redacted=kind == _REDACTED)

    def _usage(self, wire: structs.Usage) -> None:
        old = self.usage
        self.usage = Usage(
            input=old.input if wire.input_tokens is None else wire.input_tokens,
            output=old.output if wire.output_tokens is None else wire.output_tokens,
            cache_read=(
                old.cache_read
                if wire.cache_read_input_tokens is None
                else wire.cache_read_input_tokens
            ),
            cache_write=(
                old.cache_write
                if wire.cache_creation_input_tokens is None
                else wire.cache_creation_input_tokens
            ),
        )

    # -- ending ---------------------------------------------------------------
    def _complete(self) -> None:
        # Close what the wire left open (a block cut by max_tokens) in index order.
        for index in sorted(self._kinds):
            if self._kinds[index] == _OPAQUE:
                log.warning("anthropic: server block %d was never stopped", index)
            try:
                self._stop(index)
            except msgspec.DecodeError:  # input cut mid-JSON: keep the block as it started
                block = self._opaque.pop(index, None)
                if block is not None:
                    self.emit.opaque("anthropic", block.type, block.head.decode())
        reason = self._stop_reason
        if reason == "tool_use" and self._answered:
            reason = "end_turn"  # the forced answer tool was the answer, not a call to run
        stop = STOP_REASONS_READ.get(reason) if reason is not None else StopReason.STOP
        if reason is None:
            log.warning("anthropic: message_stop without a stop_reason")
        if stop is not None:
            self.finish(stop, paused=reason == "pause_turn")
        elif reason == "refusal":
            self.fail(
                Error.content_filter(
                    f"{self.model.provider}: the answer was stopped by the safety classifier "
                    "(stop_reason=refusal)"
                )
            )
        elif reason == "model_context_window_exceeded":
            self.fail(
                Error.context_overflow(
                    f"{self.model.provider}: the model's context window was exceeded"
                )
            )
        else:
            log.warning("anthropic: unknown stop_reason %r read as stop", reason)
            self.finish(StopReason.STOP)

    def _stream_error(self, error: structs.ErrorBody | None) -> None:
        if error is None:
            self.fail(Error.protocol(f"{self.model.provider}: error event without an error"))
            return
        message = f"{self.model.provider}: {error.type}: {error.message or 'unknown error'}"
        self.fail(
            classify_stream_error(
                message, status_hint=ERROR_STATUS.get(error.type), code=error.type
            )
        )


def _index(wire: structs.WireEvent) -> int:
    if wire.index is None:
        raise ValueError(f"{wire.type} without an index")
    return wire.index


def open_call(model: Model, context: Context, options: Options) -> AnthropicCall:
    """Build the request and the call that decodes its streamed response."""
    return AnthropicCall(model, context, options, build_request(model, context, options))
