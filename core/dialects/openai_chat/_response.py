"""OpenAI Chat Completions, and every server that speaks it, as one state machine.

``POST {base_url}/chat/completions`` with ``stream: true``. The OpenAI-compatible
family (Azure OpenAI, Mistral, xAI, Groq, DeepSeek, OpenRouter, Z.ai, and any
vLLM / llama.cpp / LM Studio server) differs only in small ways, so each one is
a `Quirks` configuration selected by ``Model.provider`` rather than a module.

Decisions a caller can rely on (each one is a choice the wire leaves open):

- **Refusals** (``delta.refusal``, structured outputs) stream as an ordinary
  text block and the turn ends with ``stop``: the model did answer, in words,
  and a caller that shows text shows the refusal. A refusal is not the
  provider's safety system; only ``finish_reason: content_filter`` (and Azure's
  filtered results) ends in ``Error(kind=content_filter)``.
- **n > 1**: the event protocol carries one message, so only choice 0 is
  streamed; other choices are dropped with one warning. Usage (and so cost)
  still counts every choice, as the provider bills them.
- **Terminal marker**: ``data: [DONE]``. Usage arrives after the finish reason
  (the ``choices: []`` chunk), so the stream ends at ``[DONE]``, not at the
  finish reason. A body that ends after a finish reason but without ``[DONE]``
  (some compatible servers) still ends in ``Done``; a body that ends before
  any finish reason is a network error ("stream ended early"). ``[DONE]``
  without any finish reason ends in ``Done(stop)`` with a warning.
- **Errors inside a 200 stream** (``{"error": {...}}`` chunks, OpenRouter's
  error-with-usage chunk, Groq's ``event: error``) end the stream with the
  classified `Error`, keeping the usage the chunk carried.
- **Tool-call fragments** are routed by ``index``; a fragment whose ``index``
  is known but whose ``id`` differs starts a new call (servers that number
  every call 0); without ``index`` they are routed by ``id`` (Mistral); with
  neither they continue the last call.
- **Reasoning**: ``reasoning_content`` (DeepSeek, xAI, Z.ai, vLLM),
  ``reasoning`` (OpenRouter, Groq) and Mistral's typed ``thinking`` content
  chunks become thinking blocks; OpenRouter's Anthropic signature
  (``reasoning_details[].signature``) is kept on ``ThinkingEnd``.
- **Usage** in our convention: cached prompt tokens (``cached_tokens`` or
  DeepSeek's ``prompt_cache_hit_tokens``) move from input to cache_read;
  reasoning is a subset of output, and where a server counts it outside
  ``completion_tokens`` (xAI: ``total = prompt + completion + reasoning``) it is
  added back so ``output`` always includes it. Groq's ``x_groq.usage`` is used
  when the top-level one is absent.
"""

from __future__ import annotations

import logging
from typing import Final

import msgspec

import streamfn.core.dialects.openai_chat._response_structs as structs
from streamfn.core._classify import classify_message, classify_stream_error
from streamfn.core._emitter import Emitter
from streamfn.core._events import Error, StopReason
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core._protocol import TEXT, THINKING
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects._openai_citations import openai_citation
from streamfn.core.dialects._openai_common import (
    Quirks,
    call_signature,
    convert_usage,
    error_text,
    quirks_for,
)
from streamfn.core.dialects.openai_chat._request import build_request
from streamfn.core.dialects.openai_chat._tables import FINISH_REASONS_READ
from streamfn.core.providers._base import HTTPRequest, SSECall
from streamfn.core.wire._sse import decode_data

__all__ = ["OpenAIChatCall", "Quirks", "build_request", "open_call", "quirks_for"]

log = logging.getLogger("streamfn")

_decode_chunk: Final = structs.decode_chunk
_decode_hot: Final = structs.decode_hot
_decode_piece: Final = structs.decode_piece
_decode_error: Final = structs.decode_error



#: the emitter key of the open text or thinking block (one suffices: a closed block is never
#: continued, a new one gets a new index, and one kind closes when the other starts under it)
_SEGMENT: Final = "segment"


