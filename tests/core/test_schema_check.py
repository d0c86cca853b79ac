"""The JSON Schema subset validator, held to the ``jsonschema`` package as an oracle."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamfn.core.json._check_budget import PAUSE_EVERY, CheckBudget
from streamfn.core.json._json_keys import json_equal
from streamfn.core.json._schema_check import MAX_REF_CHAIN, SchemaMismatch, check_json, checking

KEYS = ["a", "b", "c/d", "e~"]
TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from([0.0, 1.0, 2.5, -1.5])
    | st.sampled_from(["", "x", "héllo", "abcdef"])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=12,
)


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    number = st.integers(-3, 3) | st.sampled_from([0.5, 1.5])
    return st.one_of(
        st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)),
        st.builds(
            lambda ts: {"type": ts},
            st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
        ),
        st.builds(lambda v: {"enum": v}, st.lists(scalars, min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, scalars),
        st.builds(lambda n: {"minimum": n}, number),
        st.builds(lambda n: {"maximum": n}, number),
        st.builds(lambda n: {"exclusiveMinimum": n}, number),
        st.builds(lambda n: {"exclusiveMaximum": n}, number),
        st.builds(lambda n: {"type": "string", "minLength": n}, st.integers(0, 4)),
        st.builds(lambda n: {"maxLength": n}, st.integers(0, 4)),
        st.builds(lambda n: {"minItems": n}, st.integers(0, 3)),
        st.builds(lambda n: {"maxItems": n}, st.integers(0, 3)),
        st.just({"$ref": "#/$defs/leaf"}),
        st.just({}),
    )


def _compound(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(
            lambda props, req, extra: {
                "type": "object",
                "properties": props,
                "required": req,
                **({} if extra is None else {"additionalProperties": extra}),
            },
            st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
            st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
            st.none() | st.booleans() | inner,
        ),
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(lambda subs: {"anyOf": subs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda subs: {"oneOf": subs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda subs: {"allOf": subs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda a, b: {**a, **b}, inner, inner),
        # a recursive definition: reached again only by moving into the value
        st.just({"$ref": "#/$defs/tree"}),
    )


schemas = st.recursive(_leaf(), _compound, max_leaves=8)
roots = st.builds(
    lambda body, leaf: {
        **body,
        "$defs": {
            "leaf": leaf,
            "tree": {"type": "object", "properties": {"a": {"$ref": "#/$defs/tree"}, "b": leaf}},
        },
    },
    schemas,
    _leaf().filter(lambda s: "$ref" not in s),
)


def pointer(path: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(roots, values)
def test_agrees_with_jsonschema(schema: dict[str, Any], value: Any) -> None:
    oracle = jsonschema.Draft202012Validator(schema)
    expected = {pointer(e.absolute_path) for e in oracle.iter_errors(value)}
    found = check_json(value, schema, limit=10_000)
    assert (not found) == oracle.is_valid(value), (schema, value, found)
    assert {m.path for m in found} == expected, (schema, value, found)


def test_mismatches_name_the_path_and_the_reason() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "units": {"enum": ["c", "f"]},
            "stops": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city", "days"],
        "additionalProperties": False,
    }
    found = check_json({"city": "P", "days": 30, "units": "k", "stops": ["a", 3], "x": 1}, schema)
    assert set(map(str, found)) == {
        '/city: "P" is shorter than 2 characters',
        "/days: 30 is more than the maximum 14",
        '/units: "k" is not one of ["c","f"]',
        "/stops/1: 3 is not of type string",
        "/: the property 'x' is not allowed (additionalProperties)",
    }
    assert check_json({"city": "Paris", "days": 2.0}, schema) == []  # 2.0 is an integer
    assert check_json({}, schema)[0] == SchemaMismatch(
        "", "the required property 'city' is missing"
    )


def test_a_ref_loop_is_a_mismatch_not_a_hang() -> None:
    schema = {
        "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}},
        "$ref": "#/$defs/x",
    }
    found = check_json(1, schema)
    assert len(found) == 1 and f"longer than {MAX_REF_CHAIN}" in found[0].message
    assert "not in this schema" in check_json(1, {"$ref": "https://example.com/s.json"})[0].message


@pytest.mark.parametrize("limit", [1, 3])
def test_the_number_of_mismatches_kept_is_bounded(limit: int) -> None:
    found = check_json(list(range(100)), {"items": {"type": "string"}}, limit=limit)
    assert len(found) == limit


BOUNDS = [
    {key: bound}
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    for bound in (-1, 0, 1.5)
] + [{key: n} for key in ("minLength", "maxLength", "minItems", "maxItems") for n in (0, 1, 2)]
EDGES = [-1, -1.0, 0, 0.0, 1, 1.5, 2, True, "", "a", "ab", "é", [], [1], [1, 2], None]


@pytest.mark.parametrize("schema", BOUNDS, ids=str)
def test_every_bound_at_its_edges_agrees_with_jsonschema(schema: dict[str, Any]) -> None:
    oracle = jsonschema.Draft202012Validator(schema)
    for value in EDGES:
        assert (not check_json(value, schema)) == oracle.is_valid(value), value


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def test_branches_over_a_recursive_ref_judge_each_value_once() -> None:
    """``anyOf`` of two branches that both recurse into ``#`` tried every branch at every
    level: 2**depth visits (twenty levels took seconds, thirty hours), from a schema a
    server's client may write and a few hundred bytes of arguments."""
    both = {"properties": {"a": {"$ref": "#"}}}
    schema = {"type": "object", "anyOf": [both, {**both, "minProperties": 0}]}
    budget = CheckBudget()
    found = check_json(_nested(16, 5), schema, budget=budget)
    assert found and "anyOf" in found[0].message
    assert budget.spent < 16 * 20  # linear in the depth, not 2**16


