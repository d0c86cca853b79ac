"""JSON Schema for structured output: from a type or a dict to a schema a provider accepts.

No provider and no option lives here, only the schema itself: a msgspec type's
or a pydantic model's schema, local ``$ref``s inlined (nothing is ever fetched),
objects closed for strict modes. `streamfn.core.json._structured` maps it onto each
provider's mechanism.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import msgspec

from .._errors import UsageError

__all__ = [
    "OutputSchema",
    "StructuredOutputUnsupported",
    "is_pydantic_model",
    "json_schema_of",
    "output_schema",
    "strict_schema",
    "without_refs",
]

_NAME_CHARS: Final = re.compile(r"[^a-zA-Z0-9_-]")


class StructuredOutputUnsupported(UsageError):
    """``Options.response_schema`` was given for a model known not to take one (or a
    schema its dialect cannot express): a request error, never worth a retry."""


class OutputSchema(msgspec.Struct, frozen=True, kw_only=True):
    """A response schema ready to send: ``name`` (a valid wire name), ``schema``
    (JSON Schema with an object at its root), ``target`` (the type to validate
    with, None for a plain dict schema)."""

    name: str
    schema: dict[str, Any]
    target: Any = None


def is_pydantic_model(spec: Any) -> bool:
    return (
        isinstance(spec, type)
        and hasattr(spec, "model_json_schema")
        and hasattr(spec, "model_validate")
    )


def json_schema_of(spec: Any) -> dict[str, Any]:
    """The JSON Schema ``spec`` stands for, local ``$ref``s resolved (see `output_schema`)."""
    if isinstance(spec, dict):
        raw: dict[str, Any] = spec
    elif is_pydantic_model(spec):
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


#: the most schema nodes (objects, lists, values) inlining may build, and the deepest
#: chain of $refs it follows: far above any schema a provider accepts (OpenAI: 5,000
#: properties, 10 levels of nesting), far below what would pin a CPU
MAX_SCHEMA_NODES: Final = 20_000
MAX_SCHEMA_DEPTH: Final = 64


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

    budget = [MAX_SCHEMA_NODES]

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        # Inlining copies each definition where it is used: a few kilobytes of $defs
        # that each use the next twice expand exponentially. Count what is built and
        # stop at a size no provider takes (and before Python's recursion limit).
        budget[0] -= 1
        if budget[0] < 0 or len(stack) > MAX_SCHEMA_DEPTH:
            raise ValueError(
                f"response_schema: more than {MAX_SCHEMA_NODES} nodes or {MAX_SCHEMA_DEPTH} "
                "nested $refs once local $refs are inlined; simplify the schema"
            )
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
