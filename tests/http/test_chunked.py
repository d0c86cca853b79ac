"""`ChunkedBody` against h11, the oracle: any chunking of any wire (valid, broken,
cut short, with trailers, with bytes after the end) gives the same body, the same
end, the same error message and the same leftover bytes."""

from __future__ import annotations

import gzip
import itertools

import h11
import pytest
from fake_provider import OPENAI_BODY
from hypothesis import given
from hypothesis import strategies as st
from test_http11 import EXPECTED, exchange

from streamfn.core.http._chunked import ChunkedBody
from streamfn.core.http._read_timer import HEARTBEAT_BYTES

HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"

Outcome = tuple[bytes, str | None, bool, int]


def h11_reads(pieces: list[bytes], eof: bool, max_incomplete: int) -> Outcome:
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_incomplete)
    conn.send(h11.Request(method="POST", target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(HEAD)
    assert isinstance(conn.next_event(), h11.Response)
    body, done = bytearray(), False
    try:
        for piece in [*pieces, b""] if eof else pieces:
            conn.receive_data(piece)
            while True:
                event = conn.next_event()
                if isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    done = True
                elif event in (h11.NEED_DATA, h11.PAUSED) or isinstance(
                    event, h11.ConnectionClosed
                ):
                    break
    except h11.RemoteProtocolError as exc:
        return bytes(body), str(exc), done, 0
    return bytes(body), None, done, len(conn.trailing_data[0]) if done else 0


def ours(
    pieces: list[bytes],
    eof: bool,
    max_incomplete: int,
    budgets: list[int],
    single: bool,
    whole: bool = False,
) -> Outcome:
    """``whole``: each piece is offered to `ChunkedBody.whole_chunk` first (the
    exchange's one-chunk read), and fed only when it declines."""
    reader = ChunkedBody(max_incomplete)
    body = bytearray()
    turn = 0

    def drain() -> None:
        nonlocal turn
        while True:
            budget = budgets[turn % len(budgets)]
            turn += 1
            data = reader.read(budget, single=single)
            if data is None:
                return
            body.extend(data)

    try:
        for piece in pieces:
            data = reader.whole_chunk(piece) if whole else None
            if data is not None:
                body.extend(data)
                continue
            reader.feed(piece)
            drain()
        if eof:
            reader.close()
            drain()
    except h11.RemoteProtocolError as exc:
        return bytes(body), str(exc), reader.done, 0
    return bytes(body), None, reader.done, reader.leftover


@st.composite
def chunk_line(draw: st.DrawFn, size: int) -> bytes:
    digits = b"%x" % size if draw(st.booleans()) else b"%X" % size
    digits = b"0" * draw(st.integers(0, 2)) + digits
    ext = draw(st.sampled_from([b"", b";a=b", b";x", b';q="1;2"']))
    blank = draw(st.sampled_from([b"", b" ", b"\t "]))
    return digits + ext + blank + b"\r\n"


@st.composite
def wires(draw: st.DrawFn) -> bytes:
    out = []
    for data in draw(st.lists(st.binary(min_size=1, max_size=40), max_size=8)):
        out.append(draw(chunk_line(len(data))) + data + b"\r\n")
    out.append(draw(chunk_line(0)))
    trailers = draw(
        st.lists(
            st.sampled_from([b"x-a: 1", b"X-Long: " + b"v" * 30, b" folded", b"bad line", b""]),
            max_size=3,
        )
    )
    out.append(b"".join(t + b"\r\n" for t in trailers if t))
    out.append(draw(st.sampled_from([b"\r\n", b"\n"])))
    out.append(draw(st.sampled_from([b"", b"", b"HTTP/1.1 200 OK\r\n"])))
    wire = b"".join(out)
    change = draw(st.sampled_from(["none", "none", "flip", "cut", "insert"]))
    if change != "none" and wire:
        at = draw(st.integers(0, len(wire) - 1))
        if change == "flip":
            wire = wire[:at] + bytes([draw(st.sampled_from(b"0aG;\r\n \x00"))]) + wire[at + 1 :]
        elif change == "cut":
            wire = wire[:at]
        else:
            wire = wire[:at] + draw(st.sampled_from([b"\r", b"\n", b"zz", b"1"])) + wire[at:]
    return wire


@given(
    wire=wires(),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    eof=st.booleans(),
    max_incomplete=st.sampled_from([4, 16, 1 << 16]),
    budgets=st.lists(st.integers(1, 64), min_size=1, max_size=4) | st.just([1 << 30]),
    single=st.booleans(),
)
def test_any_chunking_reads_as_h11_reads(
    wire: bytes,
    cuts: list[int],
    eof: bool,
    max_incomplete: int,
    budgets: list[int],
    single: bool,
) -> None:
    bounds = sorted({0, len(wire), *(c for c in cuts if c < len(wire))})
    pieces = [wire[a:b] for a, b in itertools.pairwise(bounds)]
    assert ours(pieces, eof, max_incomplete, budgets, single) == h11_reads(
        pieces, eof, max_incomplete
    )


@given(
    datas=st.lists(st.binary(min_size=1, max_size=40), max_size=8),
    data=st.data(),
    eof=st.booleans(),
    whole=st.booleans(),
)
def test_a_read_per_chunk_reads_as_h11_reads(
    datas: list[bytes], data: st.DataObject, eof: bool, whole: bool
) -> None:
    """A live stream's reads: each one whole chunk (`ChunkedBody.whole_chunk`
    takes it without feeding), some damaged, then the end; as h11 reads them."""
    pieces = [data.draw(chunk_line(len(d))) + d + b"\r\n" for d in datas]
    pieces.append(data.draw(chunk_line(0)) + data.draw(st.sampled_from([b"\r\n", b"x: 1\r\n\r\n"])))
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(pieces) - 1))
        piece = pieces[at]
        cut = data.draw(st.integers(0, len(piece) - 1))
        new = data.draw(st.sampled_from([b"", b"\r", b"\n", b"zz", b"1", b"0x1"]))
        pieces[at] = piece[:cut] + new + piece[cut + 1 :]
    pieces = [p for p in pieces if p]
    expected = h11_reads(pieces, eof, 1 << 16)
    assert ours(pieces, eof, 1 << 16, [1 << 30], True, whole) == expected


