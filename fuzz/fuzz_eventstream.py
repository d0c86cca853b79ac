"""Long-running fuzz target for the AWS event-stream decoder.

The decoder reads untrusted bytes off the network, so the invariants the unit
tests sample a few hundred times are hammered here for as long as you like:

* only `EventStreamMessage` lists or `EventStreamError` come out, never
  another exception, never a hang;
* the buffer never reaches the message cap;
* any chunking gives the same messages followed by the same error;
* a failed decoder stays failed with the very same error;
* valid frames round-trip byte for byte through `encode_message`;
* where botocore is installed, frames with valid CRCs are accepted or
  rejected exactly as botocore's decoder does, with the same values (except
  header values running past the header block, which botocore returns short
  and we reject).

Hypothesis mode (default; needs only the test dependencies)::

    python fuzz/fuzz_eventstream.py                       # FUZZ_EXAMPLES=100000 per target
    FUZZ_EXAMPLES=5000 python fuzz/fuzz_eventstream.py    # a quick run

For an hour, repeat fresh rounds until the time is up::

    FUZZ_SECONDS=3600 FUZZ_EXAMPLES=20000 python fuzz/fuzz_eventstream.py

Coverage-guided mode with atheris (``pip install atheris``; optional, the
hypothesis mode works without it). libFuzzer flags pass through; the first
directory receives new inputs, later ones only seed (recorded Bedrock
streams, from a corpus of recordings if you have one, are good seeds)::

    mkdir -p /tmp/eventstream-corpus
    python fuzz/fuzz_eventstream.py --atheris -max_total_time=3600 \\
        /tmp/eventstream-corpus path/to/corpus/bedrock

A failure prints the falsifying example (hypothesis) or writes a
``crash-*`` file (atheris) to replay with
``python fuzz/fuzz_eventstream.py --atheris crash-...``.
"""

from __future__ import annotations

import struct
import sys
import uuid
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from streamfn._extras import missing_extra as _missing_extra

try:  # the [fuzz] extra
    from hypothesis import given
    from hypothesis import strategies as st
except ModuleNotFoundError as _missing:
    raise _missing_extra("python -m streamfn.fuzz.fuzz_eventstream", _missing, "fuzz") from None

from streamfn.fuzz import _harness as harness

try:
    import atheris  # type: ignore[import-untyped]
except ImportError:  # atheris is optional
    atheris = None

if atheris is not None and "--atheris" in sys.argv:
    with atheris.instrument_imports():
        from streamfn.core.wire import _eventstream as es
else:
    from streamfn.core.wire import _eventstream as es

try:
    from botocore import eventstream as boto_es
except ImportError:  # the differential check is skipped without botocore
    boto_es = None

__all__ = ["main"]  # a command (`python -m streamfn.fuzz.fuzz_eventstream`), not a library


# --- invariants, shared by both engines ------------------------------------


def _frame(block: bytes, payload: bytes) -> bytes:
    """A frame with correct lengths and CRCs around arbitrary header bytes."""
    head = struct.pack(">II", 16 + len(block) + len(payload), len(block))
    body = head + struct.pack(">I", zlib.crc32(head)) + block + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _run(
    data: bytes, chunk_sizes: Sequence[int], max_message: int, max_headers: int
) -> tuple[list[es.EventStreamMessage], str | None]:
    decoder = es.EventStreamDecoder(max_message_bytes=max_message, max_headers_bytes=max_headers)
    out: list[es.EventStreamMessage] = []
    error: es.EventStreamError | None = None
    pos = 0
    sizes = list(chunk_sizes) or [len(data) or 1]
    try:
        i = 0
        while pos < len(data):
            size = max(1, sizes[i % len(sizes)])
            out += decoder.feed(data[pos : pos + size])
            pos += size
            i += 1
            if decoder.buffered >= max_message:
                raise AssertionError(f"buffer {decoder.buffered} reached cap {max_message}")
        out += decoder.end()
    except es.EventStreamError as exc:
        error = exc
    if error is not None:
        for use_end in (False, True):
            try:
                decoder.end() if use_end else decoder.feed(b"\0")
            except es.EventStreamError as again:
                if again is not error:
                    raise AssertionError("decoder error is not sticky") from None
            else:
                raise AssertionError("failed decoder accepted more input")
    for message in out:
        if 16 + len(message.payload) > max_message:
            raise AssertionError("message larger than the cap")
    return out, None if error is None else error.reason


