"""Structured output: one JSON Schema, each provider's mechanism, one parsed answer.

``Options.response_schema`` is a JSON Schema (a dict), or a type: a msgspec
``Struct`` (or anything `msgspec.json.schema` describes: dataclasses,
TypedDicts...) or a pydantic model class (its ``model_json_schema()``; pydantic
is never imported here, so it stays optional). Every provider gets the same
schema in its own dialect:

- OpenAI Chat / Mistral / OpenAI-compatible: ``response_format`` json_schema;
  OpenAI Responses: ``text.format``; Anthropic Claude 4.5: ``output_config.format``;
  Gemini 2.5+: ``responseJsonSchema``, older Gemini: ``responseSchema`` in
  Gemini's OpenAPI subset (``dialects.gemini._request.gemini_schema``); Ollama: ``format``;
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
with `streamfn.core.json._schema_check` for a plain dict schema. A failure raises
`OutputValidationError` naming the provider, what failed and the raw text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from .._errors import StreamfnError
from .._events import StopReason
from .._messages import AssistantMessage, Context, Tool
from .._options import Options
from ..catalogue._capabilities import capabilities_for
from ._schema import (
    OutputSchema,
    StructuredOutputUnsupported,
    is_pydantic_model,
    json_schema_of,
    output_schema,
    strict_schema,
    without_refs,
)
from ._schema_check import check_json

if TYPE_CHECKING:
    from ..catalogue._models import Model

__all__ = [
    "ANSWER_TOOL",
    "OutputSchema",
    "OutputValidationError",
    "StructuredOutputUnsupported",
    "StructuredRequest",
    "answers_with_tool",
    "attach_parsed",
    "json_schema_of",
    "output_schema",
    "parse_output",
    "strict_schema",
    "structured_mode",
    "structured_request",
    "with_answer_tool",
    "without_refs",
]

#: The forced tool that carries the answer where structured output is emulated.
ANSWER_TOOL: Final = "json_answer"


class OutputValidationError(StreamfnError, ValueError):
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
    if any(getattr(tool, "name", None) == ANSWER_TOOL for tool in context.tools):
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
        raise fail(
            "is incomplete (stop_reason=length): cut off at max_tokens (raise "
            "Options.max_tokens), or a paused turn whose continuations ran out (raise "
            "Options.pause_turn_continuations)"
        )
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise fail(f"is not JSON ({exc})") from None
    target = out.target
    if target is None:
        problems = check_json(value, out.schema, limit=1)
        if problems:
            raise fail(f"does not match the schema: {problems[0]}")
        return value
    if is_pydantic_model(target):
        try:
            return target.model_validate(value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise fail(f"does not validate as {target.__name__}: {exc}") from None
    try:
        return msgspec.convert(value, target)
    except msgspec.ValidationError as exc:
        raise fail(f"does not validate as {getattr(target, '__name__', target)}: {exc}") from None


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
