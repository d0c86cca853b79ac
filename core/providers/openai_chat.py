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
from typing import Any, Final

import msgspec

from ..cache_points import prompt_cache_key
from ..capabilities import capabilities_for, effort_for_off, fit_effort, fit_sampling
from ..classify import classify_message, classify_stream_error
from ..events import Error, StopReason, Usage
from ..messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from ..models import Model
from ..options import Options, ThinkingLevel
from ..structured import openai_response_format, structured_request
from ..wire.sse import ServerSentEvent, decode_data
from ._base import HTTPRequest, SSECall, api_root, bearer, json_request, request_headers
from .convert import data_url, joined_text, prepare_messages, tool_arguments

__all__ = ["OpenAIChatCall", "Quirks", "build_request", "open_call", "quirks_for"]

log = logging.getLogger("streamfn")


# ---------------------------------------------------------------------------
# Provider quirks
# ---------------------------------------------------------------------------


class Quirks(msgspec.Struct, frozen=True, kw_only=True):
    """How one OpenAI-compatible server departs from OpenAI's own API.

    ``reasoning`` names the request knob for ``Options.thinking``: ``effort``
    (``reasoning_effort``, with the values the model's capabilities allow),
    ``openrouter`` (``reasoning: {...}``), ``zai`` (``thinking: {type}``) or
    ``none``. ``replay_thinking`` is the assistant-message field that carries
    our own earlier reasoning back, where the server accepts one.
    ``seed_field`` is where ``Options.seed`` goes (Mistral: ``random_seed``).
    """

    auth_header: str = "authorization"
    max_tokens_field: str = "max_tokens"
    stream_options: bool = True
    reasoning: str = "effort"
    developer_role: bool = False
    replay_thinking: str | None = None
    tool_result_name: bool = False
    azure_deployments: bool = False
    seed_field: str = "seed"
    prompt_cache_key: bool = False


_DEFAULT_QUIRKS: Final = Quirks()

_QUIRKS: Final[dict[str, Quirks]] = {
    # max_tokens is deprecated by OpenAI and rejected by its reasoning models.
    "openai": Quirks(
        max_tokens_field="max_completion_tokens", developer_role=True, prompt_cache_key=True
    ),
    "azure": Quirks(
        auth_header="api-key",
        max_tokens_field="max_completion_tokens",
        developer_role=True,
        azure_deployments=True,
    ),
    # Mistral rejects unknown fields (422), stream_options included; usage comes anyway.
    # https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post
    "mistral": Quirks(
        stream_options=False, reasoning="none", tool_result_name=True, seed_field="random_seed"
    ),
    "xai": Quirks(),
    "groq": Quirks(),
    "deepseek": Quirks(reasoning="none", replay_thinking="reasoning_content"),
    "openrouter": Quirks(reasoning="openrouter", replay_thinking="reasoning"),
    "zai": Quirks(reasoning="zai", replay_thinking="reasoning_content"),
}


def quirks_for(provider: str) -> Quirks:
    """The quirks of ``provider``; unknown servers get plain OpenAI behaviour."""
    return _QUIRKS.get(provider, _DEFAULT_QUIRKS)


# ---------------------------------------------------------------------------
# Request
# ---------------------------------------------------------------------------

_DEFAULT_AZURE_API_VERSION: Final = "2024-10-21"


def _url(model: Model, options: Options) -> str:
    quirks = quirks_for(model.provider)
    base = (options.base_url or model.base_url).rstrip("/")
    if quirks.azure_deployments and not base.endswith("/openai/v1"):
        extra = model.extra or {}
        deployment = extra.get("deployment", model.id)
        version = extra.get("api_version", _DEFAULT_AZURE_API_VERSION)
        return f"{base}/openai/deployments/{deployment}/chat/completions?api-version={version}"
    return f"{api_root(base, '/v1', only_bare=True)}/chat/completions"


def openai_headers(model: Model, options: Options, quirks: Quirks) -> list[tuple[str, str]]:
    """Shared with the Responses API, whose servers take the same credential header."""
    if quirks.auth_header == "authorization":
        auth = bearer(options.api_key)
    else:
        auth = (quirks.auth_header, options.api_key) if options.api_key else None
    return request_headers(model, options, accept="text/event-stream", auth=auth)


def _data_url(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(image)}}


