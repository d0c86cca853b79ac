"""Google Gemini (``streamGenerateContent?alt=sse``) and Vertex AI as one state machine.

``POST {base_url}/v1beta/models/{id}:streamGenerateContent?alt=sse`` with
``x-goog-api-key``; when ``Model.provider == "vertex"`` the Vertex AI URL
(``https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/
{location}/publishers/google/models/{id}:streamGenerateContent?alt=sse``, project
and location from ``Model.extra``) with ``Authorization: Bearer <access token>``.

Decisions a caller can rely on (each one is a choice the wire leaves open):

- **Blocks**: consecutive text parts are one text block, consecutive
  ``thought: true`` parts one thinking block; a switch between them, or a
  function call, closes the open block, so order is kept.
- **Signatures** (``thoughtSignature``) stay with the block their part belongs
  to: on text -> `TextEnd.signature`, on a thought -> `ThinkingEnd.signature`,
  on a function call -> `ToolCallEnd.signature`. Gemini puts the signature on
  the first text part of an answer, so a signed part does not split the text
  block; a second signed part does (two signatures are never merged).
- **Function calls**: a whole ``functionCall`` is a tool call with one
  argument delta (``args`` exactly as sent). A streamed one (Vertex
  ``streamFunctionCallArguments``: ``{name, willContinue}``, then
  ``partialArgs`` by JSON path, then a closing part without ``willContinue``)
  streams its arguments as JSON text while they arrive, so the live view shows
  them growing. Paths must arrive in document order (they do); one that would
  rewrite JSON already streamed ends the call in ``Error(kind=protocol)``.
- **Tool-call ids**: Gemini's ``functionCall.id`` when it sends one, otherwise
  ``call_<responseId>_<n>`` (``call_<n>`` without a response id):
  deterministic, and unique across turns so a replay to Anthropic (which
  rejects duplicate ids) works. Requests never send ids back: Gemini pairs
  results with calls by name and order.
- **Terminal marker**: a ``finishReason``. Usage may come in a later chunk,
  so the stream ends at the end of the body after a finish reason: a body cut
  after it still ends in `Done`; one cut before it ends in
  ``Error(kind=network, "stream ended early")``.
- **Finish reasons**: ``STOP`` -> stop (tool_use when the answer has function
  calls), ``MAX_TOKENS`` -> length; ``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
  ``PROHIBITED_CONTENT``, ``SPII``, ``IMAGE_SAFETY`` and a prompt
  ``blockReason`` -> ``Error(kind=content_filter)``;
  ``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL`` and
  ``TOO_MANY_TOOL_CALLS`` -> ``Error(kind=invalid_request)``: the model could
  not produce a valid call for the declared tools, which the caller fixes by
  simplifying the tools or the prompt, and which resending as is rarely cures.
  Unknown reasons (``OTHER`` ...) end in stop with a warning.
- **Usage** in our convention (``usageMetadata`` is cumulative; the last one
  wins): input = ``promptTokenCount`` + ``toolUsePromptTokenCount`` -
  ``cachedContentTokenCount``; cache_read = ``cachedContentTokenCount``;
  output = ``candidatesTokenCount`` + ``thoughtsTokenCount``; reasoning =
  ``thoughtsTokenCount``.
- Parts streamfn does not interpret (``executableCode``,
  ``codeExecutionResult``, ``inlineData`` output) are carried as `OpaqueBlock`
  (provider = ``Model.provider``) and sent back verbatim to the same provider.
- Only candidate 0 is streamed (``candidateCount`` > 1 logs one warning).
- Without ``alt=sse`` Gemini streams one JSON array instead;
  ``Model.extra["stream_format"] = "json"`` asks for that and decodes it with
  `GeminiJSONArrayCall` (same events, same decisions).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final, TypeVar

import msgspec

from streamfn.core._classify import classify_stream_error
from streamfn.core._events import Error, StopReason, Usage
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects.gemini._args import PartialArgsWriter
from streamfn.core.dialects.gemini._citations import gemini_citations
from streamfn.core.dialects.gemini._request import (
    DUMMY_THOUGHT_SIGNATURE,
    THINKING_BUDGETS,
    build_request,
    gemini_schema,
    streams_json_array,
)
from streamfn.core.providers._base import FramedCall, HTTPRequest, sse_decoder
from streamfn.core.wire._decoder import Decoder
from streamfn.core.wire._json_array import JSONArrayDecoder
from streamfn.core.wire._sse import ServerSentEvent, SSEComment

__all__ = [
    "DUMMY_THOUGHT_SIGNATURE",
    "THINKING_BUDGETS",
    "GeminiCall",
    "GeminiJSONArrayCall",
    "GeminiStream",
    "JSONArraySplitter",
    "PartialArgsWriter",
    "build_request",
    "convert_usage",
    "gemini_schema",
    "open_call",
]

log = logging.getLogger("streamfn")

_JSON: Final = msgspec.json.Encoder()
_decode_any: Final = msgspec.json.Decoder().decode

#: the JSON-array decoder's old name (it lived here before `streamfn.core.wire._json_array`)
JSONArraySplitter = JSONArrayDecoder

FrameT = TypeVar("FrameT")

# Response: wire structs (only the fields we read; everything else is skipped)
# ---------------------------------------------------------------------------

_NO_RAW: Final = msgspec.Raw()


class _PartialArg(msgspec.Struct, gc=False):
    jsonPath: str
    stringValue: str | None = None
    numberValue: msgspec.Raw = _NO_RAW  # verbatim: 3 stays 3, not 3.0
    boolValue: bool | None = None
    nullValue: str | None = None
    willContinue: bool = False


class _FunctionCall(msgspec.Struct, gc=False):
    name: str | None = None
    id: str | None = None
    args: msgspec.Raw = _NO_RAW
    partialArgs: list[_PartialArg] | None = None
    willContinue: bool = False


class _Part(msgspec.Struct, gc=False):
    text: str | None = None
    thought: bool = False
    thoughtSignature: str | None = None
    functionCall: _FunctionCall | None = None
    executableCode: msgspec.Raw = _NO_RAW
    codeExecutionResult: msgspec.Raw = _NO_RAW
    inlineData: msgspec.Raw = _NO_RAW


class _Content(msgspec.Struct, gc=False):
    parts: list[_Part] | None = None


class _Candidate(msgspec.Struct, gc=False):
    content: _Content | None = None
    finishReason: str | None = None
    finishMessage: str | None = None
    index: int = 0
    groundingMetadata: Any = None


class _UsageMetadata(msgspec.Struct, gc=False):
    promptTokenCount: int = 0
    candidatesTokenCount: int = 0
    cachedContentTokenCount: int = 0
    thoughtsTokenCount: int = 0
    toolUsePromptTokenCount: int = 0


class _PromptFeedback(msgspec.Struct, gc=False):
    blockReason: str | None = None
    blockReasonMessage: str | None = None


class _ErrorBody(msgspec.Struct, gc=False):
    code: int | None = None
    message: str = ""
    status: str | None = None


class _Chunk(msgspec.Struct, gc=False):
    candidates: list[_Candidate] | None = None
    usageMetadata: _UsageMetadata | None = None
    promptFeedback: _PromptFeedback | None = None
    responseId: str | None = None
    modelVersion: str | None = None
    error: _ErrorBody | None = None


_decode_chunk: Final = msgspec.json.Decoder(_Chunk).decode

_FILTERED: Final = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
_BAD_CALL: Final = frozenset(
    {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"}
)

_RETRY_DELAY: Final = re.compile(rb'"retryDelay"\s*:\s*"(\d{1,6}(?:\.\d{1,9})?)s"')

_NONE: Final = 0
_TEXT: Final = 1
_THINKING: Final = 2
#: the emitter key of the open text or thinking block: one key suffices, as a
#: block closed under it is never continued (the next one gets a new index)
_SEGMENT: Final = "segment"


def convert_usage(wire: _UsageMetadata) -> Usage:
    """Gemini's usageMetadata into our convention (see the module docstring)."""
    cached = wire.cachedContentTokenCount
    prompt = wire.promptTokenCount + wire.toolUsePromptTokenCount
    thoughts = wire.thoughtsTokenCount
    return Usage(
        input=max(prompt - cached, 0),
        cache_read=cached,
        output=wire.candidatesTokenCount + thoughts,
        reasoning=thoughts,
    )


