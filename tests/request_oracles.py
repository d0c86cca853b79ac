"""Request oracles we did not write: the official SDKs' request types, botocore's
service model, and a table of the providers' published cross-field rules.

`violations(model, body)` returns every reason the provider would refuse a
request body: schema errors from the SDK type of its wire format (unknown
fields included) and every rule of `RULES` that applies to the model. A new
provider quirk is one row in `RULES` (and, for a new wire format, one entry
in `_SCHEMAS`).
"""

from __future__ import annotations

import collections.abc
import functools
import itertools
import json
import re
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import msgspec
from google.genai import types as genai
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from streamfn.core import Context, Model, Options
from streamfn.core.dialects import (
    anthropic,
    bedrock,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
)

Body = dict[str, Any]

BUILDERS: dict[str, Callable[[Model, Context, Options], Any]] = {
    "openai-chat": openai_chat.build_request,
    "openai-responses": openai_responses.build_request,
    "anthropic": anthropic.build_request,
    "gemini": gemini.build_request,
    "ollama": ollama.build_request,
    "bedrock": bedrock.build_request,
}

#: a 1x1 PNG, for images in user turns and tool results
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="


def build_body(model: Model, context: Context, options: Options | None = None) -> Body:
    """The JSON body streamfn sends ``model`` for ``context``."""
    body: Body = json.loads(BUILDERS[model.api](model, context, options or Options()).body)
    return body


# ---------------------------------------------------------------------------
# Schemas: one SDK type per wire format
# ---------------------------------------------------------------------------


def _consume(value: Any) -> None:
    """Validate what pydantic validates lazily: the SDKs type lists as ``Iterable``."""
    if isinstance(value, dict):
        for item in value.values():
            _consume(item)
    elif isinstance(value, list | tuple) or hasattr(value, "__next__"):
        for item in value:
            _consume(item)


def _forbidding(annotation: Any) -> type[BaseModel]:
    """A model whose one field has the SDK's type, refusing unknown keys at every
    depth (the wrapper's config reaches every nested TypedDict that has none)."""

    class Wrapper(BaseModel):
        model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
        value: annotation  # type: ignore[valid-type]

    return Wrapper


def _item_type(annotation: Any) -> Any:
    """``X`` of ``Iterable[X]`` (or of a union with one, such as ``str | list[X]``)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        lists = [a for a in args if typing.get_origin(a) in (list, collections.abc.Iterable)]
        return _item_type(lists[0])
    return args[0]


_ENCODER = msgspec.json.Encoder(order="sorted")


def _key(value: Any) -> bytes:
    return _ENCODER.encode(value)


def _split(
    whole: Callable[[Any], list[str]], items: dict[str, Callable[[Any], list[str]]]
) -> Callable[[Body], list[str]]:
    """A body checker that checks the long lists (``items``: field -> item checker) item
    by item and the rest of the body apart, each distinct piece once: the matrix
    repeats them thousands of times, and this keeps it at seconds."""

    @functools.cache
    def item(name: str, text: bytes) -> tuple[str, ...]:
        return tuple(f"{name}.{e}" for e in items[name](msgspec.json.decode(text)))

    @functools.cache
    def outline(text: bytes) -> tuple[str, ...]:
        return tuple(whole(msgspec.json.decode(text)))

    def check(body: Body) -> list[str]:
        rest = {k: ([] if k in items else v) for k, v in body.items()}
        errors = list(outline(_key(rest)))
        for name in items:
            for i, entry in enumerate(body.get(name) or []):
                errors += [f"{i}:{e}" for e in item(name, _key(entry))]
        return errors

    return check


def _typed_dict_checker(
    typed_dict: Any, lists: tuple[str, ...] = ("messages", "tools")
) -> Callable[[Body], list[str]]:
    """A TypedDict of an SDK as a checker; the ``lists`` are checked against the
    TypedDict's own item type."""
    hints = typing.get_type_hints(typed_dict)

    def validator(annotation: Any) -> Callable[[Any], list[str]]:
        wrapper = _forbidding(annotation)

        def validate(value: Any) -> list[str]:
            try:
                _consume(wrapper.model_validate({"value": value}).value)
            except ValidationError as exc:
                return [_brief(exc)]
            return []

        return validate

    return _split(
        validator(typed_dict), {name: validator(_item_type(hints[name])) for name in lists}
    )