def _user_content(content: str | list[UserContent]) -> str | list[dict[str, Any]]:
    """A plain string unless images are present: several compatible servers
    (DeepSeek among them) accept only string content."""
    if isinstance(content, str):
        return content
    if not any(isinstance(part, ImageContent) for part in content):
        return joined_text(content)
    return [
        {"type": "text", "text": p.text} if isinstance(p, TextContent) else _data_url(p)
        for p in content
    ]


def _assistant(
    message: AssistantMessage, quirks: Quirks, reasoning_field: bool
) -> dict[str, Any] | None:
    """One assistant message. ``reasoning_field``: the model demands the reasoning
    field on replayed tool-call turns (DeepSeek thinking mode), so a turn that has
    none (begun elsewhere) gets an empty one, as DeepSeek's docs allow."""
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if quirks.replay_thinking:
        thinking = "".join(
            b.thinking for b in message.content if isinstance(b, ThinkingContent) and not b.redacted
        )
        if thinking or (reasoning_field and calls):
            out[quirks.replay_thinking] = thinking
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": tool_arguments(c)},
            }
            for c in calls
        ]
    if out["content"] is None and not calls and len(out) == 2:
        return None
    return out


def _tool_result(message: ToolResultMessage, quirks: Quirks) -> dict[str, Any]:
    result: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": message.tool_call_id,
        "content": joined_text(message.content),
    }
    if quirks.tool_result_name:
        result["name"] = message.tool_name
    return result


def _tool_images(message: ToolResultMessage) -> list[dict[str, Any]]:
    images = [p for p in message.content if isinstance(p, ImageContent)]
    if not images:
        return []
    return [{"type": "text", "text": f"Images returned by {message.tool_name}:"}] + [
        _data_url(i) for i in images
    ]


def _messages(
    messages: list[Message], context: Context, model: Model, quirks: Quirks
) -> list[dict[str, Any]]:
    """Tool messages take text only, and must directly follow the assistant turn that
    called them: images a tool returned go in one user message after the whole run
    of tool messages, so they are not lost and parallel results stay together."""
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if quirks.developer_role and model.reasoning else "system"
        out.append({"role": role, "content": context.system_prompt})
    reasoning_field = capabilities_for(model).replay_tool_calls == "reasoning_field"
    images: list[dict[str, Any]] = []  # images of the current run of tool results
    for message in messages:
        if isinstance(message, ToolResultMessage):
            out.append(_tool_result(message, quirks))
            images.extend(_tool_images(message))
            continue
        if images:
            out.append({"role": "user", "content": images})
            images = []
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message.content)})
        else:
            converted = _assistant(message, quirks, reasoning_field)
            if converted is not None:
                out.append(converted)
    if images:
        out.append({"role": "user", "content": images})
    return out


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _reasoning(model: Model, options: Options, quirks: Quirks) -> dict[str, Any]:
    level = options.thinking
    if level is None and options.thinking_budget is None:
        return {}
    style = quirks.reasoning
    if style == "openrouter":
        if options.thinking_budget is not None:
            return {"reasoning": {"max_tokens": options.thinking_budget}}
        if level == ThinkingLevel.OFF:
            return {"reasoning": {"enabled": False}}
        assert level is not None
        return {"reasoning": {"effort": "low" if level == ThinkingLevel.MINIMAL else str(level)}}
    if style == "zai":
        return {"thinking": {"type": "disabled" if level == ThinkingLevel.OFF else "enabled"}}
    if level is None or style == "none" or not model.reasoning:
        if level is not None:
            log.debug("%s: thinking=%s not sent (no knob for this model)", model.key, level)
        return {}
    # a level is named as the effort it asks for
    off = level == ThinkingLevel.OFF
    effort = effort_for_off(model) if off else fit_effort(model, str(level))
    return {"reasoning_effort": effort} if effort is not None else {}


