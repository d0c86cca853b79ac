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

Cost. Every unit of work is a step charged to a `CheckBudget`: a (value, schema
node) visit, a node of a value read to compare it, a member of an ``enum`` indexed.
An ``enum`` (or ``const``) is indexed once per budget as a set of JSON-equality
keys, so a value is looked up in it at the cost of the value, not of the list.
The check is linear in the value for a given schema (an ``anyOf``/``oneOf``
branch judges a value once however often a recursive ``$ref`` reaches it);
``$ref`` chains that do not move into the value are followed `MAX_REF_CHAIN` deep
at most, values are checked `MAX_DEPTH` levels deep at most, and at most ``limit``
mismatches are kept. What still multiplies (an ``allOf`` that names a recursive
``$ref`` twice, in a schema a server's client wrote) stops when the budget is
spent, with a mismatch saying so: that value does not pass. One budget can be
shared by several checks (the tool calls of one answer share one: a budget per
call would let an answer of many calls multiply it).

`checking` is the same check as a generator that pauses every `PAUSE_EVERY` steps,
so an event loop can run other work between slices (`check_json` runs it through).
Pure: nothing is fetched, a remote ``$ref`` is a mismatch of its own.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable, Iterable
from typing import Any, Final

import msgspec

from ._check_budget import BudgetSpent, CheckBudget, run_through
from ._json_keys import JSONIndex, NotJSON, is_number, json_key

__all__ = ["MAX_DEPTH", "MAX_REF_CHAIN", "SchemaMismatch", "check_json", "checking"]

#: deepest chain of ``$ref`` followed without moving into the value (a schema that
#: refers to itself in a loop stops here, as a mismatch)
MAX_REF_CHAIN: Final = 32
#: deepest value checked (JSON decoders stop far above what a tool call nests)
MAX_DEPTH: Final = 256


class SchemaMismatch(msgspec.Struct, frozen=True, gc=False):
    """Where a value breaks its schema: ``path`` a JSON Pointer into the value (``""``
    is the value itself, ``/city``, ``/stops/0``), ``message`` what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message}"


def check_json(
    value: Any, schema: Any, *, limit: int = 50, budget: CheckBudget | None = None
) -> list[SchemaMismatch]:
    """Where ``value`` (decoded JSON) breaks ``schema``; empty when it conforms."""
    return run_through(checking(value, schema, limit=limit, budget=budget))


def checking(
    value: Any, schema: Any, *, limit: int = 50, budget: CheckBudget | None = None
) -> Generator[None, None, list[SchemaMismatch]]:
    """`check_json` pausing every `PAUSE_EVERY` steps (a fresh budget unless given)."""
    budget = CheckBudget() if budget is None else budget
    limit = max(1, limit)
    checker = _Checker(_Run(schema if isinstance(schema, dict) else {}, budget), limit)
    try:
        yield from checker.check(value, schema, "", 0, 0)
    except RecursionError:  # branches over a recursive $ref, far fewer levels than MAX_DEPTH
        deep = SchemaMismatch("", "nested too deeply to check; it does not pass")
        return [deep, *checker.found][:limit]
    except BudgetSpent:
        spent = SchemaMismatch(
            "",
            f"checking took more than {budget.steps} steps (anyOf, oneOf or allOf branches "
            "over a recursive $ref, or many large values); it was not checked fully and "
            "does not pass",
        )
        return [spent, *checker.found][:limit]
    return checker.found


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


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
        return is_number(value)
    if kind == "integer":
        return is_number(value) and (isinstance(value, int) or float(value).is_integer())
    return True  # a type name this subset does not know constrains nothing


_SHOWN: Final = 60


def _shown(value: Any) -> str:
    """``value`` as JSON, cut to `_SHOWN` characters; reads no more of it than that
    (a mismatch's message costs the same for a huge value)."""
    out: list[str] = []
    _render(value, out, [_SHOWN + 1])
    text = "".join(out)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _render(value: Any, out: list[str], room: list[int]) -> None:
    """Append ``value``'s JSON to ``out`` until ``room[0]`` characters are used up."""
    if room[0] <= 0:
        return
    if isinstance(value, (list, tuple, dict)):
        named = isinstance(value, dict)
        members: Iterable[tuple[Any, Any]] = (
            value.items() if isinstance(value, dict) else ((None, item) for item in value)
        )
        out.append("{" if named else "[")
        room[0] -= 1
        for i, (name, item) in enumerate(members):
            if room[0] <= 0:
                return
            if i:
                out.append(",")
                room[0] -= 1
            if named:
                _render(name, out, room)
                out.append(":")
                room[0] -= 1
            _render(item, out, room)
        out.append("}" if named else "]")
        room[0] -= 1
        return
    if isinstance(value, str):
        value = value[: room[0] + 1]
    try:
        text = msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        text = repr(value)[: room[0] + 1]
    out.append(text)
    room[0] -= len(text)


class _Run:
    """What every checker of one check shares: the root schema, the budget, the branch
    verdicts and the values' keys (the value and the schema are alive for the whole
    check, so their ids stand for them)."""

    __slots__ = ("budget", "known", "root", "value_keys")

    def __init__(self, root: dict[str, Any], budget: CheckBudget) -> None:
        self.root = root
        self.budget = budget
        #: branch verdicts by (value, schema node, depth, refs): the same value under
        #: the same branch is judged once
        self.known: dict[tuple[int, int, int, int], bool] = {}
        #: the JSON-equality keys of values compared to an enum or a const (None: none)
        self.value_keys: dict[int, Hashable | None] = {}

    def index(self, node: Any, kind: str, members: list[Any]) -> Generator[None, None, JSONIndex]:
        """The index of ``node``'s ``enum`` or ``const``, built once per budget."""
        found = self.budget.memo.get((id(node), kind))
        if found is not None:
            known: JSONIndex = found[1]
            return known
        index = JSONIndex(members)
        yield from index.build(self.budget)
        self.budget.memo[(id(node), kind)] = (node, index)
        return index

    def key(self, value: Any) -> Generator[None, None, Hashable | None]:
        if id(value) in self.value_keys:
            return self.value_keys[id(value)]
        try:
            key: Hashable | None = yield from json_key(value, self.budget)
        except NotJSON:
            key = None
        self.value_keys[id(value)] = key
        return key


class _Checker:
    __slots__ = ("found", "limit", "run")

    def __init__(self, run: _Run, limit: int) -> None:
        self.run = run
        self.limit = limit
        self.found: list[SchemaMismatch] = []

    def add(self, path: str, message: str) -> None:
        if len(self.found) < self.limit:
            self.found.append(SchemaMismatch(path, message))

    def valid(
        self, value: Any, schema: Any, path: str, depth: int, refs: int
    ) -> Generator[None, None, bool]:
        """Whether ``value`` conforms, without keeping what fails (anyOf/oneOf branches)."""
        key = (id(value), id(schema), depth, refs)
        verdict = self.run.known.get(key)
        if verdict is None:
            branch = _Checker(self.run, 1)
            yield from branch.check(value, schema, path, depth, refs)
            verdict = self.run.known[key] = not branch.found
        return verdict

    def resolve(self, ref: Any) -> Any:
        """The schema a local ``$ref`` points at (``#``, ``#/$defs/X``, any local pointer)."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        node: Any = self.run.root
        for raw in ref[1:].split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def check(
        self, value: Any, schema: Any, path: str, depth: int, refs: int
    ) -> Generator[None, None, None]:
        if len(self.found) >= self.limit:
            return
        yield from self.run.budget.tick()
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
                yield from self.check(value, target, path, depth, refs + 1)
        kind = schema.get("type")
        if kind is not None:
            kinds = kind if isinstance(kind, list) else [kind]
            if not any(_is_type(value, k) for k in kinds):
                wanted = " or ".join(str(k) for k in kinds)
                self.add(path, f"{_shown(value)} is not of type {wanted}")
        options = schema.get("enum")
        if isinstance(options, list) and not (
            yield from self.member(value, schema, "enum", options)
        ):
            self.add(path, f"{_shown(value)} is not one of {_shown(options)}")
        if "const" in schema and not (
            yield from self.member(value, schema, "const", [schema["const"]])
        ):
            self.add(path, f"{_shown(value)} is not {_shown(schema['const'])}")
        if is_number(value):
            self.numbers(value, schema, path)
        elif isinstance(value, str):
            self.strings(value, schema, path)
        elif isinstance(value, dict):
            yield from self.objects(value, schema, path, depth)
        elif isinstance(value, list):
            yield from self.arrays(value, schema, path, depth)
        yield from self.branches(value, schema, path, depth, refs)

    def member(
        self, value: Any, node: Any, kind: str, members: list[Any]
    ) -> Generator[None, None, bool]:
        """Whether ``value`` is JSON-equal to one of ``members`` (``node``'s enum or const)."""
        index = yield from self.run.index(node, kind, members)
        key = yield from self.run.key(value)
        return (yield from index.holds(value, key, self.run.budget))

    def numbers(self, value: float, schema: dict[str, Any], path: str) -> None:
        low: Any = schema.get("minimum")
        high: Any = schema.get("maximum")
        if is_number(low) and value < low:
            self.add(path, f"{_shown(value)} is less than the minimum {low}")
        if is_number(high) and value > high:
            self.add(path, f"{_shown(value)} is more than the maximum {high}")
        low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if is_number(low) and value <= low:
            self.add(path, f"{_shown(value)} is not more than {low} (exclusiveMinimum)")
        if is_number(high) and value >= high:
            self.add(path, f"{_shown(value)} is not less than {high} (exclusiveMaximum)")

    def strings(self, value: str, schema: dict[str, Any], path: str) -> None:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            self.add(path, f"{_shown(value)} is shorter than {low} characters")
        if isinstance(high, int) and len(value) > high:
            self.add(path, f"{_shown(value)} is longer than {high} characters")

    def objects(
        self, value: dict[str, Any], schema: dict[str, Any], path: str, depth: int
    ) -> Generator[None, None, None]:
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
                yield from self.check(item, properties[name], where, depth + 1, 0)
            elif extra is False:
                self.add(path, f"the property {name!r} is not allowed (additionalProperties)")
            elif isinstance(extra, dict):
                yield from self.check(item, extra, where, depth + 1, 0)

    def arrays(
        self, value: list[Any], schema: dict[str, Any], path: str, depth: int
    ) -> Generator[None, None, None]:
        low, high = schema.get("minItems"), schema.get("maxItems")
        if isinstance(low, int) and len(value) < low:
            self.add(path, f"has {len(value)} items, fewer than {low}")
        if isinstance(high, int) and len(value) > high:
            self.add(path, f"has {len(value)} items, more than {high}")
        items = schema.get("items")
        if isinstance(items, (dict, bool)):
            for i, item in enumerate(value):
                yield from self.check(item, items, f"{path}/{i}", depth + 1, 0)

    def branches(
        self, value: Any, schema: dict[str, Any], path: str, depth: int, refs: int
    ) -> Generator[None, None, None]:
        every = schema.get("allOf")
        if isinstance(every, list):
            for sub in every:
                yield from self.check(value, sub, path, depth, refs)
        some = schema.get("anyOf")
        if isinstance(some, list):
            for sub in some:
                if (yield from self.valid(value, sub, path, depth, refs)):
                    break
            else:
                self.add(path, f"{_shown(value)} matches none of the {len(some)} anyOf schemas")
        one = schema.get("oneOf")
        if isinstance(one, list):
            matched = 0
            for sub in one:
                matched += yield from self.valid(value, sub, path, depth, refs)
            if matched != 1:
                self.add(
                    path,
                    f"{_shown(value)} matches {matched} of the oneOf schemas, not exactly one",
                )
