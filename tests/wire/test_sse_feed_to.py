"""`SSEDecoder.feed_to`, the providers' fast path, against `SSEDecoder.feed`.

The fast path hands each event's raw data bytes (and raw event type) to a
sink instead of building `ServerSentEvent` objects. Whatever the bytes and
however they are cut, it must deliver the same events, in the same order,
followed by the same error, as `feed`: the property below holds it to that
on the same SSE-shaped inputs the decoder's own properties use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from chunking import bytewise
from hypothesis import given
from hypothesis import strategies as st
from scaling import assert_linear

from streamfn.core.wire._sse import ServerSentEvent, SSEDecoder, SSEError, decode_data
from streamfn.fuzz._wire_oracles import chunked, erase_types, feed_outcome, sink_outcome, sse_like

_CAPS: dict[str, Any] = {"max_line_bytes": 24, "max_event_bytes": 40}


@given(chunked())
def test_feed_to_delivers_what_feed_returns_under_any_chunking(
    case: tuple[bytes, list[bytes]],
) -> None:
    data, chunks = case
    for caps in (_CAPS, {}):
        expected = feed_outcome([data], **caps)
        assert sink_outcome([data], **caps) == expected
        assert sink_outcome(chunks, **caps) == expected
        assert sink_outcome(bytewise(data), **caps) == expected


# Streams the region path reads: mostly the two plain shapes providers send,
# with now and then something that sends a region down the line parser.
_PLAIN = st.sampled_from([b'{"a":1}', b"x", b"", b"[DONE]", "é🙂".encode(), b"\xff"])
_ODD = st.sampled_from(
    [
        b": keep-alive\n",
        b"id: 7\n",
        b"retry: 30\n",
        b"data:tight\n\n",
        b"data: a\ndata: b\n\n",
        b"event: m\ndata: a\ndata: b\n\n",
        b"id: 1\ndata: a\n\n",
        b"data: crlf\r\n\r\n",
        b"\n",
        b"event: x\n",
        b"data: " + b"L" * 30 + b"\n\n",
    ]
)


@st.composite
def _event(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["plain", "typed", "odd"]))
    if kind == "odd":
        return draw(_ODD)
    data = b"data: " + draw(_PLAIN) + b"\n\n"
    return (
        b"event: " + draw(st.sampled_from([b"delta", b"error"])) + b"\n" + data
        if kind == "typed"
        else data
    )


region_streams = st.lists(_event(), max_size=12).map(b"".join)


def per_event(data: bytes) -> list[bytes]:
    """``data`` cut after every blank line: a live stream's reads, one event each."""
    pieces = data.split(b"\n\n")
    return [p for p in [*(p + b"\n\n" for p in pieces[:-1]), pieces[-1]] if p]


@pytest.mark.parametrize("bound", [False, True])
@pytest.mark.parametrize("runs", ["plain", "any"])
@given(case=chunked(region_streams | sse_like))
def test_runs_deliver_what_feed_returns_under_any_chunking(
    runs: str, bound: bool, case: tuple[bytes, list[bytes]]
) -> None:
    data, chunks = case
    for caps in (_CAPS, {}):
        delivered, error = feed_outcome([data], **caps)
        expected = (erase_types(delivered) if runs == "any" else delivered), error
        assert sink_outcome([data], runs, bound, **caps) == expected
        assert sink_outcome(chunks, runs, bound, **caps) == expected
        assert sink_outcome(bytewise(data), runs, bound, **caps) == expected
        assert sink_outcome(per_event(data), runs, bound, **caps) == expected


@pytest.mark.parametrize(
    "stream",
    [
        b"event: a\ndata: 1\n\nid: 1\ndata: 2\n\n",  # a later event without its type line
        b"event: a\ndata: 1\nid: 5\nevent: b\ndata: 2\n\n",  # one event of five lines
        b"event: a\ndata: 1\n\nevent: b\nretry: 5\n\n",  # a type line, then no data
        b"event: a\ndata: 1\ndata: 2\n\nevent: b\ndata: 3\n\n",  # two data lines
        b"data: 1\n\ndata: 2\r\n\n",  # a CR inside a region
        b"data: 1\r\n\r\ndata: 2\n\n",
        b"data: 1\n\ndata:2\n\ndata: 3\n\n",  # data without its space
        b"data: 1\n\n\ndata: 2\n\n",  # a second blank line
        b"\xef\xbb\xbfdata: 1\n\ndata: 2\n\n",  # a BOM first
        # a type line that begins like the last one, then the last one with two data lines
        b"event: a\ndata: 1\n\nevent: ab\ndata: 2\n\nevent: a\ndata: 3\ndata: 4\n\n",
        b"event: a\ndata: 1\n\nevent: a\nevent: b\ndata: 2\n\n",  # two type lines
    ],
)
@pytest.mark.parametrize("runs", ["plain", "any"])
def test_streams_near_the_plain_shapes_read_as_the_line_parser_reads_them(
    stream: bytes, runs: str
) -> None:
    delivered, error = feed_outcome([stream])
    expected = (erase_types(delivered) if runs == "any" else delivered), error
    for cut in range(len(stream) + 1):
        assert sink_outcome([stream[:cut], stream[cut:]], runs) == expected
    assert sink_outcome(bytewise(stream), runs) == expected
    assert sink_outcome(per_event(stream), runs, bound=True) == expected


