"""NDJSON framing (Ollama): terminators, blank lines, the last line, the cap."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from chunking import bytewise, split_at
from corpus_support import body, corpus_entries, require_corpus
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core.wire._ndjson import NDJSONDecoder, NDJSONError
from streamfn.fuzz._wire_oracles import ndjson_outcome


def test_lf_crlf_and_cr_all_end_a_line() -> None:
    assert ndjson_outcome([b'{"a":1}\n{"b":2}\r\n{"c":3}\r{"d":4}\n']) == (
        [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"d":4}'],
        None,
    )


def test_blank_and_whitespace_lines_are_skipped() -> None:
    assert ndjson_outcome([b"\n\r\n  \n{}\n\t\n{}\n\n"]) == ([b"{}", b"{}"], None)


def test_last_line_without_newline_is_returned_by_end() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\n{"done":true}') == [b'{"a":1}']
    assert decoder.end() == [b'{"done":true}']
    assert decoder.end() == []


def test_line_over_cap_is_an_error_and_sticky() -> None:
    decoder = NDJSONDecoder(max_line_bytes=8)
    assert decoder.feed(b"12345678\n") == [b"12345678"]
    with pytest.raises(NDJSONError, match="longer than 8 bytes") as first:
        decoder.feed(b"123456789\n")
    with pytest.raises(NDJSONError) as again:
        decoder.feed(b"{}\n")
    assert again.value is first.value
    with pytest.raises(NDJSONError) as again:
        decoder.end()
    assert again.value is first.value


def test_lines_before_an_overlong_line_in_the_same_chunk_are_returned() -> None:
    decoder = NDJSONDecoder(max_line_bytes=4)
    assert decoder.feed(b"{}\n[]\n" + b"x" * 10) == [b"{}", b"[]"]
    with pytest.raises(NDJSONError):
        decoder.end()


def test_feed_after_end_is_a_usage_error() -> None:
    decoder = NDJSONDecoder()
    decoder.end()
    with pytest.raises(RuntimeError):
        decoder.feed(b"{}\n")


_ndjson = st.lists(
    st.sampled_from([b'{"a":1}', b"\n", b"\r\n", b"\r", b" ", b"xyz", b"\xff", b"[]"]), max_size=40
).map(b"".join)


@given(_ndjson, st.lists(st.integers(0, 300), max_size=10), st.integers(1, 12))
def test_any_chunking_gives_the_same_lines_and_error(
    data: bytes, cuts: list[int], cap: int
) -> None:
    chunks = split_at(data, sorted(min(c, len(data)) for c in cuts))
    whole = ndjson_outcome([data], cap)
    assert ndjson_outcome(chunks, cap) == whole
    assert ndjson_outcome(bytewise(data), cap) == whole
    if whole[1] is None:
        expected = [line for line in re.split(rb"\r\n|\r|\n", data) if line.strip()]
        assert whole[0] == expected


@given(st.binary(max_size=300), st.integers(1, 40))
def test_arbitrary_bytes_yield_lines_or_ndjson_error_within_cap(data: bytes, size: int) -> None:
    decoder = NDJSONDecoder(max_line_bytes=16)
    try:
        for i in range(0, len(data), size):
            for line in decoder.feed(data[i : i + size]):
                assert 0 < len(line) <= 16
            assert decoder.buffered <= 16
        decoder.end()
    except NDJSONError as exc:
        assert "longer than" in exc.reason


@pytest.mark.parametrize("entry", corpus_entries("ollama"))
def test_corpus_ollama_streams_are_one_json_object_per_line(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    raw = body(entry)
    lines, error = ndjson_outcome([raw])
    assert error is None
    assert ndjson_outcome(bytewise(raw)) == (lines, None)
    objects = [json.loads(line) for line in lines]
    assert objects and objects[-1].get("done") is True
