"""AWS event-stream (``application/vnd.amazon.eventstream``) framing, byte-fed.

Bedrock streams its answers as binary frames::

    total length  u32 BE  ┐
    headers length u32 BE ├ prelude, 12 bytes
    prelude CRC32  u32 BE ┘ (over the first 8 bytes)
    headers        headers-length bytes
    payload        total - headers-length - 16 bytes
    message CRC32  u32 BE (over everything before it)

The lengths come off the wire, so nothing is trusted until the prelude CRC
matches: a corrupted length must not make us wait for (or allocate) gigabytes.
Once trusted, they are checked against the caps (``max_message_bytes``,
``max_headers_bytes``) before a single byte of the body is buffered, so memory
held is O(one frame) and never O(stream).

Like h11 and the SSE decoder, `EventStreamDecoder` raises exactly one
exception type, `EventStreamError`, and stays failed: a stream whose framing
broke once cannot be resynchronised (there is no marker to scan for), so every
later call raises the same error. Frames completed before the bad one are
never lost: a feed that decodes some and then hits an error returns them and
the next call (``feed`` or ``end``) raises, so every chunking of the same
bytes yields the same messages followed by the same error.

Header values keep their wire type, so ``encode_message(m.headers, m.payload)``
reproduces a decoded frame byte for byte. The integer types come back as
`Int8` / `Int16` / `Int32` / `Int64` and timestamps as `Timestamp`, all of
them `int` subclasses: they compare, hash and serialise like plain ints, and
the encoder reads the width from the class. A timestamp stays an integer
count of milliseconds (``Timestamp.to_datetime()`` converts) because the wire
range (±2**63 ms) is far wider than `datetime`'s and decoding must not fail on
a value the stream is allowed to carry.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import ClassVar, Final, NoReturn, Self, TypeAlias

import msgspec

from .._errors import EventStreamError

__all__ = [
    "EventStreamDecoder",
    "EventStreamError",
    "EventStreamMessage",
    "HeaderValue",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Timestamp",
    "encode_message",
]

PRELUDE_BYTES: Final = 12
#: prelude + trailing message CRC: the smallest possible frame
MIN_MESSAGE_BYTES: Final = PRELUDE_BYTES + 4
DEFAULT_MAX_MESSAGE_BYTES: Final = 24 << 20
DEFAULT_MAX_HEADERS_BYTES: Final = 128 << 10

_U32x3: Final = struct.Struct(">III")
_U32: Final = struct.Struct(">I")
_U16: Final = struct.Struct(">H")
_I8: Final = struct.Struct(">b")
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

# Header-block cache bounds: small blocks only, a few distinct ones.
_CACHED_BLOCK_BYTES: Final = 512
_CACHED_BLOCKS: Final = 64

# Wire type tags.
_TRUE: Final = 0
_FALSE: Final = 1
_BYTE: Final = 2
_SHORT: Final = 3
_INTEGER: Final = 4
_LONG: Final = 5
_BYTES: Final = 6
_STRING: Final = 7
_TIMESTAMP: Final = 8
_UUID: Final = 9


class _TypedInt(int):
    """An int that remembers which wire width it travels in."""

    __slots__ = ()
    _bits: ClassVar[int] = 64

    def __new__(cls, value: int = 0) -> Self:
        self = super().__new__(cls, value)
        bound = 1 << (cls._bits - 1)
        if not -bound <= self < bound:
            raise ValueError(f"{cls.__name__} out of range: {int(self)}")
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"


class Int8(_TypedInt):
    """Header type 2 ("byte")."""

    __slots__ = ()
    _bits = 8


class Int16(_TypedInt):
    """Header type 3 ("short")."""

    __slots__ = ()
    _bits = 16


class Int32(_TypedInt):
    """Header type 4 ("integer"); a plain `int` that fits is also sent this way."""

    __slots__ = ()
    _bits = 32


class Int64(_TypedInt):
    """Header type 5 ("long"); a plain `int` too wide for 32 bits is sent this way."""

    __slots__ = ()
    _bits = 64


class Timestamp(_TypedInt):
    """Header type 8: milliseconds since the Unix epoch, UTC.

    Kept as an integer because the wire allows values `datetime` cannot hold.
    """

    __slots__ = ()
    _bits = 64

    @classmethod
    def from_datetime(cls, value: datetime) -> Timestamp:
        """Whole milliseconds (floored); naive datetimes are rejected as ambiguous."""
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("timestamp header needs a timezone-aware datetime")
        delta = value - _EPOCH
        return cls(delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000)

    def to_datetime(self) -> datetime:
        """The instant as an aware UTC datetime; OverflowError outside years 1-9999."""
        return _EPOCH + timedelta(milliseconds=int(self))


#: What a header value decodes to (and what `encode_message` accepts): bool,
#: `Int8`/`Int16`/`Int32`/`Int64` (plain int is accepted when encoding),
#: bytes, str, `Timestamp` (an aware datetime is accepted when encoding), UUID.
HeaderValue: TypeAlias = bool | int | bytes | str | datetime | uuid.UUID


class EventStreamMessage(msgspec.Struct, frozen=True, gc=False):
    """One frame: headers in wire order (names are unique) and the raw payload."""

    headers: dict[str, HeaderValue]
    payload: bytes


class EventStreamDecoder:
    """Incremental decoder: feed any chunks, get the frames they complete.

    ``max_message_bytes`` caps a frame's total length and ``max_headers_bytes``
    its header block; a frame announcing more is an error as soon as its
    prelude arrives. Between calls at most one incomplete frame is buffered.
    """

    __slots__ = (
        "_buf",
        "_ended",
        "_error",
        "_frame_len",
        "_header_cache",
        "_max_headers",
        "_max_message",
    )

    def __init__(
        self,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_headers_bytes: int = DEFAULT_MAX_HEADERS_BYTES,
    ) -> None:
        if max_message_bytes < MIN_MESSAGE_BYTES:
            raise ValueError(f"max_message_bytes must be at least {MIN_MESSAGE_BYTES}")
        if max_headers_bytes < 0:
            raise ValueError("max_headers_bytes must not be negative")
        self._max_message = max_message_bytes
        self._max_headers = max_headers_bytes
        self._buf = bytearray()
        # Total length of the frame at the head of the buffer once its prelude
        # has been validated, so a frame arriving in many chunks is checked once.
        self._frame_len = 0
        self._error: EventStreamError | None = None
        self._ended = False
        # Parsed header blocks by their raw bytes; values are immutable.
        self._header_cache: dict[bytes, dict[str, HeaderValue]] = {}

    @property
    def buffered(self) -> int:
        """Bytes held for the incomplete frame (always below ``max_message_bytes``)."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[EventStreamMessage]:
        if self._error is not None:
            raise self._error.with_traceback(None)
        if self._ended:
            raise RuntimeError("EventStreamDecoder.feed() after end()")
        if not data:
            return []
        buf = self._buf
        # With nothing buffered (the usual case: chunks end on frame
        # boundaries) parse the caller's chunk in place and keep only its tail.
        if buf:
            buf += data
            source: bytes | bytearray | memoryview = buf
        else:
            source = data
        out: list[EventStreamMessage] = []
        pos = 0
        size = len(source)
        try:
            while True:
                total = self._frame_len
                if not total:
                    if size - pos < PRELUDE_BYTES:
                        break
                    total = self._check_prelude(source, pos)
                    self._frame_len = total
                if size - pos < total:
                    break
                # One copy per frame; parsing from an immutable bytes object
                # means no view pins the bytearray while it is compacted below.
                with memoryview(source) as view:
                    frame = bytes(view[pos : pos + total])
                out.append(_parse_frame(frame, self._header_cache))
                pos += total
                self._frame_len = 0
        except EventStreamError as exc:
            self._error = exc
            self._buf = bytearray()
            if out:
                return out  # the error waits for the next call
            raise
        if source is buf:
            if pos:
                # Deleting a prefix of a bytearray only moves its start pointer
                # in CPython, so compacting after every feed stays linear.
                del buf[:pos]
        elif pos < size:
            with memoryview(source) as view:
                buf += view[pos:]
        return out

    def end(self) -> list[EventStreamMessage]:
        """Declare end of stream; a partly received frame is an error."""
        if self._error is not None:
            raise self._error.with_traceback(None)
        if self._ended:
            return []
        self._ended = True
        if self._buf:
            have = len(self._buf)
            if self._frame_len:
                self._fail(f"truncated message at end of stream: {have} of {self._frame_len} bytes")
            self._fail(f"truncated prelude at end of stream: {have} of 12 bytes")
        return []

    def _fail(self, reason: str) -> NoReturn:
        self._error = EventStreamError(reason)
        self._buf = bytearray()
        raise self._error

    def _check_prelude(self, source: bytes | bytearray | memoryview, pos: int) -> int:
        total, headers_len, crc = _U32x3.unpack_from(source, pos)
        # The CRC first: until it matches, the lengths are noise.
        with memoryview(source) as view:
            actual = zlib.crc32(view[pos : pos + 8])
        if actual != crc:
            raise EventStreamError(
                f"prelude CRC mismatch: frame says {crc:#010x}, computed {actual:#010x}"
            )
        if total < MIN_MESSAGE_BYTES:
            raise EventStreamError(f"total length {total} below the minimum of {MIN_MESSAGE_BYTES}")
        if total > self._max_message:
            raise EventStreamError(
                f"message length {total} exceeds the cap of {self._max_message} bytes", limit=True
            )
        if headers_len > self._max_headers:
            raise EventStreamError(
                f"headers length {headers_len} exceeds the cap of {self._max_headers} bytes",
                limit=True,
            )
        if headers_len > total - MIN_MESSAGE_BYTES:
            raise EventStreamError(
                f"headers length {headers_len} does not fit in a message of {total} bytes"
            )
        return int(total)