def check(
    data: bytes,
    chunk_sizes: Sequence[int] = (),
    max_message: int = es.DEFAULT_MAX_MESSAGE_BYTES,
    max_headers: int = es.DEFAULT_MAX_HEADERS_BYTES,
) -> tuple[list[es.EventStreamMessage], str | None]:
    whole = _run(data, (), max_message, max_headers)
    chunked = _run(data, chunk_sizes, max_message, max_headers)
    if whole != chunked:
        raise AssertionError(f"chunking changed the result: {whole!r} != {chunked!r}")
    messages, reason = whole
    if reason is None:
        again = b"".join(es.encode_message(m.headers, m.payload) for m in messages)
        if again != data:
            raise AssertionError("decoded frames do not re-encode to the input")
    return whole


def check_against_botocore(frame: bytes) -> None:
    if boto_es is None:
        return
    buffer = boto_es.EventStreamBuffer()
    buffer.add_data(frame)
    theirs: list[tuple[Any, bytes]] | None
    try:
        theirs = [(m.headers, m.payload) for m in buffer]
    except Exception:  # botocore raises assorted types; any of them means "rejected"
        theirs = None
    messages, reason = check(frame)
    if theirs is None:
        if reason is None:
            raise AssertionError("botocore rejected a frame we accepted")
        return
    if reason is not None:
        # Known botocore leniency: it slices string, byte-array and UUID values
        # without a bounds check, so a value running past the header block
        # comes back short instead of being rejected. We reject it.
        if reason.startswith("truncated header block"):
            return
        raise AssertionError(f"we rejected a frame botocore accepted: {reason}")
    ours = [
        (
            {k: v.bytes if isinstance(v, uuid.UUID) else v for k, v in m.headers.items()},
            m.payload,
        )
        for m in messages
    ]
    if ours != theirs:
        raise AssertionError(f"values differ from botocore: {ours!r} != {theirs!r}")


# --- hypothesis engine -------------------------------------------------------

header_values = st.one_of(
    st.booleans(),
    st.integers(-(2**7), 2**7 - 1).map(es.Int8),
    st.integers(-(2**15), 2**15 - 1).map(es.Int16),
    st.integers(-(2**31), 2**31 - 1).map(es.Int32),
    st.integers(-(2**63), 2**63 - 1).map(es.Int64),
    st.binary(max_size=300),
    st.text(max_size=100),
    st.integers(-(2**63), 2**63 - 1).map(es.Timestamp),
    st.uuids(),
)
header_pairs = st.lists(st.tuples(st.text(max_size=30), header_values), max_size=10)
chunkings = st.lists(st.integers(1, 300), max_size=12)


def _header_block(pairs: list[tuple[str, Any]]) -> bytes:
    # Header by header, so duplicate names reach the wire.
    return b"".join(es.encode_message({name: value}, b"")[12:-4] for name, value in pairs)


@given(st.binary(max_size=4096), chunkings, st.integers(16, 1 << 16), st.integers(0, 1 << 12))
def fuzz_random_bytes(data: bytes, chunks: list[int], max_message: int, max_headers: int) -> None:
    check(data, chunks, max_message, max_headers)


