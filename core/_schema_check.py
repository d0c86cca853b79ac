"""A small JSON Schema validator: the subset tool parameters and response schemas use.

`check_json` walks a decoded JSON value against a schema once and returns where
they disagree (`SchemaMismatch`: a JSON Pointer and a sentence), so an agent can
answer a model's broken tool call with the reasons instead of running it.

The keywords read are the ones providers accept for tools and structured output:
``type``, ``properties``, ``required``, ``additionalProperties``, ``items``,
``minItems``/``maxItems``, ``enum``, ``const``, ``minimum``/``maximum``,
``exclusiveMinimum``/``exclusiveMaximum``, ``minLength``/``maxLength``,
``anyOf``/``oneOf``/``allOf``, and ``$ref`` to the schema's own ``$defs`` or
``definitions``. Any other keyword is ignored (formats, patterns, conditionals):
the answer is never rejected for what was not checked. Equality (``enum``,
``const``) and types follow JSON, as the JSON Schema specification does: ``1``
equals ``1.0``, ``true`` is not ``1``, ``2.0`` is an integer.

The cost is linear in the value for a given schema (each value node is checked
against the schema nodes that apply to it, and an ``anyOf``/``oneOf`` branch
judges a value once however often a recursive ``$ref`` reaches it); ``$ref``
chains that do not move into the value are followed `MAX_REF_CHAIN` deep at
most, values are checked `MAX_DEPTH` levels deep at most, and at most ``limit``
mismatches are kept. What still multiplies (an ``allOf`` that names a recursive
``$ref`` twice, in a schema a server's client wrote) stops at `MAX_STEPS`
schema nodes visited, with a mismatch saying so: that value does not pass.
Pure: nothing is fetched, a remote ``$ref`` is a mismatch of its own.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = ["MAX_DEPTH", "MAX_REF_CHAIN", "MAX_STEPS", "SchemaMismatch", "check_json"]

#: deepest chain of ``$ref`` followed without moving into the value (a schema that
#: refers to itself in a loop stops here, as a mismatch)
MAX_REF_CHAIN: Final = 32
#: deepest value checked (JSON decoders stop far above what a tool call nests)
MAX_DEPTH: Final = 256
#: the most (value, schema node) visits one check makes, branches included: a linear
#: check of a large answer stays far below it, branches that multiply do not
MAX_STEPS: Final = 1_000_000


class SchemaMismatch(msgspec.Struct, frozen=True, gc=False):
    """Where a value breaks its schema: ``path`` a JSON Pointer into the value (``""``
    is the value itself, ``/city``, ``/stops/0``), ``message`` what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message}"


