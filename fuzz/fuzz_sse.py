"""Long-running fuzz target for the SSE decoder (see fuzz/README.md).

Two engines, the same checks as the test suite's SSE properties (the oracles
are the kit's, `streamfn.fuzz._wire_oracles`) but with a budget of hours
instead of seconds:

- hypothesis (default): ``FUZZ_EXAMPLES`` examples per property (default
  100,000), repeated with fresh seeds until ``FUZZ_SECONDS`` have passed
  (default: one round). Failures are shrunk and saved in ``.hypothesis/``.
- atheris (``--atheris``, coverage-guided, libFuzzer flags after it): the
  input is split into a stream and a chunking; the decoder must agree with
  itself fed whole, fed in those chunks and fed byte by byte, and with the
  literal spec transcription when no cap is hit. Only `SSEError` may escape.
"""

from __future__ import annotations

import sys
from typing import Any

if "--atheris" in sys.argv:  # instrument only the decoder, before anything imports it
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    with atheris.instrument_imports():
        from streamfn.core.wire import _lines as lines  # noqa: F401

from streamfn._extras import missing_extra as _missing_extra

try:  # the [fuzz] extra
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ModuleNotFoundError as _missing:
    raise _missing_extra("python -m streamfn.fuzz.fuzz_sse", _missing, "fuzz") from None

from streamfn.core.wire import ServerSentEvent, SSEComment, SSEDecoder, SSEError
from streamfn.fuzz import _harness as harness
from streamfn.fuzz._bytes import bytewise
from streamfn.fuzz._wire_oracles import (
    chunked,
    erase_types,
    feed_outcome,
    sink_outcome,
    spec_oracle,
    sse_outcome,
)

__all__ = ["main"]  # a command (`python -m streamfn.fuzz.fuzz_sse`), not a library

CAPS: dict[str, Any] = {"max_line_bytes": 24, "max_event_bytes": 40, "emit_comments": True}
BIG_CAPS: dict[str, Any] = {"emit_comments": True}


def check(data: bytes, chunks: list[bytes]) -> None:
    """Every invariant one input can be held to."""
    for caps in (CAPS, BIG_CAPS):
        whole = sse_outcome([data], **caps)
        assert sse_outcome(chunks, **caps) == whole, (data, chunks, caps)
        assert sse_outcome(bytewise(data), **caps) == whole, (data, caps)
        # the providers' fast path delivers the same events and error, with and
        # without run sinks (which see every event as typeless: erase_types)
        expected = feed_outcome([data], **caps)
        assert sink_outcome(chunks, **caps) == expected, (data, chunks, caps)
        assert sink_outcome(bytewise(data), **caps) == expected, (data, caps)
        assert sink_outcome(chunks, "plain", **caps) == expected, (data, chunks, caps)
        typeless = erase_types(expected[0]), expected[1]
        assert sink_outcome(chunks, "any", **caps) == typeless, (data, chunks, caps)
        assert sink_outcome(bytewise(data), "any", **caps) == typeless, (data, caps)
    items, error = sse_outcome([data], **BIG_CAPS)
    if error is None:
        assert items == spec_oracle(data), data
    decoder = SSEDecoder(max_line_bytes=16, max_event_bytes=24, emit_comments=True)
    try:
        for chunk in chunks:
            for item in decoder.feed(chunk):
                assert isinstance(item, ServerSentEvent | SSEComment)
            assert decoder.buffered <= 16 + 24
        decoder.end()
    except SSEError as exc:
        assert "longer than" in exc.reason or "larger than" in exc.reason
    runs = SSEDecoder(max_line_bytes=16, max_event_bytes=24)  # regions hold a tail too
    try:
        for chunk in chunks:
            runs.feed_to(chunk, lambda d, t: None, lambda ds: None, any_type=True)
            assert runs.buffered <= 16 + 24
        runs.end()
    except SSEError as exc:
        assert "longer than" in exc.reason or "larger than" in exc.reason


MAX_INPUT = 4096  # longer inputs find nothing new and slow every check down


def hypothesis_round(examples: int) -> None:
    budget = settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )

    @budget
    @given(chunked())
    def structured(case: tuple[bytes, list[bytes]]) -> None:
        check(*case)

    @budget
    @given(st.binary(max_size=2048), st.lists(st.integers(0, 300), max_size=20))
    def raw_bytes(data: bytes, sizes: list[int]) -> None:
        check(data, harness.split_by(data, sizes))

    structured()
    raw_bytes()


def one_input(raw: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(raw)
    sizes = [fdp.ConsumeIntInRange(0, 64) for _ in range(fdp.ConsumeIntInRange(0, 16))]
    data = fdp.ConsumeBytes(MAX_INPUT)
    check(data, harness.split_by(data, sizes))


def main() -> None:
    harness.main("fuzz_sse", hypothesis_round, one_input)


if __name__ == "__main__":
    main()