def _parse_frame(frame: bytes, cache: dict[bytes, dict[str, HeaderValue]]) -> EventStreamMessage:
    """Check the message CRC and split a complete, prelude-checked frame."""
    total = len(frame)
    (crc,) = _U32.unpack_from(frame, total - 4)
    actual = zlib.crc32(memoryview(frame)[: total - 4])
    if actual != crc:
        raise EventStreamError(
            f"message CRC mismatch: frame says {crc:#010x}, computed {actual:#010x}"
        )
    (headers_len,) = _U32.unpack_from(frame, 4)
    headers_end = PRELUDE_BYTES + headers_len
    if not headers_len:
        headers: dict[str, HeaderValue] = {}
    elif headers_len <= _CACHED_BLOCK_BYTES:
        # A stream repeats a handful of header blocks (Bedrock: one per event
        # type), so parsing each distinct block once halves the decode time.
        block = frame[PRELUDE_BYTES:headers_end]
        cached = cache.get(block)
        if cached is None:
            cached = _parse_headers(frame, PRELUDE_BYTES, headers_end)
            if len(cache) >= _CACHED_BLOCKS:
                cache.clear()
            cache[block] = cached
        headers = dict(cached)  # a copy: callers may mutate theirs
    else:
        headers = _parse_headers(frame, PRELUDE_BYTES, headers_end)
    return EventStreamMessage(headers=headers, payload=frame[headers_end : total - 4])