def _brief(exc: ValidationError) -> str:
    """The deepest errors (a union reports one per member; the deepest went furthest)."""
    errors = sorted(exc.errors(), key=lambda e: -len(e["loc"]))
    return (
        "; ".join(f"{'.'.join(map(str, e['loc'][-4:]))}: {e['msg']}" for e in errors[:3])
        + f" ({len(errors)} errors)"
    )


def _unknown_keys(sent: Any, kept: Any, path: str = "") -> list[str]:
    """Keys of ``sent`` that a lenient pydantic model silently dropped (``kept`` is its
    dump by alias): servers with strict schemas (Mistral: 422) refuse them. A tool's
    ``parameters`` is the caller's JSON Schema, passed on as is."""
    if isinstance(sent, dict) and isinstance(kept, dict):
        out = []
        for key, value in sent.items():
            if key not in kept:
                out.append(f"{path}{key}: unknown field")
            elif key != "parameters":
                out.extend(_unknown_keys(value, kept[key], f"{path}{key}."))
        return out
    if isinstance(sent, list) and isinstance(kept, list) and len(sent) == len(kept):
        return [
            e
            for i, (s, k) in enumerate(zip(sent, kept, strict=True))
            for e in _unknown_keys(s, k, f"{path}{i}.")
        ]
    return []


def _pydantic_checker(model_cls: type[BaseModel]) -> Callable[[Body], list[str]]:
    def check(body: Body) -> list[str]:
        try:
            validated = model_cls.model_validate(body)
        except ValidationError as exc:
            return [_brief(exc)]
        dumped = validated.model_dump(by_alias=True, exclude_unset=True, mode="json")
        return _unknown_keys(body, dumped)

    return check


@functools.cache
def _openai_chat() -> Callable[[Body], list[str]]:
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    return _typed_dict_checker(CompletionCreateParamsStreaming)


@functools.cache
def _openai_responses() -> Callable[[Body], list[str]]:
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    return _typed_dict_checker(ResponseCreateParamsStreaming, ("input", "tools"))


#: Sampling fields of the Messages API that anthropic's SDK types dropped at 1.0 (0.x typed
#: them: temperature 0-1, top_p 0-1, top_k >= 0); the models in our catalogue document
#: them: https://docs.anthropic.com/en/api/messages . Checked here by those ranges.
_ANTHROPIC_SAMPLING: dict[str, tuple[type, float, float]] = {
    "temperature": (float, 0.0, 1.0),
    "top_p": (float, 0.0, 1.0),
    "top_k": (int, 0, float("inf")),
}


@functools.cache
def _anthropic() -> Callable[[Body], list[str]]:
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    hints = typing.get_type_hints(MessageCreateParamsStreaming)
    own = {name: rule for name, rule in _ANTHROPIC_SAMPLING.items() if name not in hints}
    sdk = _typed_dict_checker(MessageCreateParamsStreaming)

    def check(body: Body) -> list[str]:
        errors = sdk({k: v for k, v in body.items() if k not in own})
        for name, (kind, low, high) in own.items():
            value = body.get(name)
            if value is not None and not (isinstance(value, kind | int) and low <= value <= high):
                errors.append(f"{name}: {value!r} is not a {kind.__name__} in {low}-{high}")
        return errors

    return check


@functools.cache
def _mistral() -> Callable[[Body], list[str]]:
    try:
        from mistralai.client.models import ChatCompletionStreamRequest
    except ImportError:  # mistralai 1.x
        from mistralai.models import ChatCompletionStreamRequest  # type: ignore[no-redef]

    whole = _pydantic_checker(ChatCompletionStreamRequest)
    return _split(whole, {})


@functools.cache
def _ollama() -> Callable[[Body], list[str]]:
    from ollama._types import ChatRequest, Message, Options

    request, message, options = (_pydantic_checker(c) for c in (ChatRequest, Message, Options))

    def check(body: Body) -> list[str]:
        # ChatRequest types messages and options as Mapping | model: check the models.
        # The client serializes an `Image` model to its base64 string, which is what the
        # REST body carries: turn those strings back into the model to check them.
        errors = request(body)
        for i, entry in enumerate(body.get("messages", [])):
            if "images" in entry:
                entry = {**entry, "images": [{"value": image} for image in entry["images"]]}
            errors += [f"messages.{i}.{e}" for e in message(entry)]
        if "options" in body:
            errors += [f"options.{e}" for e in options(body["options"])]
        return errors

    return check


