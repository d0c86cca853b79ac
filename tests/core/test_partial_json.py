"""PartialJSONParser: best-effort values of prefixes, exact final values, errors like msgspec."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from scaling import assert_linear

from streamfn.core.json._partial_json import PartialJSONError, PartialJSONParser
from streamfn.fuzz import _json_properties as props

# -- best-effort values: what a UI shows while arguments stream ----------------


@pytest.mark.parametrize(
    ("prefix", "shown"),
    [
        ("", None),
        ("{", {}),
        ('{"pa', {}),  # a key still arriving
        ('{"path"', {}),  # a key without its value
        ('{"path": ', {}),
        ('{"path": "', {"path": ""}),  # a string value has begun
        ('{"path": "src/ma', {"path": "src/ma"}),
        ('{"path": "a", "n": 12', {"path": "a"}),  # 12 may still become 123
        ('{"path": "a", "n": 12,', {"path": "a", "n": 12}),
        ('{"ok": tr', {}),  # an unfinished literal
        ('{"ok": true', {"ok": True}),  # a literal cannot grow
        ('{"xs": [1, [2, {"k": "v', {"xs": [1, [2, {"k": "v"}]]}),
        ('{"s": "caf\\u00', {"s": "caf"}),  # half an escape is held back
        ('{"s": "caf\\u00e9', {"s": "café"}),
        ('{"s": "\\ud83d', {"s": ""}),  # half a surrogate pair is held back
        ('{"s": "\\ud83d\\ude00', {"s": "😀"}),
        ('{"s": "a\\', {"s": "a"}),
        ('{"s": "a\\n', {"s": "a\n"}),
        ('"top', "top"),
        ("[1, 2", [1]),
    ],
)
def test_best_effort_value_of_a_prefix(prefix: str, shown: Any) -> None:
    parser = PartialJSONParser()
    parser.feed(prefix)
    assert parser.value() == shown
    assert parser.error is None
    assert not parser.complete


def test_value_is_live_and_grows_in_place() -> None:
    parser = PartialJSONParser()
    parser.feed('{"content": "hel')
    root = parser.value()
    assert root == {"content": "hel"}
    parser.feed('lo"}')
    assert parser.value() is root
    assert root == {"content": "hello"}
    assert parser.complete


def test_a_string_held_by_the_caller_never_changes() -> None:
    # The parser extends strings in place only when nobody else holds them.
    parser = PartialJSONParser()
    parser.feed('{"content": "abc')
    kept = parser.value()["content"]
    parser.feed("def")
    assert parser.value()["content"] == "abcdef"
    assert kept == "abc"


def test_top_level_number_completes_at_close() -> None:
    parser = PartialJSONParser()
    parser.feed("12")
    assert parser.value() is None
    parser.feed("3")
    assert parser.close() == 123


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": 1,}', "expected an object key"),
        ("[1,]", "expected a JSON value"),
        ('{"a" 1}', "expected ':'"),
        ('{"a": 1 "b": 2}', "expected ',' or '}'"),
        ('{"a": 01}', "invalid number '01'"),
        ('{"a": 1.}', "invalid number"),
        ('{"a": tru e}', "invalid literal 'tru '"),
        ('{"a": nul}', "invalid literal 'nul}'"),
        ('{"a": "x\\q"}', "invalid escape"),
        ('{"a": "\\u12G4"}', "invalid hex digit"),
        ('{"a": "\\ude00"}', "low surrogate without a high one"),
        ('{"a": "\\ud83dx"}', "high surrogate must be followed by a low one"),
        ('{"a": "\\ud83d\\u0041"}', "high surrogate must be followed by a low one"),
        ('{"a": "tab\there"}', "control character"),
        ("{} {}", "after the end of the JSON value"),
        ("{'a': 1}", "expected an object key in double quotes"),
        ('{"a": 1e999}', "number '1e999'"),
    ],
)
def test_invalid_json_is_reported_where_it_breaks(text: str, reason: str) -> None:
    parser = PartialJSONParser()
    parser.feed(text)  # never raises
    assert parser.error is not None
    assert reason in parser.error
    assert parser.error.startswith("invalid JSON at character ")
    with pytest.raises(PartialJSONError, match="invalid JSON"):
        parser.close()
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(text)


def test_error_is_sticky_and_keeps_the_best_effort_value() -> None:
    parser = PartialJSONParser()
    parser.feed('{"a": "kept", "b": [1, 2')
    parser.feed("x")  # "2" ended at "x", so it counts; "x" is the error
    error = parser.error
    assert error is not None and "expected ',' or ']', got 'x'" in error
    parser.feed(', "c": 3}')
    assert parser.error == error
    assert parser.value() == {"a": "kept", "b": [1, 2]}


def test_nesting_deeper_than_the_limit_is_an_error_not_a_crash() -> None:
    parser = PartialJSONParser(max_depth=3)
    parser.feed('{"a": [[1], [[')
    assert parser.error is not None and "nested deeper than 3 levels" in parser.error
    assert parser.value() == {"a": [[1], []]}
    deep = PartialJSONParser()
    deep.feed("[" * 100_000)  # no recursion anywhere, so no RecursionError
    assert deep.error is not None and "nested deeper than 500 levels" in deep.error


@pytest.mark.parametrize("text", ["", "   ", '{"a": [1, 2'])
def test_close_rejects_incomplete_input(text: str) -> None:
    parser = PartialJSONParser()
    parser.feed(text)
    with pytest.raises(PartialJSONError, match=r"incomplete JSON|no JSON value"):
        parser.close()


def test_one_character_feeds_with_a_read_after_each_stay_linear() -> None:
    # A regression guard, not a benchmark (bench/bench_fold.py measures): a
    # parser that re-read the prefix per feed would be quadratic.
    def prepare(lines: int) -> Callable[[], object]:
        body = {"path": "src/app.py", "content": "print('hello')\n" * lines, "flags": [1, 2, 3]}
        text = json.dumps(body)
        parser = PartialJSONParser()

        def run() -> None:
            for char in text:
                parser.feed(char)
                parser.value()
            assert parser.close() == body

        return run

    assert_linear(prepare, 100)


# -- properties (the fuzz kit's, which `fuzz_fold` runs for hours) -----------------

test_any_chunking_gives_exactly_what_msgspec_gives = (
    props.any_chunking_gives_exactly_what_msgspec_gives
)
test_every_prefix_is_consistent_with_the_final_value = (
    props.every_prefix_is_consistent_with_the_final_value
)
test_best_effort_value_does_not_depend_on_chunking = (
    props.best_effort_value_does_not_depend_on_chunking
)
test_accepts_and_rejects_exactly_what_msgspec_does = (
    props.accepts_and_rejects_exactly_what_msgspec_does
)
