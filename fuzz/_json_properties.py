"""The partial-JSON parser's properties, shared by the test suite and `fuzz_fold`.

`PartialJSONParser` must accept exactly what ``msgspec.json.decode`` accepts
and give the same value, whatever the chunking, and every value it shows for
a prefix must be consistent with the final one. msgspec is the oracle (a
parser we did not write). The test suite runs these properties with a few
dozen examples; ``python -m streamfn.fuzz.fuzz_fold`` runs them for hours,
from the installed kit.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core.json._partial_json import PartialJSONError, PartialJSONParser

from ._bytes import split_at

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
def text_chunkings(draw: st.DrawFn, text: str) -> list[str]:
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


# -- the properties --------------------------------------------------------------


@given(st.data())
def any_chunking_gives_exactly_what_msgspec_gives(data: st.DataObject) -> None:
    text = data.draw(json_texts())
    chunks = data.draw(text_chunkings(text))
    assert parse_in(chunks).close() == msgspec.json.decode(text)


@given(st.data())
def every_prefix_is_consistent_with_the_final_value(data: st.DataObject) -> None:
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
def best_effort_value_does_not_depend_on_chunking(data: st.DataObject) -> None:
    text = data.draw(json_texts(json_objects))
    parser = PartialJSONParser()
    fed = 0
    for chunk in data.draw(text_chunkings(text)):
        parser.feed(chunk)
        fed += len(chunk)
        assert parser.value() == best_effort(text[:fed])


@given(st.data())
def accepts_and_rejects_exactly_what_msgspec_does(data: st.DataObject) -> None:
    text = data.draw(damaged_json() | st.text(_JSONISH, max_size=30))
    chunks = data.draw(text_chunkings(text))
    assert parser_outcome(chunks) == msgspec_outcome(text)