class GeminiStream(FramedCall[FrameT]):
    """The response state machine of ``streamGenerateContent``, whatever the framing.

    Each chunk (`_chunk`) drives the emitter; the two subclasses only say how
    chunks are framed: `GeminiCall` (SSE, the default) and `GeminiJSONArrayCall`.
    """

    api = "gemini"

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self._mode = _NONE  # which of text / thinking is open now (under _SEGMENT)
        self._signature: str | None = None  # of the open text/thinking block
        self._calls = 0
        self._streaming: tuple[str, PartialArgsWriter, str | None] | None = None
        self._finish_reason: str | None = None
        self._finish_message: str | None = None
        self._warned_candidates = False

    # -- chunks -------------------------------------------------------------------
    def _chunk(self, chunk: _Chunk) -> None:
        if chunk.responseId and self.response_id is None:
            self.response_id = chunk.responseId
        if chunk.modelVersion and self.response_model is None:
            self.response_model = chunk.modelVersion
        if chunk.usageMetadata is not None:
            self.usage = convert_usage(chunk.usageMetadata)
        if chunk.error is not None:
            self._stream_error(chunk.error)
            return
        feedback = chunk.promptFeedback
        if feedback is not None and feedback.blockReason:
            detail = feedback.blockReasonMessage or feedback.blockReason
            self.fail(
                Error.content_filter(f"{self.model.provider}: the prompt was blocked: {detail}")
            )
            return
        for candidate in chunk.candidates or ():
            if candidate.index != 0:
                if not self._warned_candidates:
                    self._warned_candidates = True
                    log.warning("gemini: several candidates streamed; only candidate 0 is kept")
                continue
            content = candidate.content
            if content is not None and content.parts:
                for part in content.parts:
                    self._part(part)
            if candidate.groundingMetadata:  # cumulative: the whole list so far
                cited = gemini_citations(candidate.groundingMetadata)
                if cited:
                    self.emit.cite(_SEGMENT, cited, replace=True)
            if candidate.finishReason:
                self._finish_reason = candidate.finishReason
                self._finish_message = candidate.finishMessage

    def on_end(self) -> None:
        if self._finish_reason is not None:
            self._complete()

    # -- parts --------------------------------------------------------------------
    def _part(self, part: _Part) -> None:
        call = part.functionCall
        if call is not None:
            self._function_call(call, part.thoughtSignature)
            return
        text = part.text
        if self._streaming is not None:
            if text == "" and not part.thoughtSignature:
                return  # an empty part between the pieces says nothing
            raise ValueError("a part arrived inside a streamed function call")
        if text is not None:
            mode = _THINKING if part.thought else _TEXT
            signature = part.thoughtSignature
            if mode != self._mode or (signature and self._signature):
                if not text and not signature:
                    return  # an empty part (Gemini ends some answers with one)
                self._switch(mode)
            if signature:
                self._signature = signature
            if mode == _TEXT:
                self.emit.text(_SEGMENT, text)
            else:
                self.emit.thinking(_SEGMENT, text)
            return
        for block_type, raw in (
            ("executableCode", part.executableCode),
            ("codeExecutionResult", part.codeExecutionResult),
            ("inlineData", part.inlineData),
        ):
            if raw:
                self._close_segment()
                self.emit.opaque(self.model.provider, block_type, _part_json(block_type, raw, part))
                return
        log.debug("gemini: ignoring a part with no field streamfn reads")

    def _switch(self, mode: int) -> None:
        self._close_segment()
        self._mode = mode

    def _close_segment(self) -> None:
        if self._mode != _NONE:
            self.emit.end(_SEGMENT, signature=self._signature)
            self._signature = None
            self._mode = _NONE

    def _function_call(self, call: _FunctionCall, signature: str | None) -> None:
        streaming = self._streaming
        if streaming is not None and call.name is None:
            key, writer, first_signature = streaming
            for arg in call.partialArgs or ():
                self.emit.tool_delta(
                    key, writer.add(arg.jsonPath, _arg_value(arg), arg.willContinue)
                )
            if not call.willContinue:
                self.emit.tool_delta(key, writer.close())
                self.emit.end(key, signature=signature or first_signature)
                self._streaming = None
            return
        if streaming is not None:
            log.warning("gemini: a streamed function call was never closed")
            key, writer, first_signature = streaming
            self.emit.tool_delta(key, writer.close())
            self.emit.end(key, signature=first_signature)
            self._streaming = None
        if call.name is None:
            raise ValueError("functionCall without a name")
        self._close_segment()
        key = f"call{self._calls}"
        self.emit.tool_start(key, call.id or self._tool_id(), call.name)
        self._calls += 1
        if call.willContinue or call.partialArgs:
            writer = PartialArgsWriter()
            self._streaming = (key, writer, signature)
            self._function_call(msgspec.structs.replace(call, name=None), None)
            return
        args = bytes(call.args).strip()
        self.emit.tool_delta(key, "{}" if not args or args == b"null" else args.decode())
        self.emit.end(key, signature=signature)

    def _tool_id(self) -> str:
        if self.response_id:
            return f"call_{self.response_id}_{self._calls}"
        return f"call_{self._calls}"

    # -- ending -------------------------------------------------------------------
    def _complete(self) -> None:
        if self._streaming is not None:
            # Cut (MAX_TOKENS) inside a streamed call: close the block but not its JSON,
            # so the fold reports the arguments as unparsable rather than complete.
            log.warning("gemini: the answer ended inside a streamed function call")
            key, _, first_signature = self._streaming
            self.emit.end(key, signature=first_signature)
            self._streaming = None
        self._close_segment()
        reason = self._finish_reason
        detail = f" ({self._finish_message})" if self._finish_message else ""
        provider = self.model.provider
        if reason == "STOP":
            self.finish(StopReason.STOP)  # calls make it tool_use (`finish`)
        elif reason == "MAX_TOKENS":
            self.finish(StopReason.LENGTH)
        elif reason in _FILTERED:
            self.fail(Error.content_filter(f"{provider}: the answer was stopped: {reason}{detail}"))
        elif reason in _BAD_CALL:
            self.fail(
                Error.invalid_request(
                    f"{provider}: the model produced no valid function call: {reason}{detail}"
                )
            )
        else:
            log.warning("gemini: finishReason %r read as stop", reason)
            self.finish(StopReason.STOP)  # calls make it tool_use (`finish`)

    def _http_error(self) -> Error:
        # Gemini says how long to wait in the body (google.rpc.RetryInfo), not a header.
        error = super()._http_error()
        if error.retry_after is None and error.retryable:
            match = _RETRY_DELAY.search(bytes(self._error_body))
            if match is not None:
                error = msgspec.structs.replace(error, retry_after=float(match.group(1)))
        return error

    def _stream_error(self, error: _ErrorBody) -> None:
        message = f"{self.model.provider}: {error.message or error.status or 'unknown error'}"
        self.fail(classify_stream_error(message, status_hint=error.code, code=error.status))


