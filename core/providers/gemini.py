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
from typing import Any, Final

import msgspec

from ..capabilities import capabilities_for, fit_budget, fit_effort, fit_sampling, unsupported
from ..classify import classify_stream_error
from ..events import Error, StopReason, Usage
from ..messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from ..models import Model
from ..options import Options, ThinkingLevel
from ..structured import structured_request, without_refs
from ..wire.ndjson import NDJSONError
from ..wire.sse import ServerSentEvent
from ._base import HTTPRequest, SSECall, bearer, json_request, request_headers
from .convert import joined_text, opaque_object, prepare_messages

__all__ = [
    "GeminiCall",
    "GeminiJSONArrayCall",
    "JSONArraySplitter",
    "PartialArgsWriter",
    "build_request",
    "gemini_schema",
    "open_call",
]

log = logging.getLogger("streamfn")

_BASE_URL: Final = "https://generativelanguage.googleapis.com"


# ---------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------

_JSON: Final = msgspec.json.Encoder()
_decode_any: Final = msgspec.json.Decoder().decode

#: thinkingBudget per level for Gemini 2.5 (Gemini 3 takes ``thinkingLevel``).
THINKING_BUDGETS: Final = {
    ThinkingLevel.MINIMAL: 512,
    ThinkingLevel.LOW: 2048,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 24_576,
}


def _json_array(model: Model) -> bool:
    return (model.extra or {}).get("stream_format") == "json"


def _url(model: Model, options: Options) -> str:
    query = "" if _json_array(model) else "?alt=sse"
    path = f"models/{model.id}:streamGenerateContent{query}"
    base = (options.base_url or model.base_url).rstrip("/")
    if model.provider == "vertex":
        extra = model.extra or {}
        project = extra.get("project")
        if not project:
            raise ValueError(
                f"vertex model {model.id!r} needs Model.extra['project'] (and 'location')"
            )
        location = extra.get("location", "us-central1")
        if not base or "aiplatform.googleapis.com" in base:
            host = "aiplatform.googleapis.com"
            base = f"https://{host if location == 'global' else f'{location}-{host}'}"
        version = "" if re.search(r"/v1(beta1)?$", base) else "/v1"
        return f"{base}{version}/projects/{project}/locations/{location}/publishers/google/{path}"
    version = "" if re.search(r"/v1(beta|alpha)?$", base) else "/v1beta"
    return f"{base}{version}/{path}"


def _headers(model: Model, options: Options) -> list[tuple[str, str]]:
    if model.provider == "vertex":
        auth = bearer(options.api_key)  # an OAuth access token
    else:
        auth = ("x-goog-api-key", options.api_key) if options.api_key else None
    return request_headers(model, options, accept="text/event-stream", auth=auth)


def _inline(image: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}


def _user_parts(content: str | list[UserContent]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextContent):
            if part.text:
                parts.append({"text": part.text})
        else:
            parts.append(_inline(part))
    return parts


def _signed(part: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if signature:
        part["thoughtSignature"] = signature
    return part


#: Google's documented stand-in for a function call whose signature is unknown (a turn
#: begun on another provider): https://ai.google.dev/gemini-api/docs/thought-signatures#faqs
DUMMY_THOUGHT_SIGNATURE: Final = "skip_thought_signature_validator"


def _model_parts(message: AssistantMessage, sign_calls: bool) -> list[Any]:
    """One model turn. ``sign_calls``: the model validates the signature of a
    turn's first function call (Gemini 3), so a turn whose calls carry none gets
    the documented dummy on its first call."""
    if sign_calls and not any(isinstance(b, ToolCall) and b.signature for b in message.content):
        first = next((b for b in message.content if isinstance(b, ToolCall)), None)
        if first is not None:
            log.debug("gemini: replayed function call %s signed with the dummy", first.name)
            signed = msgspec.structs.replace(first, signature=DUMMY_THOUGHT_SIGNATURE)
            message = msgspec.structs.replace(
                message, content=[signed if b is first else b for b in message.content]
            )
    parts: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text or block.signature:
                parts.append(_signed({"text": block.text}, block.signature))
        elif isinstance(block, ThinkingContent):
            # Kept by prepare_messages only for the model that produced it.
            if not block.redacted:
                parts.append(_signed({"thought": True, "text": block.thinking}, block.signature))
        elif isinstance(block, ToolCall):
            call = {"functionCall": {"name": block.name, "args": block.arguments}}
            parts.append(_signed(call, block.signature))
        elif isinstance(block, OpaqueContent) and (raw := opaque_object(block)) is not None:
            parts.append(raw)  # re-encoded from the parsed object, never pasted as text
    return parts


def _function_response(message: ToolResultMessage) -> dict[str, Any]:
    text = joined_text(message.content)
    response = {"error": text} if message.is_error else {"output": text}
    return {"functionResponse": {"name": message.tool_name, "response": response}}


def _contents(messages: list[Message], sign_calls: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results: list[Any] | None = None  # the user turn collecting function responses
    for message in messages:
        if isinstance(message, ToolResultMessage):
            if results is None:
                results = []
                out.append({"role": "user", "parts": results})
            # Responses first, images after them, all in the one user turn.
            images = [p for p in message.content if isinstance(p, ImageContent)]
            results.insert(
                sum(1 for p in results if "functionResponse" in p), _function_response(message)
            )
            results.extend(_inline(i) for i in images)
            continue
        results = None
        if isinstance(message, UserMessage):
            parts = _user_parts(message.content)
            if parts:
                out.append({"role": "user", "parts": parts})
        else:
            parts = _model_parts(message, sign_calls)
            if parts:
                out.append({"role": "model", "parts": parts})
    return out


# JSON Schema keywords Gemini's OpenAPI-subset `Schema` accepts.
_SCHEMA_KEYS: Final = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "propertyOrdering",
        "default",
        "example",
    }
)