def thinking_on(model: Model, options: Options) -> bool:
    """Whether the request leaves a reasoning model thinking (its sampling rules apply)."""
    return model.reasoning and options.thinking != ThinkingLevel.OFF


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed chat completion; pure."""
    quirks = quirks_for(model.provider)
    url = _url(model, options)
    plan = structured_request(model, context, options)
    context, options = plan.context, plan.options
    body: dict[str, Any] = {}
    if "/openai/deployments/" not in url:  # an Azure deployment URL already names the model
        body["model"] = model.id
    body["messages"] = _messages(prepare_messages(context, model), context, model, quirks)
    body["stream"] = True
    if quirks.stream_options:
        body["stream_options"] = {"include_usage": True}
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                }
                if t.description
                else {"name": t.name, "parameters": t.parameters},
            }
            for t in context.tools
        ]
        if options.tool_choice:
            body["tool_choice"] = _tool_choice(options.tool_choice)
    wire = ("temperature", "top_p", "stop", "seed")
    fitted = fit_sampling(model, options, thinking=thinking_on(model, options), wire=wire)
    for name, value in fitted.items():
        field = quirks.seed_field if name == "seed" else name
        body[field] = list(value) if name == "stop" else value
    if options.max_tokens is not None:
        body[quirks.max_tokens_field] = options.max_tokens
    if options.n is not None:
        body["n"] = options.n
    body.update(_reasoning(model, options, quirks))
    if plan.native is not None:
        body["response_format"] = openai_response_format(plan.native)
    if quirks.prompt_cache_key and (key := prompt_cache_key(context, options)):
        body["prompt_cache_key"] = key
    return json_request(url, openai_headers(model, options, quirks), body, options)


# ---------------------------------------------------------------------------
# Response: wire structs (only the fields we read; everything else is skipped)
# ---------------------------------------------------------------------------


class _Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(msgspec.Struct, gc=False):
    index: int | None = None
    id: str | None = None
    function: _Function | None = None


class _Part(msgspec.Struct, gc=False):
    """Mistral's typed content chunk: ``text``, or ``thinking`` holding text chunks."""

    type: str = ""
    text: str | None = None
    thinking: list[_Part] | str | None = None


class _ReasoningDetail(msgspec.Struct, gc=False):
    signature: str | None = None


class _Delta(msgspec.Struct, gc=False):
    content: str | list[_Part] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None
    reasoning_details: list[_ReasoningDetail] | None = None


class _Choice(msgspec.Struct, gc=False):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct, gc=False):
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


class _CompletionDetails(msgspec.Struct, gc=False):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    total_tokens: int | None = 0
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    prompt_cache_hit_tokens: int | None = None


class _XGroq(msgspec.Struct, gc=False):
    usage: _Usage | None = None


class _ErrorBody(msgspec.Struct, gc=False):
    message: str | None = None
    code: str | int | None = None
    type: str | None = None
    status_code: int | None = None


class _Chunk(msgspec.Struct, gc=False):
    id: str | None = None
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    x_groq: _XGroq | None = None
    error: _ErrorBody | str | None = None


class _ErrorEnvelope(msgspec.Struct, gc=False):
    error: _ErrorBody | str | None = None


_decode_chunk: Final = msgspec.json.Decoder(_Chunk).decode
_decode_error: Final = msgspec.json.Decoder(_ErrorEnvelope).decode


def convert_usage(wire: _Usage) -> Usage:
    """OpenAI-style usage into our convention (see the module docstring)."""
    prompt = wire.prompt_tokens or 0
    completion = wire.completion_tokens or 0
    total = wire.total_tokens or 0
    pd, cd = wire.prompt_tokens_details, wire.completion_tokens_details
    cached = (pd.cached_tokens if pd else None) or wire.prompt_cache_hit_tokens or 0
    written = (pd.cache_write_tokens if pd else None) or 0
    reasoning = (cd.reasoning_tokens if cd else None) or 0
    output = completion
    if reasoning and total == prompt + completion + reasoning:
        output = completion + reasoning  # reasoning counted outside completion_tokens (xAI)
    return Usage(
        input=max(prompt - cached - written, 0),
        cache_read=cached,
        cache_write=written,
        output=output,
        reasoning=min(reasoning, output),  # a subset of output, even when a server over-reports
    )


_STOP_REASONS: Final = {
    "stop": StopReason.STOP,
    "end_turn": StopReason.STOP,
    "eos": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "length": StopReason.LENGTH,
    "max_tokens": StopReason.LENGTH,
    "model_length": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "tool_use": StopReason.TOOL_USE,
}

