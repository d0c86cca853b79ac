"""An eager read hands over its first events before decoding the rest of the read.

One socket read can hold a whole short answer (hundreds of events, one HTTP
chunk each). `Exchange.receive_bytes(..., eager=True)` returns as soon as one
chunk has produced events and `Exchange.pump` gives the rest; together they
must be exactly the events of an ordinary read, the connection as reusable.
"""

from __future__ import annotations

import itertools

from fake_provider import OPENAI_BODY
from hypothesis import given
from hypothesis import strategies as st
from test_http11 import EXPECTED, exchange

from streamfn.core import TextDelta


def one_chunk_per_event(body: bytes) -> bytes:
    """The wire as OpenAI sends it: each SSE event in its own HTTP chunk."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    return head + b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"


def test_the_first_text_comes_back_before_the_rest_of_the_read_is_decoded() -> None:
    ex = exchange()
    ex.bytes_to_send()
    first = ex.receive_bytes(one_chunk_per_event(OPENAI_BODY), eager=True)
    assert any(type(e) is TextDelta for e in first)
    assert len(first) < len(EXPECTED) and not ex.finished
    rest = ex.pump()
    assert first + rest == EXPECTED
    assert ex.pump() == [] and ex.finished and ex.reusable


@given(cuts=st.lists(st.integers(0, len(one_chunk_per_event(OPENAI_BODY))), max_size=8))
def test_eager_reads_and_pumps_give_the_events_of_ordinary_reads(cuts: list[int]) -> None:
    wire = one_chunk_per_event(OPENAI_BODY)
    ex = exchange()
    ex.bytes_to_send()
    events = []
    points = [0, *sorted(cuts), len(wire)]
    for a, b in itertools.pairwise(points):
        events += ex.receive_bytes(wire[a:b], eager=True)
        while more := ex.pump():
            events += more
    assert events == EXPECTED
    assert ex.finished and ex.reusable