def gemini_schema(schema: Any) -> Any:
    """A JSON Schema rewritten into the subset Gemini's ``parameters`` accept.

    Unsupported keywords (``$schema``, ``additionalProperties``, ``$ref`` ...)
    are dropped, ``const`` becomes a one-value ``enum``, and a type list with
    ``"null"`` becomes ``nullable``, as does a ``null`` enum member (Gemini's
    enums are strings only). Property names are kept whatever they are.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: gemini_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = gemini_schema(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [gemini_schema(sub) for sub in value]
        elif key == "const":
            out["enum"] = [value]
        elif key == "enum" and isinstance(value, list):
            # Gemini takes string enums only: null becomes ``nullable``; an enum
            # of other values cannot be said, so it is left out.
            if None in value:
                out["nullable"] = True
            members = [v for v in value if v is not None]
            if members and all(isinstance(v, str) for v in members):
                out["enum"] = members
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) < len(value):
                out["nullable"] = True
            if len(types) == 1:
                out["type"] = types[0]
            elif types:
                out["anyOf"] = [{"type": t} for t in types]
        elif key in _SCHEMA_KEYS:
            out[key] = value
    return out


def _tool_config(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"functionCallingConfig": {"mode": choice.upper()}}
    if choice == "required":
        return {"functionCallingConfig": {"mode": "ANY"}}
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice]}}


def _thinking_config(model: Model, options: Options) -> dict[str, Any] | None:
    """``thinkingConfig`` within the model's capabilities: a level on models with
    ``thinkingLevel`` (Gemini 3), a budget in the model's range otherwise; off only
    where the model can switch thinking off."""
    caps = capabilities_for(model)
    level = options.thinking
    if level is None and options.thinking_budget is None:
        return None
    off = level == ThinkingLevel.OFF or options.thinking_budget == 0
    if not caps.thinking:
        if not off:
            unsupported(model, "thinking", "is not supported by this model; not sent")
        return None
    if off:
        if not caps.thinking_off:
            unsupported(model, "thinking", "cannot be switched off on this model; left on")
            return None
        return {"thinkingBudget": 0}
    if options.thinking_budget is not None:
        budget = options.thinking_budget
        if budget > 0:
            budget = fit_budget(model, budget)
        return {"thinkingBudget": budget, "includeThoughts": True}
    assert level is not None
    if caps.efforts is not None:
        effort = fit_effort(model, str(level))
        return {"thinkingLevel": effort, "includeThoughts": True} if effort else None
    return {"thinkingBudget": fit_budget(model, THINKING_BUDGETS[level]), "includeThoughts": True}


_CONFIG_FIELDS: Final = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "stop": "stopSequences",
    "seed": "seed",
}


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed generation; pure.

    Thinking: an explicit ``thinking_budget`` is sent as ``thinkingBudget``;
    a level becomes ``thinkingLevel`` on Gemini 3 and a budget on 2.5 (see
    `THINKING_BUDGETS`); thought summaries are always asked for with it.
    """
    plan = structured_request(model, context, options)
    sign_calls = capabilities_for(model).replay_tool_calls == "thought_signature"
    body: dict[str, Any] = {"contents": _contents(prepare_messages(context, model), sign_calls)}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        declarations = []
        for tool in context.tools:
            declaration: dict[str, Any] = {"name": tool.name}
            if tool.description:
                declaration["description"] = tool.description
            if tool.parameters.get("properties"):
                declaration["parameters"] = gemini_schema(tool.parameters)
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}]
        if options.tool_choice:
            body["toolConfig"] = _tool_config(options.tool_choice)
    config: dict[str, Any] = {}
    thinking = _thinking_config(model, options)
    thinks = thinking is not None and thinking.get("thinkingBudget") != 0
    for name, value in fit_sampling(model, options, thinking=thinks).items():
        config[_CONFIG_FIELDS[name]] = list(value) if name == "stop" else value
    if options.max_tokens is not None:
        config["maxOutputTokens"] = options.max_tokens
    if thinking is not None:
        config["thinkingConfig"] = thinking
    if plan.native is not None:
        # Gemini 2.5+ takes JSON Schema itself; older models the OpenAPI subset.
        # https://ai.google.dev/gemini-api/docs/structured-output
        config["responseMimeType"] = "application/json"
        if plan.mode == "openapi":
            config["responseSchema"] = gemini_schema(without_refs(plan.native.schema))
        else:
            config["responseJsonSchema"] = plan.native.schema
    if config:
        body["generationConfig"] = config
    return json_request(_url(model, options), _headers(model, options), body, options)


