"""AWS event-stream decoder: one test per framing rule, then properties.

Frames in the rule tests are built by hand (`_frame`) rather than with
`encode_message`, so an encoder bug cannot hide a matching decoder bug.
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from chunking import bytewise, split_at
from corpus_support import CORPUS, corpus_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scaling import assert_linear

from streamfn.core.wire._eventstream import (
    EventStreamDecoder,
    EventStreamError,
    EventStreamMessage,
    HeaderValue,
    Int8,
    Int16,
    Int32,
    Int64,
    Timestamp,
    encode_message,
)

#: the recorded Bedrock bodies; one ``no-corpus`` case without the corpus (it fails in
#: CI and skips elsewhere, see corpus_dir)
BEDROCK_BINS = [
    pytest.param(path, id=path.stem) for path in sorted((CORPUS / "bedrock").glob("*.bin"))
] or [pytest.param(None, id="no-corpus")]

# At least 200 examples; more when a bigger profile (HYPOTHESIS_PROFILE=long) is loaded.
EXAMPLES = max(200, settings().max_examples)
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _frame(
    header_block: bytes = b"",
    payload: bytes = b"",
    *,
    total: int | None = None,
    headers_len: int | None = None,
    prelude_crc: int | None = None,
    message_crc: int | None = None,
) -> bytes:
    """A frame assembled from its parts; any field can be forced to a lie."""
    if total is None:
        total = 16 + len(header_block) + len(payload)
    if headers_len is None:
        headers_len = len(header_block)
    head = struct.pack(">II", total, headers_len)
    if prelude_crc is None:
        prelude_crc = zlib.crc32(head)
    body = head + struct.pack(">I", prelude_crc) + header_block + payload
    if message_crc is None:
        message_crc = zlib.crc32(body)
    return body + struct.pack(">I", message_crc)


def _header(name: str, kind: int, value: bytes = b"") -> bytes:
    raw = name.encode()
    return bytes([len(raw)]) + raw + bytes([kind]) + value


def _decode(data: bytes, **caps: int) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder(**caps)
    return decoder.feed(data) + decoder.end()


def _reason(data: bytes, **caps: int) -> str:
    with pytest.raises(EventStreamError) as info:
        _decode(data, **caps)
    return info.value.reason


# --- the prelude ----------------------------------------------------------


def test_prelude_crc_checked_before_lengths_trusted() -> None:
    # A corrupted prelude announcing 4 GiB must fail on its CRC at once, not
    # sit waiting for bytes or complain about the length it cannot trust.
    lying = struct.pack(">II", 0xFFFFFFFF, 0xFFFFFFFF) + b"\0\0\0\0"
    decoder = EventStreamDecoder()
    with pytest.raises(EventStreamError, match="prelude CRC"):
        decoder.feed(lying)
    # Same with a plausible length: still the CRC that is reported.
    good = _frame(b"", b"hello")
    flipped = bytearray(good)
    flipped[3] ^= 0x01
    assert "prelude CRC" in _reason(bytes(flipped))


def test_prelude_checked_as_soon_as_twelve_bytes_arrive() -> None:
    decoder = EventStreamDecoder()
    frame = _frame(b"", b"x" * 100, prelude_crc=0)
    assert decoder.feed(frame[:11]) == []
    with pytest.raises(EventStreamError, match="prelude CRC"):
        decoder.feed(frame[11:12])


def test_message_crc_covers_everything_before_it() -> None:
    frame = bytearray(_frame(_header("a", 7, b"\0\1b"), b"payload"))
    for index in range(12, len(frame) - 4):  # headers and payload
        mutated = bytearray(frame)
        mutated[index] ^= 0x80
        assert "message CRC" in _reason(bytes(mutated))
    assert "message CRC" in _reason(_frame(b"", b"p", message_crc=1234))


def test_minimum_total_length_is_16() -> None:
    assert _decode(_frame()) == [EventStreamMessage(headers={}, payload=b"")]
    for total in (0, 12, 15):
        assert "below the minimum" in _reason(_frame(total=total) + b"\0" * 32)


def test_headers_length_must_fit_in_message() -> None:
    # headers_length > total - 16 leaves no room for the message CRC.
    assert "does not fit" in _reason(_frame(b"", b"ab", headers_len=3))
    ok = _frame(_header("a", 0), b"")  # headers exactly fill total - 16
    assert _decode(ok)[0].headers == {"a": True}


def test_max_message_cap_defaults_to_24_mib() -> None:
    cap = 24 * 1024 * 1024
    decoder = EventStreamDecoder()
    head = struct.pack(">II", cap + 1, 0)
    with pytest.raises(EventStreamError, match="exceeds the cap"):
        decoder.feed(head + struct.pack(">I", zlib.crc32(head)))
    head = struct.pack(">II", cap, 0)
    assert EventStreamDecoder().feed(head + struct.pack(">I", zlib.crc32(head))) == []


def test_max_message_cap_is_an_option_and_inclusive() -> None:
    frame = _frame(b"", b"x" * 84)  # 100 bytes
    assert len(_decode(frame, max_message_bytes=100)) == 1
    assert "exceeds the cap of 99" in _reason(frame, max_message_bytes=99)


def test_max_headers_cap_defaults_to_128_kib() -> None:
    cap = 128 * 1024
    head = struct.pack(">II", cap + 17, cap + 1)
    with pytest.raises(EventStreamError, match=r"headers length .* exceeds the cap"):
        EventStreamDecoder().feed(head + struct.pack(">I", zlib.crc32(head)))
    head = struct.pack(">II", cap + 16, cap)
    assert EventStreamDecoder().feed(head + struct.pack(">I", zlib.crc32(head))) == []


def test_max_headers_cap_is_an_option() -> None:
    frame = _frame(_header("ab", 0))  # 4 header bytes
    assert len(_decode(frame, max_headers_bytes=4)) == 1
    assert "exceeds the cap of 3" in _reason(frame, max_headers_bytes=3)


def test_caps_below_the_minimum_frame_are_refused() -> None:
    with pytest.raises(ValueError):
        EventStreamDecoder(max_message_bytes=15)
    with pytest.raises(ValueError):
        EventStreamDecoder(max_headers_bytes=-1)


# --- headers --------------------------------------------------------------


def test_header_wire_encoding_of_all_ten_types() -> None:
    some_uuid = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
    block = b"".join(
        [
            _header("t", 0),
            _header("f", 1),
            _header("b", 2, b"\xff"),
            _header("s", 3, b"\x80\x00"),
            _header("i", 4, b"\x7f\xff\xff\xff"),
            _header("l", 5, b"\x80" + b"\0" * 7),
            _header("ba", 6, b"\x00\x03\x00\x01\x02"),
            _header("str", 7, b"\x00\x06h\xc3\xa9llo"),
            _header("ts", 8, struct.pack(">q", 1_700_000_000_123)),
            _header("u", 9, some_uuid.bytes),
        ]
    )
    (message,) = _decode(_frame(block, b"{}"))
    assert message.headers == {
        "t": True,
        "f": False,
        "b": -1,
        "s": -32768,
        "i": 2**31 - 1,
        "l": -(2**63),
        "ba": b"\x00\x01\x02",
        "str": "héllo",
        "ts": 1_700_000_000_123,
        "u": some_uuid,
    }
    kinds = {name: type(value) for name, value in message.headers.items()}
    assert kinds == {
        "t": bool,
        "f": bool,
        "b": Int8,
        "s": Int16,
        "i": Int32,
        "l": Int64,
        "ba": bytes,
        "str": str,
        "ts": Timestamp,
        "u": uuid.UUID,
    }
    assert message.payload == b"{}"
    # And the encoder writes exactly those bytes back.
    assert encode_message(message.headers, message.payload) == _frame(block, b"{}")


def test_all_ten_header_types_roundtrip() -> None:
    headers: dict[str, HeaderValue] = {
        "true": True,
        "false": False,
        "byte": Int8(-128),
        "short": Int16(32767),
        "integer": Int32(-(2**31)),
        "long": Int64(2**63 - 1),
        "bytes": b"\x00\xff" * 100,
        "string": "ünïcødé ✓",
        "timestamp": Timestamp(-1),
        "uuid": uuid.uuid4(),
    }
    (message,) = _decode(encode_message(headers, b"body"))
    assert message.headers == headers
    assert [type(v) for v in message.headers.values()] == [type(v) for v in headers.values()]
    assert list(message.headers) == list(headers)  # wire order kept


def test_plain_values_pick_their_wire_type_when_encoding() -> None:
    moment = datetime(2024, 1, 2, 3, 4, 5, 678_999, tzinfo=timezone(timedelta(hours=2)))
    (message,) = _decode(
        encode_message({"small": 5, "big": 2**40, "when": moment, "raw": b"x"}, b"")
    )
    assert type(message.headers["small"]) is Int32
    assert type(message.headers["big"]) is Int64
    when = message.headers["when"]
    assert isinstance(when, Timestamp)
    assert when.to_datetime() == moment.replace(microsecond=678_000)
    assert message.headers["raw"] == b"x"


def test_timestamp_is_milliseconds_since_epoch_utc() -> None:
    assert Timestamp(0).to_datetime() == datetime(1970, 1, 1, tzinfo=UTC)
    assert Timestamp.from_datetime(datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)) == -1
    with pytest.raises(ValueError, match="timezone-aware"):
        Timestamp.from_datetime(datetime(2024, 1, 1))
    # The wire range outlives datetime: decoding must still succeed.
    (message,) = _decode(_frame(_header("ts", 8, struct.pack(">q", 2**63 - 1))))
    assert message.headers["ts"] == 2**63 - 1
    with pytest.raises(OverflowError):
        Timestamp(2**63 - 1).to_datetime()


def test_typed_ints_check_their_range() -> None:
    for kind, bits in ((Int8, 8), (Int16, 16), (Int32, 32), (Int64, 64), (Timestamp, 64)):
        assert kind(-(2 ** (bits - 1))) == -(2 ** (bits - 1))
        with pytest.raises(ValueError):
            kind(2 ** (bits - 1))
        assert repr(kind(3)) == f"{kind.__name__}(3)"


def test_header_name_is_u8_length_and_utf8() -> None:
    name = "é" * 127  # 254 bytes
    (message,) = _decode(encode_message({name: True, "": False}, b""))
    assert message.headers == {name: True, "": False}
    assert "not valid UTF-8" in _reason(_frame(b"\x02\xc3\x28\x00"))
    with pytest.raises(ValueError):
        encode_message({"é" * 128: True}, b"")


def test_string_header_must_be_utf8() -> None:
    assert "not valid UTF-8" in _reason(_frame(_header("s", 7, b"\x00\x01\xff")))


def test_unknown_header_type_rejected() -> None:
    for kind in (10, 11, 0x7F, 0xFF):
        assert f"unknown type {kind}" in _reason(_frame(_header("x", kind, b"\0" * 16)))


def test_duplicate_header_rejected() -> None:
    block = _header(":event-type", 7, b"\x00\x01a") + _header(":event-type", 0)
    assert "duplicate header ':event-type'" in _reason(_frame(block))


def test_headers_consume_exactly_headers_length() -> None:
    one = _header("n", 4, b"\0\0\0\1")
    # The header block ends inside a value: the value may not borrow payload bytes.
    for cut in range(1, len(one)):
        block = one[:cut]
        reason = _reason(_frame(block, b"\0\0\0\1 payload"))
        assert "truncated header block" in reason
    # A length that claims more than headers-length bytes is refused too.
    assert "truncated header block" in _reason(_frame(_header("s", 7, b"\x00\x09abc"), b"defghi"))
    # A header block that ends exactly on a header boundary is fine.
    (message,) = _decode(_frame(one, b"p"))
    assert message.headers == {"n": 1}
    assert message.payload == b"p"


def test_encoder_refuses_what_the_wire_cannot_carry() -> None:
    with pytest.raises(ValueError):
        encode_message({"s": "x" * 65536}, b"")
    with pytest.raises(ValueError):
        encode_message({"b": b"x" * 65536}, b"")
    with pytest.raises(ValueError):
        encode_message({"i": 2**63}, b"")
    with pytest.raises(ValueError):
        encode_message({"d": datetime(2024, 1, 1)}, b"")
    with pytest.raises(TypeError):
        encode_message({"f": 1.5}, b"")  # type: ignore[dict-item]
    assert len(encode_message({"s": "x" * 65535}, b"")) == 16 + 1 + 1 + 1 + 2 + 65535


# --- decoder behaviour ----------------------------------------------------


def test_error_is_sticky() -> None:
    decoder = EventStreamDecoder()
    good = encode_message({"a": "b"}, b"1")
    assert len(decoder.feed(good)) == 1
    with pytest.raises(EventStreamError) as first:
        decoder.feed(_frame(b"", b"x", message_crc=0))
    for attempt in range(3):
        with pytest.raises(EventStreamError) as again:
            if attempt == 0:
                decoder.feed(good)
            elif attempt == 1:
                decoder.end()
            else:
                decoder.feed(b"")
        assert again.value is first.value
        assert again.value.reason == first.value.reason
    assert decoder.buffered == 0  # a failed decoder lets go of its buffer


def test_end_with_partial_frame_is_truncated_error() -> None:
    frame = encode_message({":event-type": "chunk"}, b"payload")
    for cut in range(1, len(frame)):
        decoder = EventStreamDecoder()
        assert decoder.feed(frame[:cut]) == []
        with pytest.raises(EventStreamError, match=r"^truncated"):
            decoder.end()
        with pytest.raises(EventStreamError, match=r"^truncated"):
            decoder.end()


def test_end_on_frame_boundary_is_clean() -> None:
    decoder = EventStreamDecoder()
    assert decoder.end() == []
    decoder = EventStreamDecoder()
    frame = encode_message({}, b"x")
    assert len(decoder.feed(frame)) == 1
    assert decoder.end() == []
    assert decoder.end() == []


def test_feed_after_end_is_a_usage_error() -> None:
    # Misuse, not bad input: the same RuntimeError as SSEDecoder.
    decoder = EventStreamDecoder()
    decoder.end()
    with pytest.raises(RuntimeError, match="after end"):
        decoder.feed(encode_message({}, b""))


def test_messages_before_an_error_are_not_lost() -> None:
    good = [encode_message({"n": i}, b"ok") for i in range(3)]
    bad = _frame(b"", b"x", message_crc=0)
    decoder = EventStreamDecoder()
    out = decoder.feed(b"".join(good) + bad)
    assert [m.headers["n"] for m in out] == [0, 1, 2]
    with pytest.raises(EventStreamError, match="message CRC"):
        decoder.end()
    with pytest.raises(EventStreamError, match="message CRC"):
        decoder.feed(b"")


def test_feed_accepts_any_bytes_like() -> None:
    frame = encode_message({"k": "v"}, b"body")
    for chunk in (frame, bytearray(frame), memoryview(frame)):
        assert _decode_chunks([chunk]) == [EventStreamMessage({"k": "v"}, b"body")]


def test_memory_bounded_to_one_frame() -> None:
    frames = [encode_message({"i": i}, b"x" * (i % 50)) for i in range(300)]
    stream = b"".join(frames)
    decoder = EventStreamDecoder()
    largest = max(len(f) for f in frames)
    seen = 0
    for start in range(0, len(stream), 37):
        seen += len(decoder.feed(stream[start : start + 37]))
        assert decoder.buffered < largest
    assert seen == 300


def test_large_frame_in_small_chunks_is_linear() -> None:
    # A decoder that re-sliced or re-scanned its buffer per chunk would copy
    # the frame once per chunk: quadratic in the frame's size.
    def prepare(size: int) -> Callable[[], object]:
        frame = encode_message({":event-type": "chunk"}, b"z" * size)
        decoder = EventStreamDecoder()

        def run() -> None:
            out: list[EventStreamMessage] = []
            for start in range(0, len(frame), 256):
                out += decoder.feed(frame[start : start + 256])
            assert len(out) == 1
            assert len(out[0].payload) == size

        return run

    assert_linear(prepare, 512 << 10)


def test_repeated_header_blocks_give_independent_dicts() -> None:
    frame = encode_message({":event-type": "chunk", "n": Int8(1)}, b"x")
    first, second = _decode(frame * 2)
    first.headers["mutated"] = True
    assert second.headers == {":event-type": "chunk", "n": 1}
    assert type(second.headers["n"]) is Int8


def test_messages_are_msgspec_structs() -> None:
    message = EventStreamMessage(headers={"a": "b"}, payload=b"x")
    assert message == EventStreamMessage({"a": "b"}, b"x")
    with pytest.raises(AttributeError):
        message.payload = b"y"  # type: ignore[misc]


# --- the real thing -------------------------------------------------------


@pytest.mark.parametrize("path", BEDROCK_BINS)
def test_corpus_decodes_like_botocore_view(path: Path) -> None:
    corpus_dir()
    data = path.read_bytes()
    view_path = CORPUS / "_derived" / "bedrock" / f"{path.stem}.events.jsonl"
    view = [json.loads(line) for line in view_path.read_text().splitlines() if line.strip()]
    messages = _decode(data)
    assert len(messages) == len(view)
    for message, expected in zip(messages, view, strict=True):
        assert message.headers == expected["headers"]
        payload = json.loads(message.payload)
        assert payload == expected["payload"]
        if "payload_bytes_decoded" in expected:
            import base64

            inner = json.loads(base64.b64decode(payload["bytes"]))
            assert inner == expected["payload_bytes_decoded"]
    # Byte-exact: re-encoding the decoded frames gives the recording back.
    assert b"".join(encode_message(m.headers, m.payload) for m in messages) == data
    # And a 1-byte feed agrees with the whole-body feed.
    assert _decode_chunks(bytewise(data)) == messages


@pytest.mark.parametrize("path", BEDROCK_BINS)
def test_corpus_matches_botocore_decoder(path: Path) -> None:
    corpus_dir()
    eventstream = pytest.importorskip("botocore.eventstream")
    data = path.read_bytes()
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(data)
    theirs = [(m.headers, m.payload) for m in buffer]
    assert [(m.headers, m.payload) for m in _decode(data)] == theirs


# --- properties -----------------------------------------------------------


def _decode_chunks(chunks: Sequence[bytes | bytearray | memoryview]) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder()
    out: list[EventStreamMessage] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    return out + decoder.end()


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    """Cut at ``cuts`` taken modulo the length, with no empty piece."""
    return [p for p in split_at(data, sorted({c % (len(data) + 1) for c in cuts})) if p]


header_values: st.SearchStrategy[HeaderValue] = st.one_of(
    st.booleans(),
    st.integers(-(2**7), 2**7 - 1).map(Int8),
    st.integers(-(2**15), 2**15 - 1).map(Int16),
    st.integers(-(2**31), 2**31 - 1).map(Int32),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.binary(max_size=64),
    st.text(max_size=64),
    st.integers(-(2**63), 2**63 - 1).map(Timestamp),
    st.uuids(),
)
header_names = st.text(max_size=24)
header_maps = st.dictionaries(header_names, header_values, max_size=8)
messages = st.builds(EventStreamMessage, header_maps, st.binary(max_size=300))
streams = st.lists(messages, max_size=6)


def _encode_all(items: list[EventStreamMessage]) -> bytes:
    return b"".join(encode_message(m.headers, m.payload) for m in items)


@PROPERTY
@given(messages)
def test_encode_decode_identity(message: EventStreamMessage) -> None:
    (decoded,) = _decode(encode_message(message.headers, message.payload))
    assert decoded == message
    assert [type(v) for v in decoded.headers.values()] == [
        type(v) for v in message.headers.values()
    ]


@PROPERTY
@given(streams, st.lists(st.integers(min_value=0), max_size=40))
def test_any_chunking_gives_identical_messages(
    items: list[EventStreamMessage], cuts: list[int]
) -> None:
    data = _encode_all(items)
    whole = _decode_chunks([data])
    assert whole == items
    assert _decode_chunks(_split(data, cuts)) == whole


@settings(PROPERTY, max_examples=max(20, EXAMPLES // 10))
@given(streams)
def test_one_byte_feeds_give_identical_messages(items: list[EventStreamMessage]) -> None:
    data = _encode_all(items)
    assert _decode_chunks(bytewise(data)) == items


def _outcome(
    data: bytes, cuts: list[int], max_message: int = 24 << 20, max_headers: int = 128 << 10
) -> tuple[list[EventStreamMessage], str | None]:
    """Decode in chunks, checking the invariants every input must keep."""
    decoder = EventStreamDecoder(max_message_bytes=max_message, max_headers_bytes=max_headers)
    out: list[EventStreamMessage] = []
    error: EventStreamError | None = None
    try:
        for chunk in _split(data, cuts):
            out += decoder.feed(chunk)
            assert decoder.buffered < max_message
        out += decoder.end()
    except EventStreamError as exc:  # anything else fails the test
        error = exc
    if error is not None:
        with pytest.raises(EventStreamError) as again:
            decoder.feed(b"\0" * 12)
        assert again.value is error
    for message in out:
        assert 16 + len(message.payload) <= max_message
    reason = None if error is None else error.reason
    # Chunking changes nothing: same messages, then the same error (if any).
    whole = EventStreamDecoder(max_message_bytes=max_message, max_headers_bytes=max_headers)
    whole_out: list[EventStreamMessage] = []
    whole_reason = None
    try:
        whole_out += whole.feed(data)
        whole_out += whole.end()
    except EventStreamError as exc:
        whole_reason = exc.reason
    assert (whole_out, whole_reason) == (out, reason)
    return out, reason


@PROPERTY
@given(
    st.binary(max_size=2048),
    st.lists(st.integers(min_value=0), max_size=20),
    st.integers(16, 4096),
    st.integers(0, 1024),
)
def test_random_bytes_give_messages_or_event_stream_error(
    data: bytes, cuts: list[int], max_message: int, max_headers: int
) -> None:
    _outcome(data, cuts, max_message, max_headers)


def _fix_crcs(data: bytearray) -> None:
    """Recompute the first frame's CRCs so mutations reach the inner checks."""
    if len(data) < 12:
        return
    data[8:12] = struct.pack(">I", zlib.crc32(bytes(data[:8])))
    total = struct.unpack_from(">I", data)[0]
    if 16 <= total <= len(data):
        data[total - 4 : total] = struct.pack(">I", zlib.crc32(bytes(data[: total - 4])))


