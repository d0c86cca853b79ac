"""`SSEDecoder.feed_to`, the providers' fast path, against `SSEDecoder.feed`.

The fast path hands each event's raw data bytes (and raw event type) to a
sink instead of building `ServerSentEvent` objects. Whatever the bytes and
however they are cut, it must deliver the same events, in the same order,
followed by the same error, as `feed`: the property below holds it to that
on the same SSE-shaped inputs the decoder's own properties use.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from chunking import bytewise
from hypothesis import given
from test_sse import chunked, outcome

from streamfn.core.wire.sse import ServerSentEvent, SSEDecoder, SSEError, decode_data

Delivered = tuple[str, str]


def sink_outcome(chunks: list[bytes], **options: Any) -> tuple[list[Delivered], str | None]:
    """What `feed_to` delivers (then `end`, as a provider call does), as (data, type) text."""
    options.pop("emit_comments", None)
    decoder = SSEDecoder(**options)
    out: list[Delivered] = []

    def sink(data: bytes, event_type: bytes) -> bool:
        assert type(data) in (bytes, bytearray) and type(event_type) is bytes
        kind = event_type.decode("utf-8", "replace") if event_type else "message"
        out.append((data.decode("utf-8", "replace"), kind))
        return False

    try:
        for chunk in chunks:
            decoder.feed_to(chunk, sink)
        for event in decoder.end():
            if isinstance(event, ServerSentEvent):
                out.append((event.data, event.event))
    except SSEError as exc:
        return out, exc.reason
    return out, None


def feed_outcome(chunks: list[bytes], **options: Any) -> tuple[list[Delivered], str | None]:
    items, error = outcome(chunks, **options)
    return [(i.data, i.event) for i in items if isinstance(i, ServerSentEvent)], error


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