@pytest.mark.parametrize(
    "piece",
    [
        b"5\r\nhello\r\n",
        b"5\r\nhello\n\n",
        b"5\r\nhello\r\r",
        b"5\r\nhelloX\n",
        b"5 \r\nhello\r\n",
        b"5;x\r\nhello\r\n",
        b"0x5\r\nhello\r\n",
        b"+5\r\nhello\r\n",
        b"6\r\nhello\r\n",
    ],
)
def test_a_one_chunk_read_is_taken_only_when_h11_would_read_it(piece: bytes) -> None:
    pieces = [piece, b"0\r\n\r\n"]
    assert ours(pieces, True, 16, [1 << 30], True, whole=True) == h11_reads(pieces, True, 16)


@pytest.mark.parametrize(
    "wire",
    [
        b"5\r\nhello\r\n0\r\n\r\n",
        b"5;ext=1 \r\nhello\r\n0\r\nx-trailer: 1\r\n\r\n",
        b"5\r\nhelloXY",  # a bad footer
        b"g\r\n",  # a bad size
        b"123456789012345678901\r\n",  # 21 digits
        b"5\r\nhel",  # cut short
        b"0\r\nbad trailer\r\n\r\n",
        b"0\r\n\r\nextra",
        b"1" * 40,  # an endless size line
    ],
)
@pytest.mark.parametrize("eof", [False, True])
def test_byte_at_a_time_and_all_at_once(wire: bytes, eof: bool) -> None:
    """The cases the property covers, named: every split agrees with h11."""
    for pieces in ([wire], [wire[i : i + 1] for i in range(len(wire))]):
        expected = h11_reads(pieces, eof, 16)
        assert ours(pieces, eof, 16, [1 << 30], False) == expected
        assert ours(pieces, eof, 16, [3], True) == expected


def test_many_chunks_come_back_as_one_piece() -> None:
    """The point of it: one call hands out every chunk a read holds."""
    reader = ChunkedBody(1 << 16)
    reader.feed(b"".join(b"3\r\nabc\r\n" for _ in range(100)) + b"0\r\n\r\n")
    assert reader.read(1 << 30) == b"abc" * 100
    assert reader.read(1 << 30) is None and reader.done and reader.leftover == 0


def test_budget_stops_before_the_piece_that_crosses_it() -> None:
    reader = ChunkedBody(1 << 16)
    reader.feed(b"3\r\nabc\r\n3\r\ndef\r\n4\r\nghij\r\n0\r\n\r\n")
    assert reader.read(7) == b"abcdef"
    assert reader.read(2) == b"ghij"  # alone, bigger than the budget: the caller's cap fires
    assert reader.read(1) is None and reader.done


