"""What a caller of the SSE and NDJSON decoders observes, and an SSE oracle we did not derive from the decoder.

The test suite's properties and the long-running targets (`fuzz_sse`,
`fuzz_ndjson`) hold the decoders to the same things, so those things live
here, once, in the installed kit: a target then runs from a plain
``pip install 'streamfn[fuzz]'`` with no checkout beside it.

- `sse_outcome` / `ndjson_outcome`: the items, then the error (if any) that
  ended them, for one chunking of a stream.
- `spec_oracle`: WHATWG HTML §9.2.6 transcribed literally in the str domain
  (decode first, then parse), written from the spec text, not from the decoder.
- `feed_outcome` / `sink_outcome`: what `SSEDecoder.feed` returns and what the
  providers' fast path `SSEDecoder.feed_to` delivers, as (data, type) text.
- `sse_like` / `chunked`: SSE-shaped bytes (field names, separators, BOMs,
  broken UTF-8) and a chunking of them.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st

from streamfn.core.wire import (
    NDJSONDecoder,
    NDJSONError,
    ServerSentEvent,
    SSEComment,
    SSEDecoder,
    SSEError,
)

from ._bytes import split_at

Item = ServerSentEvent | SSEComment
#: an event as the fast path delivers it: (data, event type) as text
Delivered = tuple[str, str]


def sse_outcome(chunks: list[bytes], **options: Any) -> tuple[list[Item], str | None]:
    """Everything a caller observes: the items, then the error (if any) that ended them."""
    decoder = SSEDecoder(**options)
    out: list[Item] = []
    try:
        for chunk in chunks:
            out += decoder.feed(chunk)
        out += decoder.end()
    except SSEError as exc:
        return out, exc.reason
    return out, None


def ndjson_outcome(
    chunks: list[bytes], max_line_bytes: int = 1 << 20
) -> tuple[list[bytes], str | None]:
    """The lines, then the error (if any) that ended them."""
    decoder = NDJSONDecoder(max_line_bytes=max_line_bytes)
    lines: list[bytes] = []
    try:
        for chunk in chunks:
            lines += decoder.feed(chunk)
        lines += decoder.end()
    except NDJSONError as exc:
        return lines, exc.reason
    return lines, None


def spec_oracle(stream: bytes) -> list[Item]:
    """§9.2.6 transcribed literally in the str domain (decode first, then parse),
    plus streamfn's two documented choices (end-of-stream leniency, retry digits)."""
    text = stream.decode("utf-8", "replace")
    text = text.removeprefix("\ufeff")
    out: list[Item] = []
    data, event_type, last_id, retry = "", "", None, None
    for line in [*re.split("\r\n|\r|\n", text), ""]:
        if line == "":
            if data == "":
                event_type = ""
                continue
            out.append(
                ServerSentEvent(data.removesuffix("\n"), event_type or "message", last_id, retry)
            )
            data, event_type, retry = "", "", None
        elif line.startswith(":"):
            out.append(SSEComment(line[1:].removeprefix(" ")))
        else:
            field, colon, value = line.partition(":")
            value = value.removeprefix(" ") if colon else ""
            if field == "data":
                data += value + "\n"
            elif field == "event":
                event_type = value
            elif field == "id" and "\x00" not in value:
                last_id = value
            elif (
                field == "retry"
                and value
                and all(c in "0123456789" for c in value)
                and len(value.lstrip("0")) <= 18
            ):
                retry = int(value)
    return out


def sink_outcome(
    chunks: list[bytes], runs: str | None = None, bound: bool = False, **options: Any
) -> tuple[list[Delivered], str | None]:
    """What `feed_to` delivers (then `end`, as a provider call does), as (data, type) text.

    ``runs``: None (no run sink), ``"plain"`` or ``"any"`` (``any_type``). A run
    sink gets events as if typeless, so with ``"any"`` every type reads as
    ``message`` (`erase_types`). ``bound``: through `SSEDecoder.bind`, the step
    the providers call per read.
    """
    options.pop("emit_comments", None)
    decoder = SSEDecoder(**options)
    out: list[Delivered] = []

    def sink(data: bytes, event_type: bytes) -> bool:
        assert type(data) in (bytes, bytearray) and type(event_type) is bytes
        kind = event_type.decode("utf-8", "replace") if event_type else "message"
        out.append((data.decode("utf-8", "replace"), kind))
        return False

    def run(datas: list[bytes]) -> bool:
        assert datas and all(type(d) is bytes for d in datas)
        out.extend((d.decode("utf-8", "replace"), "message") for d in datas)
        return False

    step = decoder.bind(sink, run, any_type=runs == "any") if bound else None
    try:
        for chunk in chunks:
            if step is not None:
                step(chunk)
            elif runs is None:
                decoder.feed_to(chunk, sink)
            else:
                decoder.feed_to(chunk, sink, run, any_type=runs == "any")
        for event in decoder.end():
            if isinstance(event, ServerSentEvent):
                out.append((event.data, event.event))
    except SSEError as exc:
        return (erase_types(out) if runs == "any" else out), exc.reason
    return (erase_types(out) if runs == "any" else out), None


def erase_types(delivered: list[Delivered]) -> list[Delivered]:
    """``delivered`` as a run sink sees it: every event typeless (``message``)."""
    return [(data, "message") for data, _ in delivered]


def feed_outcome(chunks: list[bytes], **options: Any) -> tuple[list[Delivered], str | None]:
    """`sse_outcome` as (data, type) text, comments left out: what `sink_outcome` must equal."""
    items, error = sse_outcome(chunks, **options)
    return [(i.data, i.event) for i in items if isinstance(i, ServerSentEvent)], error


_PIECES = st.sampled_from(
    [
        b"data",
        b"data:",
        b"data: ",
        b"event: ",
        b"event",
        b"id: ",
        b"id",
        b"retry: ",
        b"retry:",
        b":",
        b": ",
        b"\x00",
        b"\r",
        b"\n",
        b"\r\n",
        b"\n\n",
        b" ",
        b"12",
        b"x",
        b"{}",
        b"\xef\xbb\xbf",
        b"\xef",
        b"\xc3\xa9",
        b"\xff",
        "🙂".encode(),
        b"[DONE]",
    ]
)
#: bytes built from SSE's field names and separators, a BOM, broken UTF-8 and noise
sse_like = st.lists(st.one_of(_PIECES, st.binary(max_size=6)), max_size=40).map(b"".join)


@st.composite
def chunked(
    draw: st.DrawFn, streams: st.SearchStrategy[bytes] = sse_like
) -> tuple[bytes, list[bytes]]:
    """A stream and the same stream cut at up to 12 random points."""
    data = draw(streams)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    return data, split_at(data, cuts)