def test_a_plain_region_goes_to_runs_in_one_call_and_the_rest_to_the_sink() -> None:
    calls: list[object] = []
    decoder = SSEDecoder()
    decoder.feed_to(
        b"data: 1\n\ndata: 2\n\nevent: e\ndata: 3\n\ndata: 4",
        lambda d, t: calls.append((d, t)),
        calls.append,
    )
    assert calls == [(b"1", b""), (b"2", b""), (b"3", b"e")]  # a typed event: the line parser
    decoder.feed_to(b"\n\ndata: 5\n\ndata: 6\n\n", lambda d, t: calls.append((d, t)), calls.append)
    assert calls[3:] == [[b"4", b"5", b"6"]]
    assert decoder.buffered == 0


def test_after_a_long_event_the_line_parser_hands_back_to_regions() -> None:
    calls: list[object] = []
    decoder = SSEDecoder()
    decoder.feed_to(b"data: " + b"x" * (20 << 10), lambda d, t: calls.append(len(d)), calls.append)
    assert calls == [] and decoder.buffered == 6 + (20 << 10)
    decoder.feed_to(b"\n\ndata: a\n\ndata: b\n\n", lambda d, t: calls.append(len(d)), calls.append)
    assert calls == [20 << 10, [b"a", b"b"]]


def test_bytes_held_for_a_region_count_as_buffered_and_end_flushes_them() -> None:
    decoder = SSEDecoder()
    decoder.feed_to(b"event: e\ndata: last", lambda d, t: None, lambda ds: None, any_type=True)
    assert decoder.buffered == len(b"event: e\ndata: last")
    [event] = decoder.end()
    assert isinstance(event, ServerSentEvent) and (event.data, event.event) == ("last", "e")


@pytest.mark.parametrize("any_type", [False, True])
def test_a_huge_event_among_plain_ones_is_read_in_linear_time(any_type: bool) -> None:
    # A region's unfinished tail is copied with each chunk; a huge event must
    # go to the line parser (whose buffer grows) or the copying goes quadratic.
    # The plain events after it must come back to regions and still arrive.
    def prepare(size: int) -> Callable[[], object]:
        plain = b"event: e\ndata: p\n\n" if any_type else b"data: p\n\n"
        stream = plain * 3 + b"data: " + b"x" * size + b"\n\n" + plain * 3
        chunks = [stream[i : i + 256] for i in range(0, len(stream), 256)]

        def run() -> None:
            delivered, error = sink_outcome(
                chunks, "any" if any_type else "plain", max_line_bytes=8 << 20
            )
            assert error is None
            assert [len(d) for d, _ in delivered] == [1, 1, 1, size, 1, 1, 1]

        return run

    assert_linear(prepare, 512 << 10)


def test_one_line_data_reaches_the_sink_as_bytes_with_the_raw_event_type() -> None:
    got: list[tuple[bytes, bytes]] = []
    decoder = SSEDecoder()
    decoder.feed_to(
        b'data: {"a":1}\n\nevent: delta\ndata: x\n\ndata: a\ndata: b\n\n',
        lambda d, t: got.append((bytes(d), t)),
    )
    assert got == [(b'{"a":1}', b""), (b"x", b"delta"), (b"a\nb", b"")]


def test_a_sink_that_says_stop_ends_the_chunk() -> None:
    got: list[bytes] = []
    decoder = SSEDecoder()

    def sink(data: bytes, event_type: bytes) -> bool:
        got.append(data)
        return data == b"2"

    decoder.feed_to(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", sink)
    assert got == [b"1", b"2"]


def test_events_before_a_fault_are_delivered_and_the_next_call_raises() -> None:
    got: list[bytes] = []
    decoder = SSEDecoder(max_line_bytes=16)
    decoder.feed_to(b"data: ok\n\ndata: " + b"x" * 40, lambda d, t: got.append(d))
    assert got == [b"ok"]
    with pytest.raises(SSEError, match="longer than 16 bytes"):
        decoder.feed_to(b"\n\n", lambda d, t: got.append(d))


def test_a_fault_with_nothing_delivered_raises_at_once() -> None:
    decoder = SSEDecoder(max_event_bytes=4)
    with pytest.raises(SSEError, match="larger than 4 bytes"):
        decoder.feed_to(b"data: 12345\n\n", lambda d, t: None)


class _Text(msgspec.Struct):
    t: str


@pytest.mark.parametrize(
    "raw",
    [b'{"t":"caf\xc3\xa9"}', b'{"t":"a\xffb"}', b'{"t":"a\xed\xa0\x80"}', b'{"t":1', b'{"t":"\xff'],
)
def test_decode_data_gives_what_decoding_the_text_gives(raw: bytes) -> None:
    decode = msgspec.json.Decoder(_Text).decode
    text = raw.decode("utf-8", "replace")
    try:
        expected: object = decode(text)
    except Exception as exc:
        expected = (type(exc), str(exc))
    try:
        got: object = decode_data(decode, raw)
    except Exception as exc:
        got = (type(exc), str(exc))
    assert got == expected


def test_calls_with_and_without_runs_and_feed_may_alternate() -> None:
    # the tail a call with runs holds comes first in any next call, and a call
    # that leaves an event half-read keeps the next one with runs off regions
    got: list[object] = []

    def sink(data: bytes, kind: bytes) -> None:
        got.append(data)

    decoder = SSEDecoder()
    decoder.feed_to(b"data: a\n\ndata: b", sink, got.extend)
    decoder.feed_to(b"\n\n", sink)
    assert got == [b"a", b"b"]

    got.clear()
    decoder = SSEDecoder()
    decoder.feed_to(b"data: a\n", sink)
    decoder.feed_to(b"data: b\n\n", sink, got.extend)
    assert got == [b"a\nb"]

    got.clear()
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    decoder.feed_to(b"data: b\n\n", sink, got.extend)
    assert got == [b"a\nb"]
