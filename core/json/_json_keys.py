"""JSON equality, and the keys that make it a set lookup.

JSON Schema compares ``enum`` and ``const`` members as JSON values: ``1`` equals
``1.0``, ``true`` is not ``1``, arrays and objects by content. `json_equal` says it
for two values; `json_key` gives a hashable key that is equal exactly when the
values are, so a list of members becomes a set (`JSONIndex`) and a value is looked
up at the cost of its own nodes, not of the list. Each node costs a step of a
`CheckBudget`, and values that are not JSON (a tuple, an object) have no key
(`NotJSON`): they are compared one by one.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from typing import Any

from ._check_budget import CheckBudget

__all__ = ["JSONIndex", "NotJSON", "is_number", "json_equal", "json_key"]


class NotJSON(Exception):
    """A value with no JSON-equality key (a tuple, an object): compared one by one."""


def is_number(value: Any) -> bool:
    """A JSON number (``true`` and ``false`` are not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON means it: numbers by value, ``true`` never ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


# the kinds a key starts with: JSON equality never crosses kinds (``true`` is not ``1``)
_NULL, _BOOL, _NUMBER, _STRING, _ARRAY, _OBJECT, _NAN = range(7)


def json_key(value: Any, budget: CheckBudget) -> Generator[None, None, Hashable]:
    """A key equal to another value's exactly when the values are JSON-equal (``1`` and
    ``1.0`` share one, ``true`` and ``1`` do not), one step per node; `NotJSON` for a
    value that is not JSON."""
    yield from budget.tick()
    if value is None:
        return (_NULL,)
    if isinstance(value, bool):
        return (_BOOL, value)
    if is_number(value):
        # NaN equals nothing, itself included: a key of its own (the object's identity)
        return (_NUMBER, value) if value == value else (_NAN, object())
    if isinstance(value, str):
        return (_STRING, value)
    if isinstance(value, list):
        items = []
        for item in value:
            items.append((yield from json_key(item, budget)))
        return (_ARRAY, tuple(items))
    if isinstance(value, dict):
        members = []
        for name, item in value.items():
            if not isinstance(name, str):
                raise NotJSON
            members.append((name, (yield from json_key(item, budget))))
        return (_OBJECT, frozenset(members))
    raise NotJSON


class JSONIndex:
    """An ``enum`` (or a ``const``) as the keys of its members, and the members that
    have none (not JSON), which are compared one by one."""

    __slots__ = ("keys", "members", "rest")

    def __init__(self, members: list[Any]) -> None:
        self.members = members
        self.keys: set[Hashable] = set()
        self.rest: list[Any] = []

    def build(self, budget: CheckBudget) -> Generator[None, None, None]:
        for member in self.members:
            try:
                self.keys.add((yield from json_key(member, budget)))
            except NotJSON:
                self.rest.append(member)

    def holds(
        self, value: Any, key: Hashable | None, budget: CheckBudget
    ) -> Generator[None, None, bool]:
        """Whether a member equals ``value`` (``key`` its key; None: it has none)."""
        if key is not None and key in self.keys:
            return True
        for member in self.members if key is None else self.rest:
            yield from budget.tick()
            if json_equal(value, member):
                return True
        return False