#: Keys whose values are the caller's own data (schemas, arguments), not the REST schema.
_FREE_FORM = frozenset(
    {"args", "response", "properties", "parameters", "parametersJsonSchema", "responseJsonSchema"}
)


def _snake_keys(value: Any, path: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if "_" in key:
                yield f"{path}{key}: not camelCase"
            if key not in _FREE_FORM:
                yield from _snake_keys(item, f"{path}{key}.")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _snake_keys(item, f"{path}{i}.")


@functools.cache
def _gemini() -> Callable[[Body], list[str]]:

    class GenerateContentBody(BaseModel):
        """The REST body of generateContent, from google-genai's own part types."""

        model_config = ConfigDict(alias_generator=to_camel, extra="forbid", val_json_bytes="base64")
        contents: list[genai.Content]
        system_instruction: genai.Content | None = None
        tools: list[genai.Tool] | None = None
        tool_config: genai.ToolConfig | None = None
        generation_config: genai.GenerationConfig | None = None

    def validator(model_cls: type[BaseModel]) -> Callable[[Any], list[str]]:
        def validate(value: Any) -> list[str]:
            # google-genai also accepts snake_case names; the REST API takes camelCase.
            errors = list(_snake_keys(value))
            try:
                model_cls.model_validate_json(json.dumps(value))
            except ValidationError as exc:
                errors.append(_brief(exc))
            return errors

        return validate

    class ContentBody(BaseModel):
        model_config = ConfigDict(alias_generator=to_camel, extra="forbid", val_json_bytes="base64")
        value: genai.Content

    def content(value: Any) -> list[str]:
        return validator(ContentBody)({"value": value})

    return _split(validator(GenerateContentBody), {"contents": content})


@functools.cache
def _bedrock() -> Callable[[Body], list[str]]:
    import botocore.session
    from botocore.validate import ParamValidator

    service = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = service.operation_model("ConverseStream").input_shape
    validator = ParamValidator()

    def against(target: Any) -> Callable[[Any], list[str]]:
        def check(value: Any) -> list[str]:
            report = validator.validate(value, target)
            return [report.generate_report()] if report.has_errors() else []

        return check

    return _split(against(shape), {"messages": against(shape.members["messages"].member)})


def _stand_in_ids(body: Body) -> Body:
    """The one field where we depart from the SDK type, on purpose: replayed output
    items (reasoning, assistant messages) go without their ``id``. With ``store: false`` an id makes the server look the
    item up and fail ("Item with id 'rs_...' not found. Items are not persisted when
    `store` is set to false"); the item travels whole in ``encrypted_content`` instead.
    https://platform.openai.com/docs/guides/reasoning#encrypted-reasoning-items
    https://github.com/maximhq/bifrost/issues/5410 (id + encrypted_content refused)
    The check puts a stand-in id back so everything else in the item is still checked."""
    if body.get("store") is not False:
        return body
    output_items = ("reasoning", "message")
    items = [
        {"id": "stand_in", **item}
        if item.get("type") in output_items and item.get("role", "assistant") == "assistant"
        else item
        for item in body["input"]
    ]
    return {**body, "input": items}


def schema_errors(model: Model, body: Body) -> list[str]:
    if model.api == "openai-chat":
        return (_mistral() if model.provider == "mistral" else _openai_chat())(
            _without_extensions(model, body)
        )
    if model.api == "bedrock":
        return _bedrock()({"modelId": model.id, **body})
    if model.api == "openai-responses":
        return _openai_responses()(_stand_in_ids(body))
    checker = {
        "anthropic": _anthropic,
        "gemini": _gemini,
        "ollama": _ollama,
    }[model.api]
    return checker()(body)


#: Fields a compatible server documents beyond OpenAI's request type, by provider:
#: (top-level fields, assistant-message fields).
#: DeepSeek: https://api-docs.deepseek.com/guides/thinking_mode
#: OpenRouter: https://openrouter.ai/docs/use-cases/reasoning-tokens
#: Z.ai: https://docs.z.ai/api-reference/llm/chat-completion
_EXTENSIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "deepseek": (frozenset(), frozenset({"reasoning_content"})),
    "openrouter": (frozenset({"reasoning"}), frozenset({"reasoning"})),
    "zai": (frozenset({"thinking"}), frozenset({"reasoning_content"})),
}


