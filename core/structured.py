"""Structured output: one JSON Schema, each provider's mechanism, one parsed answer.

``Options.response_schema`` is a JSON Schema (a dict), or a type: a msgspec
``Struct`` (or anything `msgspec.json.schema` describes: dataclasses,
TypedDicts...) or a pydantic model class (its ``model_json_schema()``; pydantic
is never imported here, so it stays optional). Every provider gets the same
schema in its own dialect:

- OpenAI Chat / Mistral / OpenAI-compatible: ``response_format`` json_schema;
  OpenAI Responses: ``text.format``; Anthropic Claude 4.5: ``output_config.format``;
  Gemini 2.5+: ``responseJsonSchema``, older Gemini: ``responseSchema`` in
  Gemini's OpenAPI subset (``providers.gemini.gemini_schema``); Ollama: ``format``;
  Bedrock Converse with Claude 4.5: ``outputConfig.textFormat``. These are native.
- Older Claude (Anthropic and Bedrock) and Nova: a forced tool whose input is the
  answer (`ANSWER_TOOL`). Emulated, but invisible: the provider's state machine turns
  that tool call's JSON into an ordinary text block and the stop reason into
  ``stop``, so the events, ``message.text`` and the caller's code are the same
  on every provider.

Where the wire has a ``strict`` flag (OpenAI), it is set when the schema
qualifies for strict mode (every object lists all its properties as required);
objects are closed (``additionalProperties: false``) where the schema left
that open. `parse_output` reads the answer back: JSON-decoded, then validated
with msgspec (or pydantic's own ``model_validate``) where a type was given,
with a small structural check for a plain dict schema. A failure raises
`OutputValidationError` naming the provider, what failed and the raw text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .capabilities import capabilities_for
from .events import StopReason
from .messages import AssistantMessage, Context, Tool
from .options import Options

if TYPE_CHECKING:
    from .models import Model

__all__ = [
    "ANSWER_TOOL",
    "OutputSchema",
    "OutputValidationError",
    "StructuredOutputUnsupported",
    "StructuredRequest",
    "answers_with_tool",
    "anthropic_output_format",
    "attach_parsed",
    "bedrock_text_format",
    "json_schema_of",
    "openai_response_format",
    "output_schema",
    "parse_output",
    "responses_text_format",
    "strict_schema",
    "structured_mode",
    "structured_request",
    "with_answer_tool",
    "without_refs",
]

#: The forced tool that carries the answer where structured output is emulated.
ANSWER_TOOL: Final = "json_answer"

_NAME_CHARS: Final = re.compile(r"[^a-zA-Z0-9_-]")


class OutputValidationError(ValueError):
    """The model's answer is not what ``Options.response_schema`` asked for.

    ``provider``/``model`` say who answered, ``reason`` what failed, ``raw``
    the text received (a refusal, a cut-off answer, invalid JSON...).
    """

    def __init__(self, provider: str, model: str, reason: str, raw: str) -> None:
        shown = raw if len(raw) <= 500 else raw[:500] + "..."
        super().__init__(f"{provider}/{model}: structured output {reason}; raw text: {shown!r}")
        self.provider = provider
        self.model = model
        self.reason = reason
        self.raw = raw


class StructuredOutputUnsupported(ValueError):
    """``Options.response_schema`` was given for a model known not to take one (or a
    schema its dialect cannot express): a request error, never worth a retry."""


class OutputSchema(msgspec.Struct, frozen=True, kw_only=True):
    """A response schema ready to send: ``name`` (a valid wire name), ``schema``
    (JSON Schema with an object at its root), ``target`` (the type to validate
    with, None for a plain dict schema)."""

    name: str
    schema: dict[str, Any]
    target: Any = None


def _is_pydantic(spec: Any) -> bool:
    return (
        isinstance(spec, type)
        and hasattr(spec, "model_json_schema")
        and hasattr(spec, "model_validate")
    )


def json_schema_of(spec: Any) -> dict[str, Any]:
    """The JSON Schema ``spec`` stands for, local ``$ref``s resolved (see `output_schema`)."""
    if isinstance(spec, dict):
        raw: dict[str, Any] = spec
    elif _is_pydantic(spec):
        raw = spec.model_json_schema()
    else:
        try:
            raw = msgspec.json.schema(spec)
        except TypeError as exc:
            raise TypeError(
                f"response_schema: {spec!r} is neither a JSON Schema dict, a type msgspec "
                f"can describe (Struct, dataclass, TypedDict) nor a pydantic model ({exc})"
            ) from None
    return _inline_refs(raw)


def output_schema(spec: Any) -> OutputSchema:
    """``spec`` (a dict schema or a type) as an `OutputSchema`.

    Raises `TypeError` for what is not a schema and `ValueError` when the root
    is not an object: OpenAI, Anthropic and Bedrock all require one, so the
    rule is the same everywhere (wrap a list in a Struct field).
    """
    schema = json_schema_of(spec)
    if schema.get("type") != "object":
        raise ValueError(
            "response_schema must describe a JSON object at its root (OpenAI, Anthropic and "
            "Bedrock require one); wrap a list or a scalar in a Struct field"
        )
    title = schema.get("title") if isinstance(schema.get("title"), str) else None
    if title is None and isinstance(spec, type):
        title = spec.__name__
    name = _NAME_CHARS.sub("_", title or "")[:64] or "response"
    target = None if isinstance(spec, dict) else spec
    return OutputSchema(name=name, schema=schema, target=target)


# -- $ref resolution ------------------------------------------------------------------


class _Recursive(Exception):
    pass


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Local ``$ref``s (``#/$defs/X``, ``#/definitions/X``) replaced by copies of their
    definitions; a recursive schema keeps its ``$defs`` with only the root resolved.
    A remote ``$ref`` is refused: nothing here (or at a provider, for us) fetches URLs."""
    defs: dict[str, Any] = {
        **schema.get("definitions", {}),
        **schema.get("$defs", {}),
    }

    def resolve(ref: str) -> Any:
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix) and ref[len(prefix) :] in defs:
                return defs[ref[len(prefix) :]]
        raise ValueError(f"response_schema: $ref {ref!r} is not a local definition")

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in stack:
                raise _Recursive(ref)
            target = walk(resolve(ref), (*stack, ref))
            rest = {
                k: walk(v, stack)
                for k, v in node.items()
                if k not in ("$ref", "$defs", "definitions")
            }
            return {**target, **rest}
        return {k: walk(v, stack) for k, v in node.items() if k not in ("$defs", "definitions")}

    try:
        return dict(walk(schema, ()))
    except _Recursive:
        ref = schema.get("$ref")
        root = dict(resolve(ref)) if isinstance(ref, str) else {}
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "$defs", "definitions")}
        return {**root, **rest, "$defs": defs}