_NONE: Final = 0
_TEXT: Final = 1
_THINKING: Final = 2
#: the emitter key of the open text or thinking block: one key suffices, as a
#: block closed under it is never continued (the next one gets a new index)
_SEGMENT: Final = "segment"


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
        self._mode = _NONE  # which of text / thinking is open now (under _SEGMENT)
        self._signature: str | None = None  # reasoning signature (OpenRouter/Anthropic)
        self._tools: list[_ToolSlot] = []
        self._tool_by_index: dict[int, _ToolSlot] = {}
        self._tool_by_id: dict[str, _ToolSlot] = {}
        self._warned_choices = False

    # -- SSE events -----------------------------------------------------------
    raw_data = True

    def on_data(self, data: bytes, event_type: bytes) -> bool:
        # The fast path (SSEDecoder.feed_to); on_event comes here too.
        if event_type and event_type != b"message":
            if event_type == b"error":
                self._stream_error(data.decode("utf-8", "replace"))
            else:
                log.debug("openai-chat: ignoring SSE event type %r", event_type.decode("utf-8", "replace"))
            return self.emit.finished
        if not data:
            return False
        if data == b"[DONE]":
            self._complete()
            return self.emit.finished
        try:
            chunk = _decode_chunk(data)
        except Exception:  # invalid UTF-8 decodes as the spec says, or fails the same
            chunk = decode_data(_decode_chunk, data)
        if self.response_id is None and chunk.id:
            self.response_id = chunk.id
        if (
            chunk.usage is not None or chunk.x_groq is not None or chunk.error is not None
        ) and self._chunk_extras(chunk):
            return True
        for choice in chunk.choices or ():
            if choice.index:
                self._other_choice()
                continue
            delta = choice.delta
            if delta is not None:
                # Hot path: one more text delta for the open text block, nothing else.
                content = delta.content
                if (
                    self._mode == _TEXT
                    and type(content) is str
                    and delta.tool_calls is None
                    and delta.reasoning_content is None
                    and delta.reasoning is None
                    and delta.refusal is None
                    and not delta.reasoning_details
                ):
                    self.emit.text(_SEGMENT, content)
                else:
                    self._on_delta(delta)
            if choice.finish_reason is not None:
                self._finish_reason = choice.finish_reason
        return self.emit.finished

    def on_event(self, event: ServerSentEvent) -> None:
        # a body cut inside this event: see SSECall._eof
        kind = event.event
        self.on_data(event.data.encode(), b"" if kind == "message" else kind.encode())

    def _chunk_extras(self, chunk: _Chunk) -> bool:
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
    def _on_delta(self, delta: _Delta) -> None:
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning:
            self._thinking(reasoning)
        if delta.reasoning_details:
            for detail in delta.reasoning_details:
                if detail.signature:
                    self._signature = detail.signature
        content = delta.content
        if content:
            if isinstance(content, str):
                if self._mode != _TEXT:
                    self._switch(_TEXT)
                self.emit.text(_SEGMENT, content)
            else:
                self._parts(content)
        if delta.refusal:
            if self._mode != _TEXT:
                self._switch(_TEXT)
            self.emit.text(_SEGMENT, delta.refusal)
        if delta.tool_calls:
            for fragment in delta.tool_calls:
                self._tool_fragment(fragment)

    def _parts(self, parts: list[_Part]) -> None:
        for part in parts:
            if part.type == "text":
                if part.text:
                    if self._mode != _TEXT:
                        self._switch(_TEXT)
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
        if self._mode != _THINKING:
            self._switch(_THINKING)
        self.emit.thinking(_SEGMENT, delta)

    def _switch(self, mode: int) -> None:
        """Close the open text/thinking block so alternation keeps its order."""
        self._close_segment()
        self._mode = mode

    def _close_segment(self) -> None:
        if self._mode == _THINKING:
            self.emit.end(_SEGMENT, signature=self._signature)
            self._signature = None
        elif self._mode == _TEXT:
            self.emit.end(_SEGMENT)
        self._mode = _NONE

    # -- tool calls -----------------------------------------------------------
    def _slot(self, fragment: _ToolCallDelta) -> _ToolSlot:
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

    def _tool_fragment(self, fragment: _ToolCallDelta) -> None:
        slot = self._slot(fragment)
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
        if self._mode != _NONE:
            self._close_segment()
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
        self._close_segment()
        reason = self._finish_reason
        if reason is None:
            log.warning("openai-chat: %s ended without a finish_reason", self.model.provider)
            self.finish(StopReason.STOP)
            return
        stop = _STOP_REASONS.get(reason)
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

    def _fail_with(self, error: _ErrorBody | str) -> None:
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


def error_text(
    message: str | None, code: str | int | None, type: str | None, *, fallback: str
) -> tuple[str | None, str]:
    """The label and message of an OpenAI-style error object.

    A string ``code`` names the error better than ``type``; a number is a
    status, not a name. A missing message falls back to the label.
    """
    label = code if isinstance(code, str) else type
    return label, message or label or fallback


def open_call(model: Model, context: Context, options: Options) -> OpenAIChatCall:
    """Build the request and the call that decodes its streamed response."""
    return OpenAIChatCall(model, context, options, build_request(model, context, options))