def _without_extensions(model: Model, body: Body) -> Body:
    if "model" not in body and model.provider == "azure":
        # an Azure deployment URL names the model; the body need not
        body = {"model": model.id, **body}
    top, assistant = _EXTENSIONS.get(model.provider, (frozenset(), frozenset()))
    if not top and not assistant:
        return body
    out = {k: v for k, v in body.items() if k not in top}
    out["messages"] = [
        {k: v for k, v in m.items() if not (m["role"] == "assistant" and k in assistant)}
        for m in body["messages"]
    ]
    return out


# ---------------------------------------------------------------------------
# Published cross-field rules: one row each, with its source
# ---------------------------------------------------------------------------


class Rule(NamedTuple):
    """A published rule: the source URL is in the comment above its row."""

    name: str
    applies: Callable[[Model], bool]
    check: Callable[[Model, Body], str | None]


def _is(api: str, *providers: str, family: str = "") -> Callable[[Model], bool]:
    pattern = re.compile(family)
    return lambda m: (
        m.api == api and (not providers or m.provider in providers) and bool(pattern.search(m.id))
    )


def _claude(family: str = "claude") -> Callable[[Model], bool]:
    pattern = re.compile(family)
    return lambda m: m.api in ("anthropic", "bedrock") and bool(pattern.search(m.id))


def _claude_thinking(body: Body) -> dict[str, Any] | None:
    thinking = body.get("thinking") or body.get("additionalModelRequestFields", {}).get("thinking")
    return thinking if thinking and thinking.get("type") in ("enabled", "adaptive") else None


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _kind(block: dict[str, Any]) -> str:
    """A block's type in either Anthropic's or Converse's spelling."""
    if "type" in block:
        return str(block["type"])
    key = next(iter(block))
    if key == "reasoningContent":
        return "thinking"
    return {"toolUse": "tool_use", "toolResult": "tool_result"}.get(key, key)


def _continued_tool_turn(body: Body) -> dict[str, Any] | None:
    """The last assistant message, if it used tools and only tool results follow it."""
    messages = body["messages"]
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message["role"] == "assistant":
            uses = any(_kind(b) == "tool_use" for b in _blocks(message))
            return message if uses else None
        if not all(_kind(b) == "tool_result" for b in _blocks(message)):
            return None
    return None


def final_assistant_starts_with_thinking(model: Model, body: Body) -> str | None:
    if not _claude_thinking(body):
        return None
    turn = _continued_tool_turn(body)
    if turn is not None and _kind(_blocks(turn)[0]) not in ("thinking", "redacted_thinking"):
        return "When `thinking` is enabled, a final `assistant` message must start with a thinking block"
    return None


def no_forced_tool_with_thinking(model: Model, body: Body) -> str | None:
    choice = body.get("tool_choice") or body.get("toolConfig", {}).get("toolChoice") or {}
    forced = choice.get("type") in ("any", "tool") or "any" in choice or "tool" in choice
    if _claude_thinking(body) and forced:
        return "Thinking may not be enabled when tool_choice forces tool use"
    return None


#: https://docs.anthropic.com/en/docs/about-claude/models/overview (max output)
_CLAUDE_LIMITS = [
    (r"claude-opus-4[-.][6-9]", 128_000),
    (r"claude-(opus|sonnet|haiku)-4[-.][5-9]", 64_000),
    (r"claude-opus-4", 32_000),
    (r"claude-(sonnet-4|3-7-sonnet)", 64_000),
    (r"claude-3-5-haiku", 8_192),
]


def claude_token_limits(model: Model, body: Body) -> str | None:
    max_tokens = body.get("max_tokens") or body.get("inferenceConfig", {}).get("maxTokens")
    limit = next((n for p, n in _CLAUDE_LIMITS if re.search(p, model.id)), None)
    if max_tokens and limit and max_tokens > limit:
        return f"max_tokens: {max_tokens} > {limit}, which is the maximum allowed"
    thinking = _claude_thinking(body)
    if thinking and thinking["type"] == "enabled":
        budget = thinking["budget_tokens"]
        if budget < 1024:
            return "thinking.budget_tokens: must be greater than or equal to 1024"
        if max_tokens is not None and budget >= max_tokens:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    return None