# -- dialects ---------------------------------------------------------------------------


def _map_schemas(node: Any, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """``fn`` applied bottom-up to every sub-schema (objects inside schema positions)."""
    if isinstance(node, list):
        return [_map_schemas(item, fn) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions", "patternProperties"):
            out[key] = (
                {k: _map_schemas(v, fn) for k, v in value.items()}
                if isinstance(value, dict)
                else value
            )
        elif key in (
            "items",
            "anyOf",
            "oneOf",
            "allOf",
            "not",
            "additionalProperties",
            "prefixItems",
        ):
            out[key] = _map_schemas(value, fn)
        else:
            out[key] = value
    return fn(out)


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def strict_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``schema`` with every object closed (``additionalProperties: false`` where unset),
    and whether it qualifies for OpenAI's strict mode (every property required,
    nothing open). A schema that does not qualify is sent with ``strict: false``
    rather than rewritten: making an optional field required would change the answer.
    """
    qualifies = True

    def close(node: dict[str, Any]) -> dict[str, Any]:
        nonlocal qualifies
        if not _is_object(node):
            return node
        if "additionalProperties" not in node:
            node = {**node, "additionalProperties": False}
        elif node["additionalProperties"] is not False:
            qualifies = False
        properties = node.get("properties") or {}
        if set(properties) - set(node.get("required") or ()):
            qualifies = False
        return node

    closed = _map_schemas(schema, close)
    return closed, qualifies


def without_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` for a dialect without ``$ref`` (Gemini's ``responseSchema``): refs are
    already inlined by `output_schema`; a recursive schema cannot be said there."""
    if "$defs" in schema:
        raise StructuredOutputUnsupported(
            "response_schema is recursive; Gemini's responseSchema cannot express it "
            "(Gemini 2.5+ takes it as responseJsonSchema)"
        )
    return schema


# -- choosing the mechanism --------------------------------------------------------------


def structured_mode(model: Model, options: Options) -> str | None:
    """How ``options.response_schema`` reaches ``model``: ``native``, ``openapi``
    (Gemini's older dialect), ``tool`` (forced-tool emulation), or None (not asked).
    Raises `StructuredOutputUnsupported` where the model is known not to take one."""
    if options.response_schema is None:
        return None
    mode = capabilities_for(model).structured_output
    if mode == "none":
        raise StructuredOutputUnsupported(
            f"{model.key}: this model does not take a response schema (no JSON-schema "
            "output mode); drop Options.response_schema or use another model"
        )
    return mode


def answers_with_tool(model: Model, options: Options) -> bool:
    """Whether the answer comes back as the forced `ANSWER_TOOL` call (to show as text)."""
    return options.response_schema is not None and (
        capabilities_for(model).structured_output == "tool"
    )


def with_answer_tool(context: Context, options: Options) -> tuple[Context, Options]:
    """``context`` with the answer tool added and ``options`` forcing it: the request a
    provider without native structured output gets. The caller's own tools are still
    declared (a replayed tool call needs its definition) but this turn answers."""
    out = output_schema(options.response_schema)
    if any(tool.name == ANSWER_TOOL for tool in context.tools):
        raise ValueError(
            f"a tool is named {ANSWER_TOOL!r}, the name structured output uses for its "
            "answer; rename that tool"
        )
    tool = Tool(
        name=ANSWER_TOOL,
        description=f"Give the final answer ({out.name}) as this tool's input.",
        parameters=out.schema,
    )
    context = msgspec.structs.replace(context, tools=[*context.tools, tool])
    return context, msgspec.structs.replace(options, tool_choice=ANSWER_TOOL)


# -- reading the answer -------------------------------------------------------------------


def parse_output(message: AssistantMessage, spec: Any) -> Any:
    """The answer in ``message`` as ``spec`` asks: an instance of the type, or the decoded
    JSON for a dict schema. Raises `OutputValidationError`."""
    out = output_schema(spec)
    raw = message.text

    def fail(reason: str) -> OutputValidationError:
        return OutputValidationError(message.provider, message.model, reason, raw)

    if message.stop_reason == StopReason.LENGTH:
        raise fail("was cut off at max_tokens (stop_reason=length); raise Options.max_tokens")
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise fail(f"is not JSON ({exc})") from None
    target = out.target
    if target is None:
        problem = _check(value, out.schema, "$")
        if problem is not None:
            raise fail(f"does not match the schema: {problem}")
        return value
    if _is_pydantic(target):
        try:
            return target.model_validate(value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise fail(f"does not validate as {target.__name__}: {exc}") from None
    try:
        return msgspec.convert(value, target)
    except msgspec.ValidationError as exc:
        raise fail(f"does not validate as {getattr(target, '__name__', target)}: {exc}") from None


_JSON_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _check(value: Any, schema: Any, path: str) -> str | None:
    """The first structural mismatch (type, enum, const, required, nested properties and
    items, anyOf), or None. Not a full validator: the provider enforced the schema; this
    catches an answer that ignored it (a refusal, an emulation that drifted)."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        allowed = tuple(t for k in kinds for t in _JSON_TYPES.get(k, (object,)))
        is_bool = isinstance(value, bool)
        if not isinstance(value, allowed) or (is_bool and "boolean" not in kinds):
            return f"{path} is {type(value).__name__}, expected {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path} is {value!r}, not one of {schema['enum']!r}"
    if "const" in schema and value != schema["const"]:
        return f"{path} is {value!r}, expected {schema['const']!r}"
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and all(_check(value, b, path) for b in branches):
        return f"{path} matches none of its anyOf branches"
    if isinstance(value, dict):
        for name in schema.get("required") or ():
            if name not in value:
                return f"{path} lacks the required {name!r}"
        for name, sub in (schema.get("properties") or {}).items():
            if name in value:
                problem = _check(value[name], sub, f"{path}.{name}")
                if problem:
                    return problem
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problem = _check(item, schema["items"], f"{path}[{i}]")
            if problem:
                return problem
    return None


def attach_parsed(message: AssistantMessage, options: Options | None) -> None:
    """Set ``message.parsed`` from ``options.response_schema`` (what ``complete()`` does).
    A message that ended in an error is left alone; a bad answer raises
    `OutputValidationError`."""
    if options is None or options.response_schema is None or message.error_message:
        return
    message.__dict__["parsed"] = parse_output(message, options.response_schema)


# -- the request fields, per wire format ----------------------------------------------------


class StructuredRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a request builder needs: the (possibly tool-extended) ``context`` and
    ``options`` to build from, and the schema to send natively (None when not asked
    for, or when it rides on the forced answer tool)."""

    context: Context
    options: Options
    native: OutputSchema | None = None
    mode: str | None = None


def structured_request(model: Model, context: Context, options: Options) -> StructuredRequest:
    """Plan ``options.response_schema`` for ``model`` (see `structured_mode`)."""
    mode = structured_mode(model, options)
    if mode is None:
        return StructuredRequest(context=context, options=options)
    if mode == "tool":
        context, options = with_answer_tool(context, options)
        return StructuredRequest(context=context, options=options, mode=mode)
    return StructuredRequest(
        context=context, options=options, native=output_schema(options.response_schema), mode=mode
    )


def openai_response_format(out: OutputSchema) -> dict[str, Any]:
    """Chat Completions ``response_format`` (OpenAI, Mistral, the compatible family)."""
    schema, strict = strict_schema(out.schema)
    return {
        "type": "json_schema",
        "json_schema": {"name": out.name, "schema": schema, "strict": strict},
    }


def responses_text_format(out: OutputSchema) -> dict[str, Any]:
    """Responses API ``text.format``."""
    schema, strict = strict_schema(out.schema)
    return {"type": "json_schema", "name": out.name, "schema": schema, "strict": strict}


def anthropic_output_format(out: OutputSchema) -> dict[str, Any]:
    """Messages API ``output_config.format`` (objects closed, as Anthropic requires)."""
    return {"type": "json_schema", "schema": strict_schema(out.schema)[0]}


def bedrock_text_format(out: OutputSchema) -> dict[str, Any]:
    """Converse ``outputConfig.textFormat`` (the schema travels as a JSON string)."""
    schema = msgspec.json.encode(strict_schema(out.schema)[0]).decode()
    return {
        "type": "json_schema",
        "structure": {"jsonSchema": {"schema": schema, "name": out.name}},
    }