def _need(end: int, limit: int, what: str) -> None:
    if end > limit:
        raise EventStreamError(f"truncated header block: {what} runs past its end")


def _parse_headers(frame: bytes, pos: int, end: int) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    while pos < end:
        name_len = frame[pos]
        pos += 1
        _need(pos + name_len + 1, end, "header name")
        try:
            name = frame[pos : pos + name_len].decode("utf-8")
        except UnicodeDecodeError:
            raise EventStreamError("header name is not valid UTF-8") from None
        pos += name_len
        if name in headers:
            raise EventStreamError(f"duplicate header {name!r}")
        kind = frame[pos]
        pos += 1
        value: HeaderValue
        if kind in (_STRING, _BYTES):
            _need(pos + 2, end, f"length of header {name!r}")
            (length,) = _U16.unpack_from(frame, pos)
            pos += 2
            _need(pos + length, end, f"value of header {name!r}")
            raw = frame[pos : pos + length]
            pos += length
            if kind == _BYTES:
                value = raw
            else:
                try:
                    value = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise EventStreamError(f"string header {name!r} is not valid UTF-8") from None
        elif kind == _TRUE:
            value = True
        elif kind == _FALSE:
            value = False
        elif kind == _BYTE:
            _need(pos + 1, end, f"value of header {name!r}")
            value = Int8(_I8.unpack_from(frame, pos)[0])
            pos += 1
        elif kind == _SHORT:
            _need(pos + 2, end, f"value of header {name!r}")
            value = Int16(_I16.unpack_from(frame, pos)[0])
            pos += 2
        elif kind == _INTEGER:
            _need(pos + 4, end, f"value of header {name!r}")
            value = Int32(_I32.unpack_from(frame, pos)[0])
            pos += 4
        elif kind in (_LONG, _TIMESTAMP):
            _need(pos + 8, end, f"value of header {name!r}")
            number = _I64.unpack_from(frame, pos)[0]
            value = Int64(number) if kind == _LONG else Timestamp(number)
            pos += 8
        elif kind == _UUID:
            _need(pos + 16, end, f"value of header {name!r}")
            value = uuid.UUID(bytes=frame[pos : pos + 16])
            pos += 16
        else:
            raise EventStreamError(f"unknown type {kind} for header {name!r}")
        headers[name] = value
    return headers