def _arg_value(arg: _PartialArg) -> tuple[str, Any]:
    if arg.stringValue is not None:
        return ("string", arg.stringValue)
    if arg.numberValue:
        return ("json", bytes(arg.numberValue).decode())
    if arg.boolValue is not None:
        return ("json", "true" if arg.boolValue else "false")
    if arg.nullValue is not None:
        return ("json", "null")
    # A continuation piece with no value (Gemini sends {"jsonPath", "stringValue": ""}
    # to end a string; an empty piece means the same).
    return ("string", "")


def _part_json(block_type: str, raw: msgspec.Raw, part: _Part) -> str:
    obj: dict[str, Any] = {block_type: _decode_any(raw)}
    if part.thoughtSignature:
        obj["thoughtSignature"] = part.thoughtSignature
    return _JSON.encode(obj).decode()


class GeminiCall(GeminiStream[ServerSentEvent | SSEComment]):
    """``streamGenerateContent?alt=sse``: one chunk per SSE event."""

    content_types = ("text/event-stream",)
    lenient_last_frame = True  # a body cut inside the last event: FramedCall._eof

    def make_decoder(self, options: Options) -> Decoder[ServerSentEvent | SSEComment]:
        return sse_decoder(options)

    def on_frame(self, frame: ServerSentEvent | SSEComment) -> None:
        if type(frame) is ServerSentEvent:
            data = frame.data
            if data and not data.isspace():
                self._chunk(_decode_chunk(data))


class GeminiJSONArrayCall(GeminiStream[bytes]):
    """``streamGenerateContent`` without ``alt=sse``: the same chunks, as one streamed JSON array.

    Chosen with ``Model.extra["stream_format"] = "json"``; everything but the
    framing is `GeminiStream`. A body that ends before the closing ``]`` and
    before any finish reason is "stream ended early", as with SSE.
    """

    content_types = ("application/json",)

    def make_decoder(self, options: Options) -> Decoder[bytes]:
        return JSONArrayDecoder(max_element_bytes=options.max_event_bytes)

    def on_frame(self, frame: bytes) -> None:
        self._chunk(_decode_chunk(frame))


def open_call(model: Model, context: Context, options: Options) -> GeminiStream[Any]:
    """Build the request and the call that decodes its streamed response."""
    request = build_request(model, context, options)
    if streams_json_array(model):
        return GeminiJSONArrayCall(model, context, options, request)
    return GeminiCall(model, context, options, request)