mutations = st.lists(
    st.one_of(
        st.tuples(st.just("flip"), st.integers(min_value=0), st.integers(0, 7)),
        st.tuples(st.just("truncate"), st.integers(min_value=0), st.just(0)),
        st.tuples(st.just("total"), st.integers(0, 2**32 - 1), st.just(0)),
        st.tuples(st.just("headers_len"), st.integers(0, 2**32 - 1), st.just(0)),
        st.tuples(st.just("byte"), st.integers(min_value=0), st.integers(0, 255)),
        st.tuples(st.just("delete"), st.integers(min_value=0), st.integers(1, 8)),
    ),
    min_size=1,
    max_size=4,
)


@PROPERTY
@given(streams.filter(bool), mutations, st.booleans(), st.lists(st.integers(0), max_size=10))
def test_mutated_frames_give_messages_or_event_stream_error(
    items: list[EventStreamMessage],
    ops: list[tuple[str, int, int]],
    fix_crcs: bool,
    cuts: list[int],
) -> None:
    data = bytearray(_encode_all(items))
    for op, where, arg in ops:
        if not data:
            break
        index = where % len(data)
        if op == "flip":
            data[index] ^= 1 << arg
        elif op == "truncate":
            del data[index:]
        elif op == "total" and len(data) >= 4:
            data[0:4] = struct.pack(">I", where)
        elif op == "headers_len" and len(data) >= 8:
            data[4:8] = struct.pack(">I", where)
        elif op == "byte":
            data[index] = arg
        elif op == "delete":
            del data[index : index + arg]
    if fix_crcs:
        _fix_crcs(data)
    out, _ = _outcome(bytes(data), cuts, max_message=4096, max_headers=1024)
    # Whatever decoded is a prefix of the original frames, or (after a CRC
    # fix-up) one rewritten first frame followed by originals.
    if not fix_crcs:
        assert out == items[: len(out)]


