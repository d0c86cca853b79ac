"""Long-running fuzz target for the NDJSON decoder (see fuzz/README.md).

Same engines and environment variables as fuzz_sse.py: hypothesis with
``FUZZ_EXAMPLES`` per property (repeated until ``FUZZ_SECONDS``), or atheris
with ``--atheris``. Invariants: any chunking (including byte by byte) gives
the same lines and the same error; without a cap hit the lines are exactly the
non-blank CR/LF/CRLF-separated lines of the input; no line returned and no
buffer held is ever longer than the cap; only `NDJSONError` escapes.
"""

from __future__ import annotations

import re
import sys

if "--atheris" in sys.argv:  # instrument only the decoder, before anything imports it
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    with atheris.instrument_imports():
        from streamfn.core.wire import _lines as lines  # noqa: F401

from streamfn._extras import missing_extra as _missing_extra

try:  # the [fuzz] extra
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ModuleNotFoundError as _missing:
    raise _missing_extra("python -m streamfn.fuzz.fuzz_ndjson", _missing, "fuzz") from None

from streamfn.core.wire import NDJSONDecoder, NDJSONError
from streamfn.fuzz import _harness as harness
from streamfn.fuzz._wire_oracles import ndjson_outcome

__all__ = ["main"]  # a command (`python -m streamfn.fuzz.fuzz_ndjson`), not a library

_PIECES = st.sampled_from([b'{"a":1}', b"\n", b"\r\n", b"\r", b" ", b"\t", b"xyz", b"\xff", b"[]"])


def check(data: bytes, chunks: list[bytes], cap: int) -> None:
    whole = ndjson_outcome([data], cap)
    assert ndjson_outcome(chunks, cap) == whole, (data, chunks, cap)
    assert ndjson_outcome([data[i : i + 1] for i in range(len(data))], cap) == whole, (data, cap)
    lines, error = whole
    if error is None:
        assert lines == [line for line in re.split(rb"\r\n|\r|\n", data) if line.strip()]
    decoder = NDJSONDecoder(max_line_bytes=cap)
    try:
        for chunk in chunks:
            for line in decoder.feed(chunk):
                assert 0 < len(line) <= cap
            assert decoder.buffered <= cap
        for line in decoder.end():
            assert 0 < len(line) <= cap
    except NDJSONError as exc:
        assert "longer than" in exc.reason


MAX_INPUT = 4096  # longer inputs find nothing new and slow every check down


def hypothesis_round(examples: int) -> None:
    budget = settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    sizes = st.lists(st.integers(0, 300), max_size=20)

    @budget
    @given(
        st.lists(_PIECES | st.binary(max_size=8), max_size=60).map(b"".join),
        sizes,
        st.integers(1, 24),
    )
    def structured(data: bytes, cuts: list[int], cap: int) -> None:
        check(data, harness.split_by(data, cuts), cap)

    @budget
    @given(st.binary(max_size=2048), sizes, st.integers(1, 64))
    def raw_bytes(data: bytes, cuts: list[int], cap: int) -> None:
        check(data, harness.split_by(data, cuts), cap)

    structured()
    raw_bytes()


def one_input(raw: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(raw)
    cap = fdp.ConsumeIntInRange(1, 64)
    sizes = [fdp.ConsumeIntInRange(0, 64) for _ in range(fdp.ConsumeIntInRange(0, 16))]
    data = fdp.ConsumeBytes(MAX_INPUT)
    check(data, harness.split_by(data, sizes), cap)


def main() -> None:
    harness.main("fuzz_ndjson", hypothesis_round, one_input)


if __name__ == "__main__":
    main()
