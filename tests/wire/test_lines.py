"""The shared line splitter under SSE and NDJSON: terminators, chunk seams, the cap."""

from __future__ import annotations

import re

import pytest
from chunking import split_at
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core.wire._lines import LineSplitter, LineTooLong


def split_all(
    chunks: list[bytes], max_line_bytes: int = 1 << 20
) -> tuple[list[bytes], bytes | None]:
    splitter = LineSplitter(max_line_bytes)
    lines: list[bytes] = []
    for chunk in chunks:
        lines += splitter.feed(chunk)
    return lines, splitter.end()


def test_crlf_lf_and_lone_cr_all_end_a_line() -> None:
    assert split_all([b"a\r\nb\nc\rd\r\re"]) == ([b"a", b"b", b"c", b"d", b""], b"e")


def test_cr_at_chunk_end_then_lf_at_next_chunk_start_is_one_terminator() -> None:
    assert split_all([b"a\r", b"\nb\n"]) == ([b"a", b"b"], None)
    assert split_all([b"a\r", b"\n"]) == ([b"a"], None)


def test_empty_chunk_does_not_forget_a_pending_cr() -> None:
    assert split_all([b"a\r", b"", b"\nb\n"]) == ([b"a", b"b"], None)


def test_lf_after_pending_cr_is_swallowed_only_once() -> None:
    assert split_all([b"a\r", b"\n\n"]) == ([b"a", b""], None)


def test_partial_line_is_joined_across_chunks() -> None:
    assert split_all([b"ab", b"c", b"d\nef"]) == ([b"abcd"], b"ef")


def test_line_at_cap_passes_and_one_byte_more_fails() -> None:
    assert split_all([b"x" * 8 + b"\n"], max_line_bytes=8) == ([b"x" * 8], None)
    with pytest.raises(LineTooLong):
        split_all([b"x" * 9 + b"\n"], max_line_bytes=8)


def test_unterminated_line_fails_as_soon_as_it_passes_the_cap() -> None:
    splitter = LineSplitter(8)
    splitter.feed(b"x" * 8)
    assert splitter.buffered == 8
    with pytest.raises(LineTooLong):
        splitter.feed(b"x")
    assert splitter.buffered == 0


def test_too_long_error_carries_the_complete_lines_before_it() -> None:
    splitter = LineSplitter(4)
    with pytest.raises(LineTooLong) as exc:
        splitter.feed(b"ab\ncd\r\ntoo long\nlater\n")
    assert exc.value.lines == [b"ab", b"cd"]
    assert exc.value.limit == 4


def test_cap_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LineSplitter(0)


_stream = st.lists(
    st.sampled_from([b"\r", b"\n", b"\r\n", b"a", b"bc", b"\xff", b" "]), max_size=40
).map(b"".join)


@given(_stream, st.lists(st.integers(0, 200), max_size=10))
def test_any_chunking_splits_like_a_whole_stream_regex(data: bytes, cuts: list[int]) -> None:
    chunks = split_at(data, sorted(min(c, len(data)) for c in cuts))
    *complete, rest = re.split(rb"\r\n|\r|\n", data)
    assert split_all(chunks) == (complete, rest or None)


@given(_stream, st.integers(1, 8), st.integers(1, 6))
def test_buffer_never_exceeds_cap(data: bytes, cap: int, size: int) -> None:
    splitter = LineSplitter(cap)
    try:
        for i in range(0, len(data), size):
            for line in splitter.feed(data[i : i + size]):
                assert len(line) <= cap
            assert splitter.buffered <= cap
    except LineTooLong:
        assert any(len(line) > cap for line in re.split(rb"\r\n|\r|\n", data))