# ---------------------------------------------------------------------------
# Streamed function-call arguments
# ---------------------------------------------------------------------------

_PATH_STEP: Final = re.compile(
    r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)


def _parse_path(path: str) -> list[str | int]:
    """RFC 9535 normalized-path steps (``$.a.b[0]['c']``) as keys and indices."""
    if not path.startswith("$"):
        raise ValueError(f"partialArgs jsonPath {path!r} does not start with $")
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _PATH_STEP.match(path, pos)
        if match is None:
            raise ValueError(f"unsupported partialArgs jsonPath {path!r}")
        name, index, single, double = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(name if name is not None else (single if single is not None else double))
        pos = match.end()
    if not steps:
        raise ValueError("partialArgs jsonPath '$' names no argument")
    return steps


class _Container:
    __slots__ = ("count", "is_array", "keys", "step")

    def __init__(self, step: str | int | None, is_array: bool) -> None:
        self.step = step  # the key or index under which the parent holds it
        self.is_array = is_array
        self.count = 0
        self.keys: set[str] = set()


class PartialArgsWriter:
    """Turns Vertex ``partialArgs`` (JSON path + value pieces) into JSON text, piece by piece.

    Each `add` returns the text to append, so the argument deltas of a
    streamed call concatenate to the complete JSON object, and a partial JSON
    parser shows the arguments growing. Strings with ``willContinue`` stay
    open and later pieces for the same path append to them.
    """

    def __init__(self) -> None:
        self._stack: list[_Container] = []
        self._open_string: list[str | int] | None = None
        self._started = False
        # A long string arrives as many pieces under one path: parse it once.
        self._last_path: str | None = None
        self._last_steps: list[str | int] = []

    def add(self, path: str, value: tuple[str, Any], will_continue: bool) -> str:
        """``value`` is (``"string"``, text) or (``"json"``, raw JSON text of a scalar)."""
        if path == self._last_path:
            steps = self._last_steps
        else:
            steps = _parse_path(path)
            self._last_path, self._last_steps = path, steps
        out: list[str] = []
        kind, payload = value
        if self._open_string is not None:
            if steps == self._open_string and kind == "string":
                out.append(_escape(payload))
                if not will_continue:
                    out.append('"')
                    self._open_string = None
                return "".join(out)
            out.append('"')
            self._open_string = None
        if not self._started:
            self._started = True
            self._stack.append(_Container(None, False))
            out.append("{")
        # Close containers that are not ancestors of this path.
        parents = steps[:-1]
        common = 0
        while (
            common < len(parents)
            and common + 1 < len(self._stack)
            and self._stack[common + 1].step == parents[common]
        ):
            common += 1
        while len(self._stack) > common + 1:
            out.append("]" if self._stack.pop().is_array else "}")
        for depth in range(common, len(steps)):
            step = steps[depth]
            out.append(self._member(step))
            if depth < len(steps) - 1:
                is_array = isinstance(steps[depth + 1], int)
                self._stack.append(_Container(step, is_array))
                out.append("[" if is_array else "{")
        if kind == "string":
            out.append('"' + _escape(payload))
            if will_continue:
                self._open_string = steps
            else:
                out.append('"')
        else:
            out.append(payload)
        return "".join(out)

    def _member(self, step: str | int) -> str:
        container = self._stack[-1]
        if container.is_array:
            if step != container.count:
                raise ValueError(
                    f"partialArgs index {step} out of order (expected {container.count})"
                )
            prefix = "," if container.count else ""
        else:
            if not isinstance(step, str):
                raise ValueError(f"partialArgs index {step} inside an object")
            if step in container.keys:
                raise ValueError(f"partialArgs key {step!r} streamed again after it closed")
            prefix = "," if container.count else ""
            container.keys.add(step)
            prefix += _JSON.encode(step).decode() + ":"
        container.count += 1
        return prefix

    def close(self) -> str:
        """The text that completes the object (``{}`` when no argument came)."""
        if not self._started:
            return "{}"
        out = ['"'] if self._open_string is not None else []
        self._open_string = None
        while self._stack:
            out.append("]" if self._stack.pop().is_array else "}")
        return "".join(out)