def claude_sampling_with_thinking(model: Model, body: Body) -> str | None:
    if not _claude_thinking(body):
        return None
    inference = body.get("inferenceConfig", {})
    extra = body.get("additionalModelRequestFields", {})
    if "temperature" in body or "temperature" in inference:
        return "temperature may only be set to 1 when thinking is enabled"
    if "top_k" in body or "top_k" in extra:
        return "top_k is not supported when thinking is enabled"
    top_p = body.get("top_p", inference.get("topP"))
    if top_p is not None and not 0.95 <= top_p <= 1:
        return "top_p must be between 0.95 and 1 when thinking is enabled"
    return None


#: Claude's adaptive thinking and effort, by model:
#: https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking ("Older models
#: (Sonnet 4.5, Opus 4.5, etc.) do not support adaptive thinking"; Opus 4.7 takes adaptive
#: only), https://platform.claude.com/docs/en/build-with-claude/effort (max: Opus only;
#: xhigh: Opus 4.7), https://platform.claude.com/docs/en/about-claude/models/migration-guide
#: (Opus 4.7: no temperature, top_p or top_k).
_ADAPTIVE = re.compile(r"claude-(opus|sonnet)-4[-.][6-9]")
_ADAPTIVE_ONLY = re.compile(r"claude-opus-4[-.][7-9]")
_CLAUDE_EFFORTS = [
    (r"claude-opus-4[-.][7-9]", ("low", "medium", "high", "xhigh", "max")),
    (r"claude-opus-4[-.]6", ("low", "medium", "high", "max")),
    (r"claude-sonnet-4[-.]6", ("low", "medium", "high")),
]


def claude_adaptive_thinking(model: Model, body: Body) -> str | None:
    extra = body.get("additionalModelRequestFields", {})
    thinking = body.get("thinking") or extra.get("thinking") or {}
    effort = (body.get("output_config") or extra.get("output_config") or {}).get("effort")
    if thinking.get("type") == "adaptive" and not _ADAPTIVE.search(model.id):
        return "adaptive thinking is not supported on this model"
    if thinking.get("type") == "enabled" and _ADAPTIVE_ONLY.search(model.id):
        return '"thinking.type.enabled" is not supported for this model; use "adaptive"'
    allowed = next((e for p, e in _CLAUDE_EFFORTS if re.search(p, model.id)), ())
    if effort is not None and effort not in allowed:
        return f"output_config.effort: {effort!r} is not supported by this model"
    if _ADAPTIVE_ONLY.search(model.id):
        inference = body.get("inferenceConfig", {})
        for name in ("temperature", "top_p", "top_k", "topP"):
            if name in body or name in inference or name in extra:
                return f"`{name}` is deprecated for this model"
    return None


def claude_temperature_or_top_p(model: Model, body: Body) -> str | None:
    inference = body.get("inferenceConfig", {})
    if ("temperature" in body or "temperature" in inference) and (
        "top_p" in body or "topP" in inference
    ):
        return "`temperature` and `top_p` cannot both be specified for this model"
    return None


def no_blank_text(model: Model, body: Body) -> str | None:
    def texts(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            if isinstance(value.get("text"), str):
                yield value["text"]
            for key, item in value.items():
                if key not in ("input", "json"):
                    yield from texts(item)
        elif isinstance(value, list):
            for item in value:
                yield from texts(item)

    for message in body["messages"]:
        if isinstance(message["content"], str):
            if not message["content"].strip():
                return "messages: text content blocks must contain non-whitespace text"
            continue
        if any(not t.strip() for t in texts(message["content"])):
            return "messages: text content blocks must contain non-whitespace text"
    return None


def anthropic_tool_results_follow_uses(model: Model, body: Body) -> str | None:
    messages = body["messages"]
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        uses = {_use_id(b) for b in _blocks(message) if _kind(b) == "tool_use"}
        if not uses:
            continue
        following = _blocks(messages[i + 1]) if i + 1 < len(messages) else []
        results = {_result_id(b) for b in following if _kind(b) == "tool_result"}
        if i + 1 < len(messages) and uses - results:
            return "tool_use ids were found without tool_result blocks immediately after"
    return None


def _use_id(block: dict[str, Any]) -> str:
    return str(block["id"] if "id" in block else block["toolUse"]["toolUseId"])


def _result_id(block: dict[str, Any]) -> str:
    return str(block["tool_use_id"] if "tool_use_id" in block else block["toolResult"]["toolUseId"])


def converse_roles_alternate(model: Model, body: Body) -> str | None:
    roles = [m["role"] for m in body["messages"]]
    if roles and roles[0] != "user":
        return "A conversation must start with a user message"
    if any(a == b for a, b in itertools.pairwise(roles)):
        return "A conversation must alternate between user and assistant roles"
    return None


def chat_tool_messages_follow_calls(model: Model, body: Body) -> str | None:
    messages = body["messages"]
    expected: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            if message["tool_call_id"] not in expected:
                return (
                    "messages with role 'tool' must be a response to a preceding message "
                    "with 'tool_calls'"
                )
            expected.discard(message["tool_call_id"])
            continue
        if expected:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'"
            )
        if message["role"] == "assistant":
            expected = {c["id"] for c in message.get("tool_calls", [])}
    return None