def _chunked_wire(body: bytes, sizes: list[int], head: bytes = b"") -> bytes:
    """``body`` in chunks of ``sizes`` (cycled), after a response head."""
    out, pos, turn = [], 0, 0
    while pos < len(body):
        size = sizes[turn % len(sizes)]
        out.append(b"%x\r\n%s\r\n" % (len(body[pos : pos + size]), body[pos : pos + size]))
        pos, turn = pos + size, turn + 1
    status = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
    return status + head + b"\r\n" + b"".join(out) + b"0\r\n\r\n"


@given(
    sizes=st.lists(st.integers(1, 300), min_size=1, max_size=4),
    cuts=st.lists(st.integers(0, 4000), max_size=10),
    gzipped=st.booleans(),
    eager=st.booleans(),
)
def test_an_exchange_reads_any_chunked_wire_as_the_replayed_events(
    sizes: list[int], cuts: list[int], gzipped: bool, eager: bool
) -> None:
    """Through the `Exchange`: any chunking and any split, plain or gzipped, eager
    reads and pumps or plain reads, give the replayed events and a reusable socket."""
    body = gzip.compress(OPENAI_BODY) if gzipped else OPENAI_BODY
    wire = _chunked_wire(body, sizes, b"content-encoding: gzip\r\n" if gzipped else b"")
    ex = exchange()
    ex.bytes_to_send()
    events = []
    points = sorted({0, len(wire), *(c for c in cuts if c < len(wire))})
    for a, b in itertools.pairwise(points):
        events += ex.receive_bytes(wire[a:b], eager=eager)
        while more := ex.pump(some=True):
            events += more
    assert events == EXPECTED
    assert ex.finished and ex.reusable and ex.body_bytes == len(body)
    again = exchange(reuse=ex)  # the next request on the socket starts a clean cycle
    assert again.reused and not ex.reusable
    again.bytes_to_send()
    assert again.receive_bytes(_chunked_wire(OPENAI_BODY, [64])) == EXPECTED and again.reusable


@given(sizes=st.lists(st.integers(1, 300), min_size=1, max_size=4))
def test_an_exchange_reading_one_chunk_per_read_gives_the_replayed_events(
    sizes: list[int],
) -> None:
    """A live stream: the head, then each read exactly one chunk (the exchange's
    one-step path), then the last chunk."""
    wire = _chunked_wire(OPENAI_BODY, sizes)
    head, _, rest = wire.partition(b"\r\n\r\n")
    reads, pos = [head + b"\r\n\r\n"], 0
    while pos < len(rest):
        size_end = rest.index(b"\r\n", pos)
        end = size_end + 2 + int(rest[pos:size_end], 16) + 2
        reads.append(rest[pos:end] if end > size_end + 4 else rest[pos:])
        pos = end if end > size_end + 4 else len(rest)
    ex = exchange()
    ex.bytes_to_send()
    events = []
    for read in reads:
        events += ex.receive_bytes(read, eager=True)
        while more := ex.pump(some=True):
            events += more
    assert events == EXPECTED
    assert ex.finished and ex.reusable and ex.body_bytes == len(OPENAI_BODY)


@pytest.mark.parametrize("eager", [True, False])
def test_the_read_timer_hears_events_and_heartbeats_on_either_path(eager: bool) -> None:
    """Reads of one whole chunk each (``eager``: the exchange's one-step path) and
    ordinary reads tell the read timer the same: a flood of bytes that make no event
    is named as such when the idle timer fires, and the next event ends it."""
    hello, world = OPENAI_BODY.split(b"\n\n")[1:3]  # two text deltas
    ex = exchange()
    ex.bytes_to_send()
    ex.receive_bytes(_chunked_wire(b"", [1]).removesuffix(b"0\r\n\r\n"))

    def read(data: bytes) -> list[object]:
        chunk = b"%x\r\n%s\r\n" % (len(data), data)
        out: list[object] = list(ex.receive_bytes(chunk, eager=eager))
        while more := ex.pump(some=True):
            out += more
        return out

    assert read(hello + b"\n\n")
    comment = b": " + b"x" * 1020 + b"\n\n"
    for _ in range(HEARTBEAT_BYTES // len(comment) + 1):
        assert read(comment) == []
    assert "no event for" in ex.timer(0.0)[1].message
    assert read(world + b"\n\n")
    assert ex.timer(0.0)[1].message.startswith("idle timeout: no data")


def test_the_growing_share_stops_growing_once_it_no_longer_limits_a_read() -> None:
    # multiplied on every read, it became an int of 2 bits per read: each read of
    # a long stream then cost time in proportion to the reads before it
    reader = ChunkedBody(1 << 16)
    for _ in range(10_000):
        reader.feed(b"9\r\ndata: x\n\n\r\n")
        while reader.read(1 << 30) is not None:
            pass
    assert reader._share.bit_length() <= 32