def _escape(text: str) -> str:
    return _JSON.encode(text).decode()[1:-1]


# ---------------------------------------------------------------------------
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


class GeminiCall(SSECall):
    """The response state machine for one ``streamGenerateContent?alt=sse`` call."""

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

    # -- SSE events -------------------------------------------------------------
    def on_event(self, event: ServerSentEvent) -> None:
        data = event.data
        if not data or data.isspace():
            return
        self._chunk(_decode_chunk(data))  # a body cut inside this event: SSECall._eof

    def _chunk(self, chunk: _Chunk) -> None:
        if chunk.responseId and self.response_id is None:
            self.response_id = chunk.responseId
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
            self.finish(StopReason.TOOL_USE if self._calls else StopReason.STOP)
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
            self.finish(StopReason.TOOL_USE if self._calls else StopReason.STOP)

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


_STRUCTURAL: Final = re.compile(rb'["\\{}\[\]]')


class JSONArraySplitter:
    """Splits the body of ``streamGenerateContent`` without ``alt=sse`` into its elements.

    That body is one JSON array streamed element by element (``[{...}\n,\r\n{...}]``).
    Byte-fed like every streamfn decoder: `feed` returns the elements completed
    so far (bytes of one JSON object each), whatever the chunking; memory is
    one element, capped at ``max_element_bytes`` (past it: `NDJSONError`).
    Only the structure is scanned here; each element is then parsed strictly.
    """

    def __init__(self, *, max_element_bytes: int = 16 << 20) -> None:
        self._buf = bytearray()
        self._scan = 0
        self._depth = 0
        self._in_string = False
        self._escape = False  # the byte at _scan is escaped (a backslash ended a chunk)
        self._start = -1  # where the current element began in _buf
        self._closed = False
        self._max = max_element_bytes

    @property
    def complete(self) -> bool:
        """The closing ``]`` of the array has arrived."""
        return self._closed

    def feed(self, data: bytes) -> list[bytes]:
        if self._closed:
            if data.strip():
                raise NDJSONError("data after the end of the JSON array")
            return []
        buf = self._buf
        buf += data
        out: list[bytes] = []
        pos = self._scan
        if self._escape and pos < len(buf):
            pos += 1
            self._escape = False
        skip = -1
        for match in _STRUCTURAL.finditer(buf, pos):
            at = match.start()
            if at == skip:
                continue
            char = buf[at]
            if self._in_string:
                if char == 0x5C:  # backslash: the next byte is escaped
                    if at + 1 == len(buf):
                        self._escape = True
                    skip = at + 1
                elif char == 0x22:
                    self._in_string = False
            elif char == 0x22:
                self._in_string = True
            elif char in (0x7B, 0x5B):  # { [
                self._depth += 1
                if self._depth == 1 and char != 0x5B:
                    raise NDJSONError("the body is not a JSON array")
                if self._depth == 2:
                    self._start = at
            else:
                self._depth -= 1
                if self._depth == 1:
                    out.append(bytes(buf[self._start : at + 1]))
                    self._start = -1
                elif self._depth == 0:
                    self._closed = True
                    break
                elif self._depth < 0:
                    raise NDJSONError("unbalanced JSON array")
        # Keep only the unfinished element.
        keep = self._start if self._start >= 0 else len(buf)
        del buf[:keep]
        if self._start >= 0:
            self._start = 0
        self._scan = len(buf)
        if len(buf) > self._max:
            raise NDJSONError(f"JSON array element larger than {self._max} bytes", limit=True)
        return out


class GeminiJSONArrayCall(GeminiCall):
    """``streamGenerateContent`` without ``alt=sse``: the same chunks, as one streamed JSON array.

    Chosen with ``Model.extra["stream_format"] = "json"``; everything but the
    framing is `GeminiCall`. A body that ends before the closing ``]`` and
    before any finish reason is "stream ended early", as with SSE.
    """

    content_types = ("application/json",)

    def __init__(
        self, model: Model, context: Context, options: Options, request: HTTPRequest
    ) -> None:
        super().__init__(model, context, options, request)
        self.splitter = JSONArraySplitter(max_element_bytes=options.max_event_bytes)

    def _feed(self, data: bytes) -> None:
        for element in self.splitter.feed(data):
            self._chunk(_decode_chunk(element))
            if self.emit.finished:
                return

    def _eof(self) -> None:
        self.on_end()


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


def open_call(model: Model, context: Context, options: Options) -> GeminiCall:
    """Build the request and the call that decodes its streamed response."""
    request = build_request(model, context, options)
    if _json_array(model):
        return GeminiJSONArrayCall(model, context, options, request)
    return GeminiCall(model, context, options, request)
