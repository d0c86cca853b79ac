"""PartialJSONParser: best-effort values of prefixes, exact final values, errors like msgspec."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from chunking import split_at
from hypothesis import given
from hypothesis import strategies as st
from scaling import assert_linear

from streamfn.core.partial_json import PartialJSONError, PartialJSONParser

# -- strategies (also used by fuzz/fuzz_fold.py) ------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=16,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


@st.composite
def json_texts(draw: st.DrawFn, values: st.SearchStrategy[Any] = json_values) -> str:
    """A JSON document as a model or a library might format it (escaped or raw UTF-8)."""
    value = draw(values)
    indent = draw(st.sampled_from([None, 0, 2]))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" , ", " : ")]))
    text = json.dumps(value, ensure_ascii=draw(st.booleans()), indent=indent, separators=separators)
    return draw(st.sampled_from(["", " ", "\n"])) + text + draw(st.sampled_from(["", " \n"]))


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at arbitrary points (possibly inside escapes and surrogate pairs)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    return split_at(text, cuts)


def parse_in(chunks: list[str]) -> PartialJSONParser:
    parser = PartialJSONParser()
    for chunk in chunks:
        parser.feed(chunk)
    return parser


def best_effort(text: str) -> Any:
    parser = PartialJSONParser()
    parser.feed(text)
    return copy.deepcopy(parser.value())


def prefix_consistent(partial: Any, final: Any) -> bool:
    """``partial`` could have come from a prefix of ``final``'s text.

    Members before the last shown one are complete, so equal to the final
    ones; the last may still be growing; strings only grow at their end;
    numbers and literals appear only when complete.
    """
    if isinstance(partial, dict):
        if not isinstance(final, dict):
            return False
        keys = list(partial)
        if keys != list(final)[: len(keys)]:
            return False
        if any(partial[k] != final[k] for k in keys[:-1]):
            return False
        return not keys or prefix_consistent(partial[keys[-1]], final[keys[-1]])
    if isinstance(partial, list):
        if not isinstance(final, list) or len(partial) > len(final):
            return False
        if not partial:
            return True
        last = len(partial) - 1
        return partial[:last] == final[:last] and prefix_consistent(partial[last], final[last])
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return bool(type(partial) is type(final) and partial == final)


def msgspec_outcome(text: str) -> tuple[bool, Any]:
    try:
        return True, msgspec.json.decode(text)
    except msgspec.DecodeError:
        return False, None


def parser_outcome(chunks: list[str]) -> tuple[bool, Any]:
    try:
        return True, parse_in(chunks).close()
    except PartialJSONError:
        return False, None


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


# -- properties -----------------------------------------------------------------


@given(st.data())
def test_any_chunking_gives_exactly_what_msgspec_gives(data: st.DataObject) -> None:
    text = data.draw(json_texts())
    chunks = data.draw(chunkings(text))
    assert parse_in(chunks).close() == msgspec.json.decode(text)


@given(st.data())
def test_every_prefix_is_consistent_with_the_final_value(data: st.DataObject) -> None:
    text = data.draw(json_texts(json_objects))
    final = msgspec.json.decode(text)
    parser = PartialJSONParser()
    previous: Any = None
    for fed, char in enumerate(text, 1):
        parser.feed(char)
        shown = copy.deepcopy(parser.value())
        assert parser.error is None
        if shown is None:  # only before the document begins
            assert not text[:fed].strip()
            continue
        assert prefix_consistent(shown, final), (shown, final)
        if previous is not None:  # what was shown is never taken back
            assert prefix_consistent(previous, shown), (previous, shown)
        previous = shown
    assert parser.value() == final


@given(st.data())
def test_best_effort_value_does_not_depend_on_chunking(data: st.DataObject) -> None:
    text = data.draw(json_texts(json_objects))
    parser = PartialJSONParser()
    fed = 0
    for chunk in data.draw(chunkings(text)):
        parser.feed(chunk)
        fed += len(chunk)
        assert parser.value() == best_effort(text[:fed])


_JSONISH = list('{}[]":,-+.0123456789eE \t\ntruefalsn\\u/abcdAB\x01é')


@st.composite
def damaged_json(draw: st.DrawFn) -> str:
    """Valid JSON with a few characters inserted, deleted or replaced."""
    text = draw(json_texts())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(st.sampled_from(_JSONISH))
        if edit == "insert":
            text = text[:at] + char + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + char + text[at + 1 :]
    return text


@given(st.data())
def test_accepts_and_rejects_exactly_what_msgspec_does(data: st.DataObject) -> None:
    text = data.draw(damaged_json() | st.text(_JSONISH, max_size=30))
    chunks = data.draw(chunkings(text))
    assert parser_outcome(chunks) == msgspec_outcome(text)