@PROPERTY
@given(st.binary(max_size=300), st.binary(max_size=40))
def test_random_header_blocks_behind_valid_crcs(block: bytes, payload: bytes) -> None:
    # Random bytes almost never pass a CRC; framing them properly sends the
    # fuzzer straight into the header parser.
    out, reason = _outcome(_frame(block, payload), [])
    if reason is None:
        (message,) = out
        assert message.payload == payload
        assert encode_message(message.headers, message.payload) == _frame(block, payload)


@PROPERTY
@given(st.lists(st.tuples(header_names, header_values), max_size=6), st.binary(max_size=40))
def test_random_header_blocks_agree_with_botocore(
    pairs: list[tuple[str, HeaderValue]], payload: bytes
) -> None:
    eventstream = pytest.importorskip("botocore.eventstream")
    # Encode header by header so duplicates reach the wire.
    block = b"".join(encode_message({name: value}, b"")[12:-4] for name, value in pairs)
    frame = _frame(block, payload)
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(frame)
    try:
        theirs = [(m.headers, m.payload) for m in buffer]
    except Exception:
        theirs = None
    out, _ = _outcome(frame, [])
    if theirs is None:
        assert out == []
        return
    assert len(out) == 1
    ours = {
        name: value.bytes if isinstance(value, uuid.UUID) else value
        for name, value in out[0].headers.items()
    }
    assert [(ours, out[0].payload)] == theirs