def test_what_still_multiplies_stops_at_the_step_budget_and_does_not_pass() -> None:
    twice = {"allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]}
    found = check_json(_nested(16, {}), twice, budget=CheckBudget(10_000))
    assert found and "more than 10000 steps" in found[0].message


def test_a_value_too_deep_for_its_branches_is_a_mismatch_not_a_recursion_error() -> None:
    schema = {"type": "object", "anyOf": [{"properties": {"a": {"$ref": "#"}}}, {"type": "object"}]}
    found = check_json(_nested(240, 5), schema)
    assert found and "too deeply" in found[0].message


# -- the cost: every step charged, enums indexed, one budget for many checks ------------


def test_an_enum_is_indexed_once_and_each_value_looked_up_at_its_own_cost() -> None:
    """An ``enum`` of 300,000 numbers and an array repeating its last member: the list
    was scanned once per item, outside the budget (seconds per answer, on the loop)."""
    members = list(range(300_000))
    schema = {"type": "array", "items": {"enum": members}}
    budget = CheckBudget()
    answer = [float(members[-1]) for _ in range(300)]  # 299999.0 equals 299999
    assert check_json(answer, schema, budget=budget) == []
    # the members once, then per item: its visit and its key
    assert budget.spent == 1 + len(members) + 300 * 2
    again = budget.spent
    assert check_json(answer, schema, budget=budget) == []
    assert budget.spent - again == 1 + 300 * 2  # indexed once per budget


def test_a_large_value_costs_its_nodes_and_shows_a_short_message() -> None:
    members = [[i, i] for i in range(1000)]
    value = [[i, i + 1] for i in range(1000)]
    budget = CheckBudget()
    found = check_json(value, {"enum": members}, budget=budget)
    assert budget.spent == 1 + 3 * len(members) + 1 + 3 * len(value)  # visit, members, value
    assert len(found) == 1 and len(found[0].message) < 160  # cut, the enum not spelled out


EQUAL_OR_NOT = [
    1,
    1.0,
    True,
    False,
    0,
    0.0,
    None,
    "1",
    "",
    [],
    {},
    [1],
    [1.0],
    [True],
    {"a": 1},
    {"a": 1.0},
    {"a": True},
    {"a": [1, {"b": None}]},
    {"a": [1.0, {"b": None}]},
    [[]],
    [{}],
    2.5,
    float("nan"),
]


@pytest.mark.parametrize("member", EQUAL_OR_NOT, ids=repr)
def test_enum_and_const_membership_is_json_equality(member: Any) -> None:
    for value in EQUAL_OR_NOT:
        expected = json_equal(value, member)
        assert (not check_json(value, {"enum": ["other", member, 7]})) == expected, value
        assert (not check_json(value, {"const": member})) == expected, value


def test_values_and_members_that_are_not_json_are_compared_one_by_one() -> None:
    assert check_json((1, 2), {"enum": [(1, 2), 3]}) == []
    assert check_json((1, 2), {"enum": [[1, 2]]})  # a tuple is not a JSON array


def test_one_budget_bounds_many_checks() -> None:
    """A recursive ``$ref`` named twice by an ``allOf`` multiplies; a budget per check
    let an answer of K calls take K budgets. Sharing one, the checks together stop at it
    and every check after it does not pass."""
    twice = {"allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]}
    budget = CheckBudget(20_000)
    verdicts = [check_json(_nested(16, {}), twice, budget=budget) for _ in range(12)]
    assert budget.spent == 20_000 + 12  # each check stopped at its first step past it
    assert "more than 20000 steps" in verdicts[0][0].message
    assert all(v and "more than 20000 steps" in v[0].message for v in verdicts)


def test_checking_pauses_every_slice() -> None:
    steps = checking(list(range(5 * PAUSE_EVERY)), {"items": {"type": "integer"}})
    budget_pauses = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            assert done.value == []
            break
        budget_pauses += 1
    assert budget_pauses == (1 + 5 * PAUSE_EVERY) // PAUSE_EVERY