def _hot_or_none(data: bytes) -> structs.HotChunk | None:
    """A chunk that is more than a piece, decoded; None for [DONE], invalid UTF-8 or a
    fault (`OpenAIChatCall._on_raw` decides)."""
    try:
        return _decode_hot(data)
    except Exception:
        return None


def _flush_run(emit: Emitter, text: bool, pending: list[str]) -> bool:
    """The run gathered so far to the emitter (``pending`` is emptied); True when
    that finished the stream (the cap fell inside the run)."""
    if len(pending) == 1:  # a live stream's read: one delta, no run to set up
        emit.delta(_SEGMENT, pending[0], TEXT if text else THINKING)
    elif text:
        emit.texts(_SEGMENT, pending)
    else:
        emit.thinkings(_SEGMENT, pending)
    pending.clear()
    return emit.finished


class _ToolSlot:
    """One tool call being assembled; arguments wait here until its name is known."""

    __slots__ = ("id", "id_from_wire", "key", "name", "pending", "started")

    def __init__(self, key: tuple[str, int], id: str, id_from_wire: bool) -> None:
        self.key = key
        self.id = id
        self.id_from_wire = id_from_wire
        self.name = ""
        self.started = False
        self.pending: list[str] = []


class OpenAIChatCall(SSECall):
    """The response state machine for one streamed chat completion."""

    api = "openai-chat"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._finish_reason: str | None = None
        self._tools: list[_ToolSlot] = []
        #: `on_run`'s gathered deltas, reused: empty between reads (each run flushes it)
        self._pending: list[str] = []
        self._tool_by_index: dict[int, _ToolSlot] = {}
        self._tool_by_id: dict[str, _ToolSlot] = {}
        self._warned_choices = False

    # -- SSE events -----------------------------------------------------------
    raw_data = True

    def on_data(self, data: bytes, event_type: bytes) -> bool:
        # an event's type matters here: the rest is a one-element run
        if event_type and event_type != b"message":
            if event_type == b"error":
                self._stream_error(data.decode("utf-8", "replace"))
            else:
                log.debug(
                    "openai-chat: ignoring SSE event type %r", event_type.decode("utf-8", "replace")
                )
            return self.emit.finished
        return self.on_run([data])

    def on_run(self, datas: list[bytes]) -> bool:
        # The one path for chunks: one more text or reasoning delta and nothing else joins
        # `pending` (one emitter call per run), one more piece of a started call's
        # arguments goes to the emitter at once, any other chunk flushes it and goes the
        # general way. Once the id is known no chunk's id is decoded: so a chunk is
        # accepted or refused alike however the reads fall.
        emit = self.emit
        pending = self._pending
        pending_text = True
        hot = self.response_id is not None  # until then every chunk goes the general way
        for data in datas:
            try:
                chunk: structs.HotChunk | None = (_decode_piece if hot else _decode_chunk)(data)
                piece_chunk = hot  # a `PieceChunk`: no usage, error, finish...
            except Exception:  # more than a piece, [DONE], invalid UTF-8, a fault
                chunk = _hot_or_none(data) if hot else None
                piece_chunk = False
            if piece_chunk and chunk is not None:
                choices = chunk.choices
                if choices is not None and len(choices) == 1:
                    choice = choices[0]
                    delta = choice.delta
                    if delta is not None and choice.index == 0 and not delta.reasoning_details:
                        content = delta.content
                        calls = delta.tool_calls
                        if calls is not None:
                            found = None if content else self._arguments_piece(delta, calls)
                            if found is not None:
                                if pending and _flush_run(emit, pending_text, pending):
                                    return True
                                emit.tool_delta(found[0], found[1])
                                if emit.finished:  # the cap
                                    return True
                                continue
                            piece = None  # the general way
                        elif content:  # text alone, or the general way
                            text = True
                            alone = delta.reasoning_content is None and delta.reasoning is None
                            piece = content if type(content) is str and alone else None
                        else:
                            text = False
                            piece = delta.reasoning_content or delta.reasoning
                        if piece:
                            if text is not pending_text and pending:  # noqa: SIM102
                                if _flush_run(emit, pending_text, pending):
                                    return True  # the cap fell inside the run
                            pending_text = text
                            pending.append(piece)
                            continue
            if pending and _flush_run(emit, pending_text, pending):
                return True
            if self._on_chunk(chunk) if chunk is not None else self._on_raw(data):
                return True
            hot = self.response_id is not None
        if pending:
            _flush_run(emit, pending_text, pending)
        return emit.finished

    def _arguments_piece(
        self, delta: structs.Delta, calls: list[structs.ToolCallDelta]
    ) -> tuple[tuple[str, int], str] | None:
        """(the call's emitter key, the piece) when ``delta`` (without content) is one
        more piece of a started call's arguments and nothing else: what `_tool_fragment`
        would emit, without its detour; else None."""
        if len(calls) != 1 or delta.reasoning_content or delta.reasoning:
            return None
        call = calls[0]
        index = call.index
        function = call.function
        if index is None or function is None or call.id is not None or call.extra_content:
            return None
        slot = self._tool_by_index.get(index)
        arguments = function.arguments
        return (slot.key, arguments) if slot is not None and slot.started and arguments else None

    def _on_raw(self, data: bytes) -> bool:
        """A chunk the hot decode refused: the end marker, or the spec's decoding
        of invalid UTF-8 (a fault raises); True once the stream is finished."""
        if not data:
            return False
        if data == b"[DONE]":
            self._complete()
            return self.emit.finished
        return self._on_chunk(
            decode_data(_decode_chunk if self.response_id is None else _decode_hot, data)
        )

    def _on_chunk(self, chunk: structs.HotChunk) -> bool:
        """A decoded chunk the general way; True once the stream is finished."""
        if self.response_id is None and isinstance(chunk, structs.Chunk) and chunk.id:
            self.response_id = chunk.id
            self.response_model = chunk.model or None
        if (
            chunk.usage is not None or chunk.x_groq is not None or chunk.error is not None
        ) and self._chunk_extras(chunk):
            return True
        for choice in chunk.choices or ():
            if choice.index:
                self._other_choice()
                continue
            if choice.delta is not None:
                self._on_delta(choice.delta)
            if choice.finish_reason is not None:
                self._finish_reason = choice.finish_reason
        return self.emit.finished

    def _chunk_extras(self, chunk: structs.HotChunk) -> bool:
        """Usage and in-stream errors; True when the chunk ended the stream."""
        usage = chunk.usage
        if usage is None and chunk.x_groq is not None:
            usage = chunk.x_groq.usage
        if usage is not None:
            self.usage = convert_usage(usage)
        if chunk.error is not None:
            self._fail_with(chunk.error)
            return True
        return False

    def _other_choice(self) -> None:
        if not self._warned_choices:
            self._warned_choices = True
            log.warning(
                "openai-chat: %s streamed several choices (n > 1); only choice 0 is kept",
                self.model.provider,
            )

    def on_end(self) -> None:
        if self._finish_reason is not None:
            log.debug("openai-chat: body ended after finish_reason without [DONE]")
            self._complete()

    # -- deltas ---------------------------------------------------------------
    def _on_delta(self, delta: structs.Delta) -> None:
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning:
            self._thinking(reasoning)
        if delta.reasoning_details:
            for detail in delta.reasoning_details:
                if detail.signature:
                    # reasoning signature (OpenRouter/Anthropic), for the thinking block's end
                    self.emit.sign(_SEGMENT, detail.signature)
        content = delta.content
        if content:
            if isinstance(content, str):
                self.emit.text(_SEGMENT, content)
            else:
                self._parts(content)
        if delta.refusal:
            self.emit.text(_SEGMENT, delta.refusal)
        if delta.tool_calls:
            for fragment in delta.tool_calls:
                self._tool_fragment(fragment)
        if delta.annotations:
            self.emit.cite(_SEGMENT, map(openai_citation, delta.annotations))

    def _parts(self, parts: list[structs.Part]) -> None:
        for part in parts:
            if part.type == "text":
                if part.text:
                    self.emit.text(_SEGMENT, part.text)
            elif part.type == "thinking":
                thinking = part.thinking
                if isinstance(thinking, str):
                    self._thinking(thinking)
                elif thinking:
                    for inner in thinking:
                        if inner.text:
                            self._thinking(inner.text)
            else:
                log.debug("openai-chat: ignoring content chunk type %r", part.type)

    def _thinking(self, delta: str) -> None:
        self.emit.thinking(_SEGMENT, delta)

    # -- tool calls -----------------------------------------------------------
    def _slot(self, fragment: structs.ToolCallDelta) -> _ToolSlot:
        index, wire_id = fragment.index, fragment.id
        if index is not None:
            slot = self._tool_by_index.get(index)
            if slot is not None:
                if not wire_id or wire_id == slot.id:
                    return slot
                if not slot.id_from_wire and not slot.started:
                    slot.id, slot.id_from_wire = wire_id, True
                    self._tool_by_id[wire_id] = slot
                    return slot
                # same index, another id: a server that numbers every call 0
        elif wire_id:
            slot = self._tool_by_id.get(wire_id)
            if slot is not None:
                return slot
        elif self._tools:
            return self._tools[-1]
        number = len(self._tools)
        slot = _ToolSlot(("tool", number), wire_id or f"call_{number}", bool(wire_id))
        self._tools.append(slot)
        if index is not None:
            self._tool_by_index[index] = slot
        self._tool_by_id[slot.id] = slot
        return slot

    def _tool_fragment(self, fragment: structs.ToolCallDelta) -> None:
        slot = self._slot(fragment)
        self.emit.sign(slot.key, call_signature(fragment.extra_content))
        function = fragment.function
        if function is None:
            return
        if not slot.started:
            if function.name:
                slot.name += function.name
            if function.arguments:
                slot.pending.append(function.arguments)
            if slot.name:
                self._start_tool(slot)
            return
        if function.arguments:
            self.emit.tool_delta(slot.key, function.arguments)

    def _start_tool(self, slot: _ToolSlot) -> None:
        self.emit.end(_SEGMENT)
        slot.started = True
        self.emit.tool_start(slot.key, slot.id, slot.name)
        if slot.pending:
            self.emit.tool_delta(slot.key, "".join(slot.pending))
            slot.pending = []

    # -- ending -----------------------------------------------------------------
    def _complete(self) -> None:
        for slot in self._tools:
            if not slot.started:
                log.warning("openai-chat: tool call %s arrived without a name", slot.id)
                self._start_tool(slot)
        self.emit.end(_SEGMENT)
        reason = self._finish_reason
        if reason is None:
            log.warning("openai-chat: %s ended without a finish_reason", self.model.provider)
            self.finish(StopReason.STOP)
            return
        stop = FINISH_REASONS_READ.get(reason)
        if stop is not None:
            self.finish(stop)
        elif reason == "content_filter":
            self.fail(
                Error.content_filter(
                    f"{self.model.provider}: the answer was stopped by the content filter"
                )
            )
        elif reason == "error":
            self.fail(Error.protocol(f"{self.model.provider} ended the answer with an error"))
        elif reason == "insufficient_system_resource":  # DeepSeek under load
            self.fail(Error.network(f"{self.model.provider}: {reason}"))
        else:
            log.warning("openai-chat: unknown finish_reason %r read as stop", reason)
            self.finish(StopReason.STOP)

    def _stream_error(self, data: str) -> None:
        try:
            error = _decode_error(data).error
        except msgspec.DecodeError:
            error = None
        self._fail_with(error if error is not None else data.strip() or "unknown error")

    def _fail_with(self, error: structs.ErrorBody | str) -> None:
        provider = self.model.provider
        if isinstance(error, str):
            self.fail(classify_stream_error(f"{provider}: {error}"))
            return
        status = error.status_code
        code = error.code
        if status is None and isinstance(code, int) and 400 <= code <= 599:
            status = code
        label, message = error_text(error.message, code, error.type, fallback="unknown error")
        # Unlike a status documented per error type, this one is what the chunk
        # itself reports (OpenRouter's code 429), so the Error keeps it.
        self.fail(classify_message(f"{provider}: {message}", status=status, code=label))


def open_call(model: Model, context: Context, options: Options) -> OpenAIChatCall:
    """Build the request and the call that decodes its streamed response."""
    return OpenAIChatCall(model, context, options, build_request(model, context, options))