def xai_reasoning_effort(model: Model, body: Body) -> str | None:
    if "reasoning_effort" in body and not model.id.startswith("grok-3-mini"):
        return f"Model {model.id} does not support parameter reasoningEffort"
    if body.get("reasoning_effort") not in (None, "low", "high"):
        return "reasoning_effort must be low or high"
    if model.id.startswith("grok-4") and "stop" in body:
        return "Argument not supported on this model: stop"
    return None


def deepseek_reasoning_content(model: Model, body: Body) -> str | None:
    for i, message in enumerate(body["messages"]):
        needs = message["role"] == "assistant" and message.get("tool_calls")
        if needs and "reasoning_content" not in message:
            return (
                f"Missing `reasoning_content` field in the assistant message at message index {i}"
            )
    return None


def mistral_tool_call_ids(model: Model, body: Body) -> str | None:
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            if not re.fullmatch(r"[a-zA-Z0-9]{9}", call["id"]):
                return "Tool call id has to be a string of length 9 of [a-zA-Z0-9]"
        if message["role"] == "tool" and not re.fullmatch(
            r"[a-zA-Z0-9]{9}", message["tool_call_id"]
        ):
            return "Tool call id has to be a string of length 9 of [a-zA-Z0-9]"
    return None


#: https://developers.openai.com/api/docs/guides/reasoning and the ReasoningEffort docs of
#: the openai SDK: gpt-5 minimal..high; gpt-5.1 none..high; xhigh on every model after
#: gpt-5.1-codex-max; codex models no none; gpt-5-pro high only, later pro medium..xhigh.
_OPENAI_EFFORTS = [
    (r"^gpt-5-pro", ("high",)),
    (r"^gpt-5\.\d+-pro", ("medium", "high", "xhigh")),
    (r"^gpt-5\.1-codex-max", ("low", "medium", "high", "xhigh")),
    (r"^gpt-5\.1-codex", ("low", "medium", "high")),
    (r"^gpt-5\.\d+-codex", ("low", "medium", "high", "xhigh")),
    (r"^gpt-5\.1(?!\d)", ("none", "low", "medium", "high")),
    (r"^gpt-5\.\d+", ("none", "low", "medium", "high", "xhigh")),
    (r"^gpt-5", ("minimal", "low", "medium", "high")),
    (r"^o\d", ("low", "medium", "high")),
]


def openai_reasoning_params(model: Model, body: Body) -> str | None:
    effort = body.get("reasoning_effort") or body.get("reasoning", {}).get("effort")
    allowed = next((e for p, e in _OPENAI_EFFORTS if re.search(p, model.id)), None)
    if allowed is None:
        return "reasoning_effort is only supported by reasoning models" if effort else None
    if effort is not None and effort not in allowed:
        return f"Unsupported value: 'reasoning_effort' does not support {effort!r} with this model"
    for name in ("temperature", "top_p", "stop"):
        if name in body:
            return f"Unsupported parameter: '{name}' is not supported with this model"
    return None


def groq_reasoning_effort(model: Model, body: Body) -> str | None:
    if "reasoning_effort" in body and "gpt-oss" not in model.id and "qwen" not in model.id:
        return "`reasoning_effort` is not supported with this model"
    return None


def gemini_signed_function_calls(model: Model, body: Body) -> str | None:
    for i, content in enumerate(body["contents"]):
        calls = [p for p in content["parts"] if "functionCall" in p]
        if content["role"] == "model" and calls and "thoughtSignature" not in calls[0]:
            return (
                f"Function call is missing a thought_signature in functionCall parts (content {i})"
            )
    return None