def check_json(value: Any, schema: Any, *, limit: int = 50) -> list[SchemaMismatch]:
    """Where ``value`` (decoded JSON) breaks ``schema``; empty when it conforms."""
    checker = _Checker(schema if isinstance(schema, dict) else {}, max(1, limit), [MAX_STEPS])
    try:
        checker.check(value, schema, "", 0, 0)
    except RecursionError:  # branches over a recursive $ref, far fewer levels than MAX_DEPTH
        deep = SchemaMismatch("", "nested too deeply to check; it does not pass")
        return [deep, *checker.found][: max(1, limit)]
    if checker.steps[0] < 0:
        spent = SchemaMismatch(
            "",
            f"checking this value took more than {MAX_STEPS} steps (anyOf, oneOf or allOf "
            "branches over a recursive $ref); it was not checked fully and does not pass",
        )
        return [spent, *checker.found][: max(1, limit)]
    return checker.found


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_type(value: Any, kind: Any) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "number":
        return _is_number(value)
    if kind == "integer":
        return _is_number(value) and (isinstance(value, int) or float(value).is_integer())
    return True  # a type name this subset does not know constrains nothing


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON means it: numbers by value, ``true`` never ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _shown(value: Any) -> str:
    try:
        text = msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    __slots__ = ("found", "known", "limit", "root", "steps")

    def __init__(
        self,
        root: dict[str, Any],
        limit: int,
        steps: list[int],
        known: dict[tuple[int, int, int, int], bool] | None = None,
    ) -> None:
        self.root = root
        self.limit = limit
        self.found: list[SchemaMismatch] = []
        #: the visits left, shared with the branches' checkers (below 0: spent)
        self.steps = steps
        #: branch verdicts by (value, schema node, depth, refs), shared likewise: the
        #: same value under the same branch is judged once (the value and the schema
        #: are alive for the whole check, so their ids stand for them)
        self.known: dict[tuple[int, int, int, int], bool] = {} if known is None else known

    def add(self, path: str, message: str) -> None:
        if len(self.found) < self.limit:
            self.found.append(SchemaMismatch(path, message))

    def valid(self, value: Any, schema: Any, path: str, depth: int, refs: int) -> bool:
        """Whether ``value`` conforms, without keeping what fails (anyOf/oneOf branches)."""
        key = (id(value), id(schema), depth, refs)
        verdict = self.known.get(key)
        if verdict is None:
            branch = _Checker(self.root, 1, self.steps, self.known)
            branch.check(value, schema, path, depth, refs)
            verdict = self.known[key] = not branch.found
        return verdict

    def resolve(self, ref: Any) -> Any:
        """The schema a local ``$ref`` points at (``#``, ``#/$defs/X``, any local pointer)."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node: Any = self.root
        for raw in ref[1:].split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def check(self, value: Any, schema: Any, path: str, depth: int, refs: int) -> None:
        if len(self.found) >= self.limit:
            return
        self.steps[0] -= 1
        if self.steps[0] < 0:
            return  # spent: `check_json` says so, and the value does not pass
        if schema is False:
            self.add(path, "no value is allowed here")
            return
        if not isinstance(schema, dict):
            return
        if depth > MAX_DEPTH:
            self.add(path, f"nested deeper than {MAX_DEPTH} levels; not checked further")
            return
        if "$ref" in schema:
            if refs >= MAX_REF_CHAIN:
                self.add(path, f"$ref chain longer than {MAX_REF_CHAIN} (a loop?)")
                return
            target = self.resolve(schema["$ref"])
            if target is None:
                self.add(path, f"$ref {schema['$ref']!r} is not in this schema")
            else:
                self.check(value, target, path, depth, refs + 1)
        kind = schema.get("type")
        if kind is not None:
            kinds = kind if isinstance(kind, list) else [kind]
            if not any(_is_type(value, k) for k in kinds):
                wanted = " or ".join(str(k) for k in kinds)
                self.add(path, f"{_shown(value)} is not of type {wanted}")
        options = schema.get("enum")
        if isinstance(options, list) and not any(json_equal(value, o) for o in options):
            self.add(path, f"{_shown(value)} is not one of {_shown(schema['enum'])}")
        if "const" in schema and not json_equal(value, schema["const"]):
            self.add(path, f"{_shown(value)} is not {_shown(schema['const'])}")
        if _is_number(value):
            self.numbers(value, schema, path)
        elif isinstance(value, str):
            self.strings(value, schema, path)
        elif isinstance(value, dict):
            self.objects(value, schema, path, depth)
        elif isinstance(value, list):
            self.arrays(value, schema, path, depth)
        self.branches(value, schema, path, depth, refs)

    def numbers(self, value: float, schema: dict[str, Any], path: str) -> None:
        low: Any = schema.get("minimum")
        high: Any = schema.get("maximum")
        if _is_number(low) and value < low:
            self.add(path, f"{_shown(value)} is less than the minimum {low}")
        if _is_number(high) and value > high:
            self.add(path, f"{_shown(value)} is more than the maximum {high}")
        low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if _is_number(low) and value <= low:
            self.add(path, f"{_shown(value)} is not more than {low} (exclusiveMinimum)")
        if _is_number(high) and value >= high:
            self.add(path, f"{_shown(value)} is not less than {high} (exclusiveMaximum)")

    def strings(self, value: str, schema: dict[str, Any], path: str) -> None:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            self.add(path, f"{_shown(value)} is shorter than {low} characters")
        if isinstance(high, int) and len(value) > high:
            self.add(path, f"{_shown(value)} is longer than {high} characters")

    def objects(self, value: dict[str, Any], schema: dict[str, Any], path: str, depth: int) -> None:
        required = schema.get("required")
        if isinstance(required, list):
            for name in required:
                if isinstance(name, str) and name not in value:
                    self.add(path, f"the required property {name!r} is missing")
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            where = f"{path}/{_escape(name)}"
            if name in properties:
                self.check(item, properties[name], where, depth + 1, 0)
            elif extra is False:
                self.add(path, f"the property {name!r} is not allowed (additionalProperties)")
            elif isinstance(extra, dict):
                self.check(item, extra, where, depth + 1, 0)

    def arrays(self, value: list[Any], schema: dict[str, Any], path: str, depth: int) -> None:
        low, high = schema.get("minItems"), schema.get("maxItems")
        if isinstance(low, int) and len(value) < low:
            self.add(path, f"has {len(value)} items, fewer than {low}")
        if isinstance(high, int) and len(value) > high:
            self.add(path, f"has {len(value)} items, more than {high}")
        items = schema.get("items")
        if isinstance(items, (dict, bool)):
            for i, item in enumerate(value):
                self.check(item, items, f"{path}/{i}", depth + 1, 0)

    def branches(
        self, value: Any, schema: dict[str, Any], path: str, depth: int, refs: int
    ) -> None:
        every = schema.get("allOf")
        if isinstance(every, list):
            for sub in every:
                self.check(value, sub, path, depth, refs)
        some = schema.get("anyOf")
        if isinstance(some, list) and not any(
            self.valid(value, sub, path, depth, refs) for sub in some
        ):
            self.add(path, f"{_shown(value)} matches none of the {len(some)} anyOf schemas")
        one = schema.get("oneOf")
        if isinstance(one, list):
            matched = sum(self.valid(value, sub, path, depth, refs) for sub in one)
            if matched != 1:
                self.add(
                    path,
                    f"{_shown(value)} matches {matched} of the oneOf schemas, not exactly one",
                )
