"""The SSE decoder against WHATWG HTML §9.2.6 "Interpreting an event stream".

One test per rule of the spec, named after it; then properties (chunking
invariance, an independent str-domain oracle written from the spec text,
robustness on arbitrary bytes, bounded buffers, encode/decode round trip);
then the real recordings of the shared corpus. The oracle and the strategies
live in the fuzz kit (`streamfn.fuzz._wire_oracles`), which the long-running
target `fuzz_sse` shares.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from chunking import bytewise
from corpus_support import body, corpus_entries, require_corpus
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core.wire._sse import ServerSentEvent, SSEComment, SSEDecoder, SSEError, encode_sse
from streamfn.fuzz._wire_oracles import Item, chunked, spec_oracle, sse_outcome


def decode(data: bytes, **options: Any) -> list[Item]:
    decoder = SSEDecoder(**options)
    return decoder.feed(data) + decoder.end()


def decode_chunks(chunks: list[bytes], **options: Any) -> list[Item]:
    decoder = SSEDecoder(**options)
    out: list[Item] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    return out + decoder.end()


def datas(items: list[Item]) -> list[str]:
    return [item.data for item in items if isinstance(item, ServerSentEvent)]


# -- §9.2.6: the byte stream ------------------------------------------------------


def test_one_leading_bom_is_stripped() -> None:
    assert decode(b"\xef\xbb\xbfdata: x\n\n") == [ServerSentEvent("x")]


def test_leading_bom_split_across_first_chunks_is_stripped() -> None:
    chunks = [b"\xef", b"", b"\xbb", b"\xbf", b"data: x\n\n"]
    assert decode_chunks(chunks) == [ServerSentEvent("x")]
    assert decode_chunks([b"\xef\xbb", b"\xbfdata: x\n", b"\n"]) == [ServerSentEvent("x")]


def test_only_one_bom_is_stripped() -> None:
    # The second BOM is part of the first field name, so the field is unknown.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n") == [ServerSentEvent("y")]


def test_bom_after_stream_start_is_text() -> None:
    assert decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [ServerSentEvent("a")]
    assert decode(b"data: \xef\xbb\xbfa\n\n") == [ServerSentEvent("\ufeffa")]


def test_bom_prefix_that_is_not_a_bom_is_kept_as_text() -> None:
    # Were the two bytes dropped, "data: x" would dispatch.
    assert decode_chunks([b"\xef\xbb", b"data: x\n\n"]) == []
    assert decode_chunks([b"\xef\xbb"]) == []


# -- lines ------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\r\n", b"\n", b"\r"], ids=["CRLF", "LF", "CR"])
def test_lines_end_at_crlf_lf_or_lone_cr(eol: bytes) -> None:
    stream = b"event: e" + eol + b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert decode(stream) == [ServerSentEvent("a\nb", "e"), ServerSentEvent("c")]
    assert decode_chunks(bytewise(stream)) == decode(stream)


def test_cr_at_chunk_end_and_lf_at_next_chunk_start_are_one_line_end() -> None:
    # Read as two line ends, the LF would be a blank line and dispatch "a" alone.
    assert decode_chunks([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [ServerSentEvent("a\nb")]


def test_pending_cr_survives_an_empty_chunk() -> None:
    assert decode_chunks([b"data: a\r", b"", b"\ndata: b\n\n"]) == [ServerSentEvent("a\nb")]


def test_cr_then_cr_is_two_line_ends() -> None:
    assert decode_chunks([b"data: a\r", b"\rdata: b\n\n"]) == [
        ServerSentEvent("a"),
        ServerSentEvent("b"),
    ]


# -- fields -----------------------------------------------------------------------


def test_colon_lines_are_comments() -> None:
    stream = b": keep-alive\ndata: a\n:\n: more\n\n"
    assert decode(stream) == [ServerSentEvent("a")]
    assert decode(stream, emit_comments=True) == [
        SSEComment("keep-alive"),
        SSEComment(""),
        SSEComment("more"),
        ServerSentEvent("a"),
    ]


def test_comment_alone_does_not_dispatch() -> None:
    assert decode(b": OPENROUTER PROCESSING\n\n", emit_comments=True) == [
        SSEComment("OPENROUTER PROCESSING")
    ]


def test_field_and_value_split_at_first_colon() -> None:
    assert decode(b"data: a: b:c\n\n") == [ServerSentEvent("a: b:c")]
    assert decode(b"event:x:y\ndata\n\n") == [ServerSentEvent("", "x:y")]


def test_only_one_leading_space_is_removed_from_value() -> None:
    assert decode(b"data:  two\n\n") == [ServerSentEvent(" two")]
    assert decode(b"data:none\n\n") == [ServerSentEvent("none")]
    assert decode(b"data:\tx \n\n") == [ServerSentEvent("\tx ")]
    assert decode(b"event:  e\ndata\n\n") == [ServerSentEvent("", " e")]


def test_line_without_colon_is_field_with_empty_value() -> None:
    assert decode(b"data\n\n") == [ServerSentEvent("")]
    assert decode(b"data\ndata\n\n") == [ServerSentEvent("\n")]
    assert decode(b"event: e\nevent\ndata: x\n\n") == [ServerSentEvent("x", "message")]


def test_unknown_fields_are_ignored() -> None:
    stream = b"foo: bar\nData: no\ndata : no\n data: no\ndata: yes\nevent2: no\n\n"
    assert decode(stream) == [ServerSentEvent("yes")]


def test_data_appends_value_and_lf_and_one_trailing_lf_is_stripped() -> None:
    assert decode(b"data: a\ndata: b\n\n") == [ServerSentEvent("a\nb")]
    assert decode(b"data: a\ndata:\n\n") == [ServerSentEvent("a\n")]
    assert decode(b"data:\ndata:\ndata:\n\n") == [ServerSentEvent("\n\n")]


def test_event_sets_type_and_type_defaults_to_message() -> None:
    stream = b"event: first\nevent: delta\ndata: a\n\ndata: b\n\n"
    assert decode(stream) == [ServerSentEvent("a", "delta"), ServerSentEvent("b", "message")]


def test_id_sets_last_event_id_which_persists_across_events() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\n\ndata: c\n\nid\ndata: d\n\n"
    assert [(e.data, e.id) for e in decode(stream) if isinstance(e, ServerSentEvent)] == [
        ("a", "1"),
        ("b", "1"),
        ("c", "2"),  # an id on a no-data block still sets the buffer
        ("d", ""),  # an empty id resets it
    ]
    decoder = SSEDecoder()
    decoder.feed(b"id: 7\n")
    assert decoder.last_event_id == "7"


def test_id_containing_nul_is_ignored() -> None:
    stream = b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n"
    assert [e.id for e in decode(stream) if isinstance(e, ServerSentEvent)] == ["1", "1"]


def test_retry_is_set_only_when_all_ascii_digits() -> None:
    for bad in (b"10a", b"-1", b" 5", b"1.5", b"", "١٢".encode(), b"+3"):
        decoder = SSEDecoder()
        assert decoder.feed(b"retry: " + bad + b"\ndata: x\n\n") == [ServerSentEvent("x")]
        assert decoder.retry is None
    assert decode(b"retry: 0042\ndata: x\n\n") == [ServerSentEvent("x", retry=42)]


def test_retry_is_reported_on_the_next_dispatched_event_only() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"retry: 3000\n\ndata: a\n\ndata: b\n\n")
    assert [e.retry for e in events if isinstance(e, ServerSentEvent)] == [3000, None]
    assert decoder.retry == 3000  # the reconnection time itself persists


def test_retry_with_absurd_number_of_digits_is_ignored() -> None:
    # Documented deviation: > 18 significant digits would be > 31 years in ms.
    decoder = SSEDecoder()
    decoder.feed(b"retry: " + b"9" * 5000 + b"\ndata: x\n\n")
    assert decoder.retry is None
    assert decode(b"retry: " + b"0" * 100 + b"7\ndata: x\n\n") == [ServerSentEvent("x", retry=7)]


# -- dispatch -----------------------------------------------------------------------


def test_blank_line_with_empty_data_buffer_does_not_dispatch() -> None:
    assert decode(b"event: e\n\n\n\nid: 1\n\n") == []


def test_blank_line_always_clears_data_and_event_type() -> None:
    stream = b"event: e\n\ndata: a\n\nevent: f\ndata: b\n\ndata: c\n\n"
    assert decode(stream) == [
        ServerSentEvent("a"),
        ServerSentEvent("b", "f"),
        ServerSentEvent("c"),
    ]


def test_event_pending_at_end_of_stream_is_dispatched_by_end() -> None:
    # Documented leniency: the spec would drop it; real servers end this way.
    decoder = SSEDecoder()
    assert decoder.feed(b"event: message_stop\ndata: {}\n") == []
    assert decoder.end() == [ServerSentEvent("{}", "message_stop")]


def test_unterminated_last_line_is_processed_by_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: [DO") == [ServerSentEvent("a")]
    assert decoder.end() == [ServerSentEvent("[DO")]


def test_end_with_nothing_pending_returns_nothing_and_is_idempotent() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n") == [ServerSentEvent("a")]
    assert decoder.end() == []
    assert decoder.end() == []
    with pytest.raises(RuntimeError):
        decoder.feed(b"data: b\n\n")


def test_invalid_utf8_becomes_replacement_character() -> None:
    events = decode(b"event: \xffe\nid: \xc3\ndata: a\xe2\x82b\xf0\x9f\x99\n\n")
    assert events == [ServerSentEvent("a\ufffdb\ufffd", "\ufffde", "\ufffd")]


def test_multibyte_character_split_across_chunks_is_intact() -> None:
    stream = "data: café 東京 🙂\n\n".encode()
    assert decode_chunks(bytewise(stream)) == [ServerSentEvent("café 東京 🙂")]


# -- bounds -----------------------------------------------------------------------


def test_line_longer_than_cap_is_an_error() -> None:
    decoder = SSEDecoder(max_line_bytes=16)
    assert decoder.feed(b"data: 0123456789\n\n") == [ServerSentEvent("0123456789")]  # 16: ok
    with pytest.raises(SSEError, match="longer than 16 bytes"):
        decoder.feed(b"data: 0123456789A\n\n")


def test_unterminated_line_past_cap_fails_before_its_end_arrives() -> None:
    decoder = SSEDecoder(max_line_bytes=100)
    decoder.feed(b"data: " + b"x" * 90)
    with pytest.raises(SSEError, match="longer than"):
        decoder.feed(b"x" * 20)


def test_event_data_larger_than_cap_is_an_error() -> None:
    ok = b"data: 01234\ndata: 0123\n\n"  # data "01234\n0123" is exactly 10 bytes
    assert decode(ok, max_event_bytes=10) == [ServerSentEvent("01234\n0123")]
    with pytest.raises(SSEError, match="larger than 10 bytes"):
        decode(b"data: 01234\ndata: 01234\n\n", max_event_bytes=10)


def test_errors_are_sticky() -> None:
    decoder = SSEDecoder(max_line_bytes=8)
    with pytest.raises(SSEError) as first:
        decoder.feed(b"data: too long\n")
    with pytest.raises(SSEError) as again:
        decoder.feed(b"data: a\n\n")
    assert again.value is first.value
    with pytest.raises(SSEError) as again:
        decoder.end()
    assert again.value is first.value
    assert decoder.buffered == 0


def test_events_before_a_fault_in_the_same_chunk_are_returned_first() -> None:
    decoder = SSEDecoder(max_line_bytes=16)
    assert decoder.feed(b"data: a\n\ndata: b\n\n" + b"x" * 40) == [
        ServerSentEvent("a"),
        ServerSentEvent("b"),
    ]
    with pytest.raises(SSEError, match="longer than"):
        decoder.end()


def test_huge_line_in_small_chunks_is_linear() -> None:
    # 8 MiB in 1,500-byte chunks: quadratic buffering would take minutes.
    decoder = SSEDecoder(max_line_bytes=16 << 20)
    piece = b"x" * 1500
    decoder.feed(b"data: ")
    for _ in range((8 << 20) // 1500):
        assert decoder.feed(piece) == []
    (event,) = decoder.feed(b"\n\n")
    assert isinstance(event, ServerSentEvent)
    assert len(event.data) == (8 << 20) // 1500 * 1500


# -- properties ---------------------------------------------------------------------

_CAPS: dict[str, Any] = {"max_line_bytes": 24, "max_event_bytes": 40, "emit_comments": True}


@given(chunked())
def test_any_chunking_gives_the_same_events_and_error(case: tuple[bytes, list[bytes]]) -> None:
    data, chunks = case
    whole = sse_outcome([data], **_CAPS)
    assert sse_outcome(chunks, **_CAPS) == whole
    assert sse_outcome(bytewise(data), **_CAPS) == whole


@given(chunked())
def test_decoder_agrees_with_a_literal_transcription_of_the_spec(
    case: tuple[bytes, list[bytes]],
) -> None:
    data, chunks = case
    assert decode_chunks(chunks, emit_comments=True) == spec_oracle(data)


@given(st.binary(max_size=400), st.integers(1, 64))
def test_arbitrary_bytes_yield_events_or_sse_error_only(data: bytes, size: int) -> None:
    decoder = SSEDecoder(max_line_bytes=32, max_event_bytes=64, emit_comments=True)
    try:
        for i in range(0, len(data), size):
            for item in decoder.feed(data[i : i + size]):
                assert isinstance(item, ServerSentEvent | SSEComment)
        decoder.end()
    except SSEError as exc:
        assert "longer than" in exc.reason or "larger than" in exc.reason


@given(chunked())
def test_buffers_never_exceed_the_caps(case: tuple[bytes, list[bytes]]) -> None:
    _, chunks = case
    decoder = SSEDecoder(max_line_bytes=16, max_event_bytes=24)
    for chunk in chunks:
        try:
            items = decoder.feed(chunk)
        except SSEError:
            break
        assert decoder.buffered <= 16 + 24
        for item in items:
            assert isinstance(item, SSEComment) or len(item.data) <= 24


_field_text = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"))


@given(
    st.lists(
        st.tuples(
            st.text(st.characters(codec="utf-8")),
            st.none() | _field_text,
            st.none() | _field_text.filter(lambda s: "\x00" not in s),
            st.none() | st.integers(0, 10**18 - 1),
            st.none() | st.text(st.characters(codec="utf-8")),
        ),
        max_size=5,
    )
)
def test_decode_of_encode_is_identity(
    frames: list[tuple[str, str | None, str | None, int | None, str | None]],
) -> None:
    stream = b"".join(
        encode_sse(data, event=event, id=id_, retry=retry, comment=comment)
        for data, event, id_, retry, comment in frames
    )
    expected: list[Item] = []
    last_id = None
    for data, event, id_, retry, comment in frames:
        if comment is not None:
            lines = re.split("\r\n|\r|\n", comment)
            expected += [SSEComment(line) for line in lines]
        last_id = id_ if id_ is not None else last_id
        normalized = data.replace("\r\n", "\n").replace("\r", "\n")  # SSE has no CR in data
        expected.append(ServerSentEvent(normalized, event or "message", last_id, retry))
    assert decode(stream, emit_comments=True) == expected
    assert decode_chunks(bytewise(stream), emit_comments=True) == expected


def test_encode_refuses_values_that_would_change_framing() -> None:
    for kwargs in ({"event": "a\nb"}, {"id": "a\rb"}, {"id": "a\x00"}, {"retry": -1}):
        with pytest.raises(ValueError):
            encode_sse("x", **kwargs)


# -- the shared corpus of real recordings ---------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [p for p in corpus_entries() if p.values[0] is None or p.values[0]["file"].endswith(".sse")],
)
def test_corpus_streams_decode_identically_whole_and_bytewise(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    raw = body(entry)
    events = decode(raw, emit_comments=True)
    assert decode_chunks(bytewise(raw), emit_comments=True) == events
    payloads = datas(events)
    assert payloads, "every recording carries events"
    for data in payloads:
        if data != "[DONE]":
            json.loads(data)  # every provider in the corpus sends JSON in data