def gemini_responses_match_calls(model: Model, body: Body) -> str | None:
    contents = body["contents"]
    for i, content in enumerate(contents):
        calls = sum("functionCall" in p for p in content["parts"])
        if content["role"] != "model" or not calls:
            continue
        following = contents[i + 1]["parts"] if i + 1 < len(contents) else None
        if following is not None and sum("functionResponse" in p for p in following) != calls:
            return (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
    return None


_GEMINI_BUDGETS = [
    (r"gemini-2\.5-pro", 128, 32_768, False),
    (r"gemini-2\.5-flash-lite", 512, 24_576, True),
    (r"gemini-2\.5-flash", 1, 24_576, True),
]


def gemini_thinking_config(model: Model, body: Body) -> str | None:
    config = body.get("generationConfig", {}).get("thinkingConfig")
    if config is None:
        return None
    if re.search(r"gemini-(1|2\.0)", model.id):
        return "Thinking is not supported by this model"
    if model.id.startswith("gemini-3"):
        if config.get("thinkingBudget") == 0:
            return "Thinking can't be disabled for this model"
        return None
    budget = config.get("thinkingBudget")
    row = next((r for r in _GEMINI_BUDGETS if re.search(r[0], model.id)), None)
    if budget is None or row is None:
        return None
    _, low, high, can_disable = row
    if budget == 0 and not can_disable:
        return "Budget 0 is invalid. This model only works in thinking mode."
    if budget != 0 and not low <= budget <= high and budget != -1:
        return f"The thinking budget {budget} is invalid: it must be in {low}-{high}"
    return None


def _anthropic_marks(body: Body) -> list[dict[str, Any]]:
    """Every ``cache_control`` in prompt order: tools, system, then message blocks."""
    system = body.get("system")
    blocks = [
        *body.get("tools", []),
        *(system if isinstance(system, list) else []),
        *(b for m in body.get("messages", []) for b in _blocks(m)),
    ]
    return [b["cache_control"] for b in blocks if "cache_control" in b]


def _converse_marks(body: Body) -> list[dict[str, Any]]:
    """Every ``cachePoint`` in prompt order (Claude's: tools, system, then messages)."""
    blocks = [
        *body.get("toolConfig", {}).get("tools", []),
        *body.get("system", []),
        *(b for m in body.get("messages", []) for b in m["content"]),
    ]
    return [b["cachePoint"] for b in blocks if "cachePoint" in b]


def at_most_four_breakpoints(model: Model, body: Body) -> str | None:
    marks = _anthropic_marks(body) if model.api == "anthropic" else _converse_marks(body)
    if len(marks) > 4:
        return f"{len(marks)} cache breakpoints; a request takes at most 4"
    ttls = [m.get("ttl", "5m") for m in marks]
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        return "a 1h cache breakpoint after a 5m one (longer TTLs must come first)"
    return None


#: Claude models with structured outputs (output_config.format): Sonnet 4.5, Opus 4.1,
#: Opus 4.5, Haiku 4.5 and later.
_STRUCTURED_CLAUDE = re.compile(r"claude-(opus|sonnet|haiku)-4[-.]([5-9])|claude-opus-4[-.]1")


def structured_outputs_model(model: Model, body: Body) -> str | None:
    native = "output_config" in body or "outputConfig" in body
    if native and not _STRUCTURED_CLAUDE.search(model.id):
        return f"{model.id} has no structured outputs (output_config.format)"
    return None


def _schemas(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for sub in value.values():
                    yield from _schemas(sub)
            elif key in ("items", "anyOf"):
                for sub in value if isinstance(value, list) else [value]:
                    yield from _schemas(sub)


def openai_strict_schema(model: Model, body: Body) -> str | None:
    """A ``json_schema`` format: a valid name, and in strict mode every object closed
    with all its properties required."""
    fmt = body.get("response_format") or body.get("text", {}).get("format")
    if not fmt or fmt.get("type") != "json_schema":
        return None
    spec = fmt.get("json_schema", fmt)
    if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", spec["name"]):
        return f"json_schema name {spec['name']!r} is not [a-zA-Z0-9_-]{{1,64}}"
    if spec.get("strict"):
        for node in _schemas(spec["schema"]):
            if node.get("type") == "object" and (
                node.get("additionalProperties") is not False
                or set(node.get("properties", {})) != set(node.get("required", []))
            ):
                return "strict json_schema with an object that is open or has optional keys"
    return None


RULES: list[Rule] = [
    # https://docs.claude.com/en/docs/build-with-claude/prompt-caching ("up to 4 cache
    # breakpoints"; "longer TTL ... must appear before shorter TTLs");
    # https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html
    Rule(
        "cache breakpoints",
        lambda m: m.api in ("anthropic", "bedrock"),
        at_most_four_breakpoints,
    ),
    # https://docs.claude.com/en/docs/build-with-claude/structured-outputs
    Rule("structured outputs model", _claude(), structured_outputs_model),
    # https://platform.openai.com/docs/guides/structured-outputs#supported-schemas
    Rule(
        "OpenAI json_schema",
        lambda m: m.api in ("openai-chat", "openai-responses"),
        openai_strict_schema,
    ),
    # https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks
    Rule(
        "final assistant turn starts with thinking", _claude(), final_assistant_starts_with_thinking
    ),
    # https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#extended-thinking-with-tool-use
    Rule("no forced tool use with thinking", _claude(), no_forced_tool_with_thinking),
    # https://docs.anthropic.com/en/docs/about-claude/models/overview
    # https://docs.anthropic.com/en/api/messages (thinking.budget_tokens >= 1024, < max_tokens)
    Rule("output and thinking-budget limits", _claude(), claude_token_limits),
    # https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#feature-compatibility
    Rule("sampling with thinking", _claude(), claude_sampling_with_thinking),
    # https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking (see above)
    Rule("adaptive thinking and effort", _claude(), claude_adaptive_thinking),
    # https://docs.anthropic.com/en/docs/about-claude/models/migrating-to-claude-4
    Rule(
        "temperature or top_p on Claude 4.5 and later",
        _claude(r"claude-(opus|sonnet|haiku)-4[-.][5-9]"),
        claude_temperature_or_top_p,
    ),
    # https://docs.anthropic.com/en/api/messages ; Converse: "The text field ... is blank"
    Rule("no blank text", lambda m: m.api in ("anthropic", "bedrock"), no_blank_text),
    # https://docs.anthropic.com/en/docs/build-with-claude/tool-use/implement-tool-use
    Rule(
        "tool results right after tool uses",
        lambda m: m.api in ("anthropic", "bedrock"),
        anthropic_tool_results_follow_uses,
    ),
    # https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
    Rule("roles alternate", lambda m: m.api == "bedrock", converse_roles_alternate),
    # https://platform.openai.com/docs/guides/function-calling
    Rule(
        "tool messages follow their calls",
        lambda m: m.api == "openai-chat",
        chat_tool_messages_follow_calls,
    ),
    # https://platform.openai.com/docs/guides/reasoning
    Rule(
        "OpenAI reasoning parameters",
        lambda m: (
            m.api in ("openai-chat", "openai-responses") and m.provider in ("openai", "azure")
        ),
        openai_reasoning_params,
    ),
    # https://docs.x.ai/docs/guides/reasoning
    Rule("xAI reasoning_effort", _is("openai-chat", "xai"), xai_reasoning_effort),
    # https://console.groq.com/docs/reasoning
    Rule("Groq reasoning_effort", _is("openai-chat", "groq"), groq_reasoning_effort),
    # https://api-docs.deepseek.com/guides/thinking_mode#tool-calls
    Rule(
        "DeepSeek reasoning_content on tool turns",
        _is("openai-chat", "deepseek", family="reasoner"),
        deepseek_reasoning_content,
    ),
    # https://docs.mistral.ai/capabilities/function_calling/
    Rule("Mistral tool-call ids", _is("openai-chat", "mistral"), mistral_tool_call_ids),
    # https://ai.google.dev/gemini-api/docs/thought-signatures
    Rule(
        "Gemini 3 signed function calls",
        _is("gemini", family=r"gemini-3"),
        gemini_signed_function_calls,
    ),
    # https://ai.google.dev/gemini-api/docs/function-calling
    Rule("Gemini responses match calls", _is("gemini"), gemini_responses_match_calls),
    # https://ai.google.dev/gemini-api/docs/thinking#set-budget
    Rule("Gemini thinking config", _is("gemini"), gemini_thinking_config),
]


def violations(model: Model, body: Body) -> list[str]:
    """Every reason ``model``'s provider would refuse ``body``."""
    errors = schema_errors(model, body)
    for rule in RULES:
        if rule.applies(model):
            problem = rule.check(model, body)
            if problem:
                errors.append(f"[{rule.name}] {problem}")
    return errors