def _encode_header(name: str, value: object) -> bytes:
    raw_name = name.encode("utf-8")
    if len(raw_name) > 255:
        raise ValueError(f"header name longer than 255 UTF-8 bytes: {len(raw_name)}")
    head = bytes((len(raw_name),)) + raw_name
    # Order matters: bool and the typed ints are ints too.
    if isinstance(value, bool):
        return head + bytes((_TRUE if value else _FALSE,))
    if isinstance(value, Int8):
        return head + bytes((_BYTE,)) + _I8.pack(value)
    if isinstance(value, Int16):
        return head + bytes((_SHORT,)) + _I16.pack(value)
    if isinstance(value, Int32):
        return head + bytes((_INTEGER,)) + _I32.pack(value)
    if isinstance(value, Int64):
        return head + bytes((_LONG,)) + _I64.pack(value)
    if isinstance(value, Timestamp):
        return head + bytes((_TIMESTAMP,)) + _I64.pack(value)
    if isinstance(value, int):
        if -(1 << 31) <= value < 1 << 31:
            return head + bytes((_INTEGER,)) + _I32.pack(value)
        if -(1 << 63) <= value < 1 << 63:
            return head + bytes((_LONG,)) + _I64.pack(value)
        raise ValueError(f"integer header {name!r} does not fit in 64 bits")
    if isinstance(value, datetime):
        return head + bytes((_TIMESTAMP,)) + _I64.pack(Timestamp.from_datetime(value))
    if isinstance(value, str):
        raw = value.encode("utf-8")
        kind = _STRING
    elif isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        kind = _BYTES
    elif isinstance(value, uuid.UUID):
        return head + bytes((_UUID,)) + value.bytes
    else:
        raise TypeError(f"header {name!r}: unsupported value type {type(value).__name__}")
    if len(raw) > 0xFFFF:
        raise ValueError(f"header {name!r}: value longer than 65535 bytes")
    return head + bytes((kind,)) + _U16.pack(len(raw)) + raw


def encode_message(headers: Mapping[str, HeaderValue], payload: bytes) -> bytes:
    """One complete frame, CRCs included.

    Raises ValueError or TypeError on values the wire cannot carry (this is the
    sending side: bad input is a programming error, not a protocol error).
    """
    block = b"".join([_encode_header(name, value) for name, value in headers.items()])
    total = MIN_MESSAGE_BYTES + len(block) + len(payload)
    if total > 0xFFFFFFFF:
        raise ValueError("message longer than 4 GiB cannot be framed")
    head = struct.pack(">II", total, len(block))
    prelude = head + _U32.pack(zlib.crc32(head))
    body = prelude + block + bytes(payload)
    return body + _U32.pack(zlib.crc32(body))