@given(st.lists(st.tuples(header_pairs, st.binary(max_size=2000)), max_size=8), chunkings)
def fuzz_valid_streams(
    frames: list[tuple[list[tuple[str, Any]], bytes]], chunks: list[int]
) -> None:
    data = b"".join(_frame(_header_block(pairs), payload) for pairs, payload in frames)
    messages, _ = check(data, chunks)
    if len(messages) != len(frames) and all(
        len({n for n, _ in pairs}) == len(pairs) for pairs, _ in frames
    ):
        raise AssertionError("a valid stream lost frames")


@given(
    st.lists(st.tuples(header_pairs, st.binary(max_size=500)), min_size=1, max_size=4),
    st.lists(
        st.tuples(
            st.sampled_from(["flip", "set", "cut", "drop", "u32"]), st.integers(0), st.integers(0)
        ),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
    chunkings,
    st.integers(16, 4096),
    st.integers(0, 1024),
)
def fuzz_mutated_streams(
    frames: list[tuple[list[tuple[str, Any]], bytes]],
    ops: list[tuple[str, int, int]],
    fix_crcs: bool,
    chunks: list[int],
    max_message: int,
    max_headers: int,
) -> None:
    data = bytearray(b"".join(_frame(_header_block(p), payload) for p, payload in frames))
    for op, where, arg in ops:
        if not data:
            break
        i = where % len(data)
        if op == "flip":
            data[i] ^= 1 << (arg % 8)
        elif op == "set":
            data[i] = arg % 256
        elif op == "cut":
            del data[i:]
        elif op == "drop":
            del data[i : i + 1 + arg % 8]
        elif op == "u32":
            data[i : i + 4] = struct.pack(">I", arg % 2**32)
    if fix_crcs and len(data) >= 12:
        data[8:12] = struct.pack(">I", zlib.crc32(bytes(data[:8])))
        total = struct.unpack_from(">I", data)[0]
        if 16 <= total <= len(data):
            data[total - 4 : total] = struct.pack(">I", zlib.crc32(bytes(data[: total - 4])))
    check(bytes(data), chunks, max_message, max_headers)


@given(st.one_of(st.binary(max_size=600), header_pairs.map(_header_block)), st.binary(max_size=64))
def fuzz_header_blocks_vs_botocore(block: bytes, payload: bytes) -> None:
    check_against_botocore(_frame(block, payload))


TARGETS: list[Callable[[], None]] = [
    fuzz_random_bytes,
    fuzz_valid_streams,
    fuzz_mutated_streams,
    fuzz_header_blocks_vs_botocore,
]


def run_hypothesis() -> None:
    if boto_es is None:
        print("botocore not installed: the differential target only checks invariants")

    def one_round(examples: int) -> None:
        for target in TARGETS:
            harness.run_given(target, examples, database=None, derandomize=False)

    harness.run_rounds("fuzz_eventstream", one_round)


# --- atheris engine ------------------------------------------------------------


def atheris_one_input(data: bytes) -> None:
    """Top bit of the first byte clear: the input is a raw stream (so recorded
    ``.bin`` files, which start with 0x00, seed this mode). Set: the rest is
    split into a header block and a payload behind valid CRCs, which drives
    the fuzzer into the header parser and the differential check."""
    if not data:
        check(data)
        return
    chunks = [1 + b % 97 for b in zlib.crc32(data).to_bytes(4, "big")]
    if data[0] & 0x80 == 0:
        check(data, chunks)
        check(data, chunks, max_message=16 + (data[0] << 4), max_headers=data[0] << 2)
        return
    split = 1 + (data[1] if len(data) > 1 else 0)
    check_against_botocore(_frame(data[2 : 2 + split], data[2 + split :]))


def run_atheris(argv: list[str]) -> None:
    if atheris is None:
        sys.exit("atheris is not installed: pip install atheris (or run without --atheris)")
    atheris.Setup(argv, atheris_one_input)
    atheris.Fuzz()


def main() -> None:
    if "--atheris" in sys.argv:
        run_atheris([arg for arg in sys.argv if arg != "--atheris"])
    else:
        run_hypothesis()


if __name__ == "__main__":
    main()
