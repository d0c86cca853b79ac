"""Server-sent events, decoded exactly as WHATWG HTML §9.2.6 says, from bytes.

Byte-fed and incremental: `SSEDecoder.feed` takes whatever chunk the socket
gave and returns the events completed by it. Any chunking of the same bytes
gives the same events. Like h11, the decoder raises one exception type
(`SSEError`) and stays failed afterwards.

One documented leniency: at end of stream an event whose blank line never
came is still dispatched (real Anthropic recordings end that way), where a
browser would drop it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Final

from .._errors import SSEError
from ._lines import LineSplitter, LineTooLong
from ._sse_encode import encode_sse
from ._sse_events import ServerSentEvent, SSEComment, decode_data
from ._sse_regions import region_datas, typed_head

__all__ = [
    "DataSink",
    "RunSink",
    "SSEComment",
    "SSEDecoder",
    "SSEError",
    "ServerSentEvent",
    "decode_data",
    "encode_sse",
]

_BOM: Final = b"\xef\xbb\xbf"
_DATA: Final = b"data: "

#: ``sink(data, event_type) -> stop``: what `SSEDecoder.feed_to` hands each event to
DataSink = Callable[[bytes, bytes], object]
#: the most `SSEDecoder.feed_to` holds back as a region's unfinished tail: beyond
#: it the line parser reads the event (its buffer grows, a copied tail would not)
_TAIL_CAP: Final = 16 << 10
#: ``runs(datas) -> stop``: what `SSEDecoder.feed_to` hands a run of events to
RunSink = Callable[[list[bytes]], object]


class SSEDecoder:
    """Incremental SSE parser.

    ``max_line_bytes`` caps one line, ``max_event_bytes`` the data of one
    event (the dispatched ``data``, in UTF-8 bytes); memory held is
    O(largest event), never O(stream). With ``emit_comments=True`` comment
    lines come back as `SSEComment` items so a shell can reset its idle timer
    on keep-alives.

    Errors are sticky and never lose events: when a feed completes events and
    then breaks a cap, it returns those events and the next call (``feed`` or
    ``end``) raises. So every chunking of the same bytes yields the same
    events followed by the same error.

    ``retry``: the spec sets the reconnection time at once; here a valid
    ``retry:`` field is reported on the next dispatched event (``.retry``) and
    the latest value stays readable as `SSEDecoder.retry`. Values with more
    than 18 significant digits (over 31 years in ms) are ignored rather than
    parsed: the only deviation, and it keeps parsing O(1).
    """

    # fmt: off
    __slots__ = (
        "_bom", "_closed", "_emit_comments", "_error", "_event_type", "_first", "_head", "_last_id",
        "_lines", "_max_event", "_more", "_reconnection_time", "_region_cap", "_regions",
        "_retry", "_size", "_tail", "_tail_cap",
    )
    # fmt: on

    def __init__(
        self,
        *,
        max_line_bytes: int = 1 << 20,
        max_event_bytes: int = 16 << 20,
        emit_comments: bool = False,
    ) -> None:
        self._lines = LineSplitter(max_line_bytes)
        #: `feed_to` with runs reads by regions (`sse_regions`) while set; the
        #: bytes after the last blank line wait in ``_tail``
        self._regions = True
        self._tail = b""
        self._head = b""  # the last one-event read's `typed_head`, tried on the next
        self._region_cap = min(max_line_bytes, max_event_bytes)
        self._tail_cap = min(self._region_cap, _TAIL_CAP)
        self._max_event = max_event_bytes
        self._emit_comments = emit_comments
        # Bytes seen while the stream is still a prefix of the BOM; None once settled.
        self._bom: bytes | None = b""
        # The data buffer, kept as first line + (LF + line)* so that the usual
        # one-line event costs no copy; None means "empty" in the spec's sense.
        self._first: bytes | None = None
        self._more = bytearray()
        self._size = 0
        self._event_type = b""
        self._last_id: str | None = None
        self._retry: int | None = None
        self._reconnection_time: int | None = None
        self._error: SSEError | None = None
        self._closed = False

    @property
    def last_event_id(self) -> str | None:
        """The last event ID buffer (``None`` until an ``id`` field arrives)."""
        return self._last_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in ms from the latest valid ``retry`` field."""
        return self._reconnection_time

    @property
    def buffered(self) -> int:
        """Stream bytes held right now: the partial line plus the pending event data."""
        pending_bom = len(self._bom) if self._bom else 0
        return self._lines.buffered + self._size + pending_bom + len(self._tail)

    def feed(self, data: bytes) -> list[ServerSentEvent | SSEComment]:
        """Decode one chunk; return the events and comments it completed."""
        data = self._settle(data)
        data, self._tail = self._tail + data, b""  # a tail left by feed_to comes first
        out = self._feed_lines(data) if data else []
        self._regions = self._idle()  # a later feed_to reads regions only from an event end
        return out

    def feed_to(
        self,
        data: bytes,
        sink: DataSink,
        runs: RunSink | None = None,
        *,
        any_type: bool = False,
    ) -> None:
        """Decode one chunk, handing each completed event's raw data to ``sink``.

        The fast path for providers that parse the data themselves: no
        `ServerSentEvent`, no UTF-8 decoding (the data stays bytes, ready for
        msgspec, and may be invalid UTF-8: see `decode_data`), no copy of
        one-line data. ``sink(data, event_type)`` gets the event type as sent
        (``b""`` when the event named none) and returns True to stop reading this
        chunk. Comments are skipped; ``id`` and ``retry`` are tracked as in
        `feed`. Errors are sticky exactly as in `feed`: a chunk that completes
        events and then breaks a cap hands those over and the next call raises.

        ``runs``: plain events (one ``data:`` line, no ``event:`` line, or any
        ``event:`` line when ``any_type``) may go there instead, as a list of
        the data of a whole region of them (`sse_regions`): one call per chunk,
        not per event, which lets a provider keep its hot loop in one frame.
        So ``runs`` must treat each data exactly as ``sink(data, b"")`` would.
        ``runs(datas)`` returns True to stop, like ``sink``; the two are called
        in stream order. Events ``runs`` does not get go to ``sink``. With
        ``runs`` a fault may also be raised in the call that handed over the
        events before it (always after them).
        """
        if self._bom is not None or self._error is not None or self._closed:
            data = self._settle(data)  # a call only while it has work: once per read counts
        if not data:
            return
        if runs is None:
            data, self._tail = self._tail + data, b""  # a tail left by runs comes first
            self._lines_to(data, sink)
            self._regions = self._idle()  # as in `feed`: a call with runs may follow
        elif self._regions:
            self._regions_to(data, sink, runs, any_type)
        else:
            self._lines_then_regions(data, sink, runs, any_type)

    def bind(
        self, sink: DataSink, runs: RunSink, *, any_type: bool = False
    ) -> Callable[[bytes], None]:
        """`feed_to` with these sinks as one callable of ``data``, made once per stream;
        a read of one plain event (a live stream's) goes to ``runs`` without a search."""
        return partial(self._step, sink, runs, any_type)

    def _step(self, sink: DataSink, runs: RunSink, any_type: bool, data: bytes) -> None:
        if self._bom is not None or self._error is not None or self._closed:
            data = self._settle(data)
        if not data:
            return
        if not self._regions:
            self._lines_then_regions(data, sink, runs, any_type)
            return
        end = len(data) - 2  # index compares, not a slice: this runs once per read
        if (
            self._tail
            or end < 0
            or data[-1] != 10
            or data[end] != 10
            or 13 in data
            or end > self._region_cap
        ):
            self._regions_to(data, sink, runs, any_type)
            return
        # one read, one event: a data line, or (typed) a type line then one. No find:
        # compiled, its argument parsing costs more than the rest of the framing
        payload: bytes | None = None
        if data.startswith(_DATA):
            payload = data[6:end]
        elif any_type:
            head = self._head  # the last typed read's event line: most reads repeat it
            if not (head and data.startswith(head)):
                head = self._head = typed_head(data)
            if head:
                payload = data[len(head) : end]
        if payload is None or 10 in payload:  # not one of the two shapes
            self._regions_to(data, sink, runs, any_type)
            return
        if self._retry is not None:
            self._retry = None
        runs([payload])

    def _lines_then_regions(
        self, data: bytes, sink: DataSink, runs: RunSink, any_type: bool
    ) -> None:
        """The line parser holds a partial line or event: it reads up to the next
        event end, and regions take over from there if that left it idle."""
        cut = data.find(b"\n\n") + 2
        if cut == 1:  # no event end in this chunk
            self._lines_to(data, sink)
            self._regions = self._idle()
        elif self._lines_to(data[:cut], sink):
            return  # the sink said stop
        elif not self._idle():
            self._lines_to(data[cut:], sink)
            self._regions = self._idle()
        else:
            self._regions = True
            if cut < len(data):
                self._regions_to(data[cut:], sink, runs, any_type)

    def _regions_to(self, data: bytes, sink: DataSink, runs: RunSink, any_type: bool) -> None:
        """`feed_to` by regions (`sse_regions`): the bytes after the last blank
        line wait in ``_tail``; a plain region goes to ``runs`` in one call and
        any other to the line parser, which ends it as clean as it began."""
        tail = self._tail
        buf = tail + data if tail else data
        # a live stream's read ends where its event does: no search for that
        end = len(buf) - 2 if buf[-1] == 10 and buf[-2:] == b"\n\n" else buf.rfind(b"\n\n")
        if end < 0:
            self._tail = b""
            self._hold_or_parse(buf, sink)
            return
        self._tail = b""
        region = buf[:end]
        datas = (
            region_datas(region, any_type, self._head) if len(region) <= self._region_cap else None
        )
        if datas is None:
            stop = self._lines_to(buf[: end + 2], sink)
        else:
            if self._retry is not None:
                self._retry = None
            stop = bool(runs(datas))
        if not stop and end + 2 < len(buf):
            self._hold_or_parse(buf[end + 2 :], sink)

    def _hold_or_parse(self, rest: bytes, sink: DataSink) -> None:
        """Bytes after the last event end: held as the tail while short and CR-free;
        else (CRLF, or a long event: copying a longer tail per chunk would go
        quadratic, and the caps bound what is held) the line parser takes over."""
        if len(rest) <= self._tail_cap and 13 not in rest:
            self._tail = rest
            return
        self._regions = False
        self._lines_to(rest, sink)
        self._regions = self._idle()

    def _idle(self) -> bool:
        """Nothing half-read: no partial line, no pending event fields."""
        return self._lines.idle and self._first is None and not self._event_type

    def _lines_to(self, data: bytes, sink: DataSink) -> bool:
        """`feed_to` after the BOM, line by line; True if the sink said stop.

        Raises a fault at once only when no event came before it.
        """
        try:
            lines = self._lines.feed(data)
        except LineTooLong as exc:
            result = self._sink_lines(exc.lines, sink)
            if result is None:
                return True
            if self._error is None:
                self._fail(f"SSE line longer than {exc.limit} bytes", limit=True)
            if not result:
                error = self._error
                assert error is not None
                raise error from None
            return False
        result = self._sink_lines(lines, sink)
        if result is False and self._error is not None:
            raise self._error
        return result is None

    def _settle(self, data: bytes) -> bytes:
        """Refuse after a fault or `end`; strip a BOM (which may come in pieces)."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise RuntimeError("SSEDecoder.feed() after end()")
        if self._bom is not None:
            data = self._bom + data
            if len(data) < len(_BOM) and _BOM.startswith(data):
                self._bom = data
                return b""
            self._bom = None
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
        return data

    def end(self) -> list[ServerSentEvent | SSEComment]:
        """Flush at end of stream: a last unterminated line and a pending event.

        The spec drops both; real servers (Anthropic recordings among them)
        end streams without the final blank line, so they are dispatched.
        """
        if self._error is not None:
            raise self._error
        if self._closed:
            return []
        self._closed = True
        out: list[ServerSentEvent | SSEComment] = []
        if self._bom:  # the stream was only a BOM prefix: those bytes are text
            out = self._feed_lines(self._bom)
            self._bom = None
        if self._tail:  # left by feed_to: lines, but never a blank one
            out += self._feed_lines(self._tail)
            self._tail = b""
        last = self._lines.end()
        lines = [b""] if last is None else [last, b""]
        out.extend(self._process(lines))
        if self._error is not None:
            raise self._error
        return out

    def _feed_lines(self, data: bytes) -> list[ServerSentEvent | SSEComment]:
        try:
            lines = self._lines.feed(data)
        except LineTooLong as exc:
            out = self._process(exc.lines)
            if self._error is None:
                self._fail(f"SSE line longer than {exc.limit} bytes", limit=True)
            return self._deliver(out)
        out = self._process(lines)
        return self._deliver(out) if self._error is not None else out

    def _deliver(
        self, out: list[ServerSentEvent | SSEComment]
    ) -> list[ServerSentEvent | SSEComment]:
        """After a fault: hand back what came before it, or raise if nothing did."""
        if out:
            return out
        assert self._error is not None
        raise self._error

    def _fail(self, reason: str, *, limit: bool) -> None:
        self._error = SSEError(reason, limit=limit)
        self._tail = b""
        self._first = None
        self._more = bytearray()
        self._size = 0
        self._lines = LineSplitter(1)

    def _process(self, lines: list[bytes]) -> list[ServerSentEvent | SSEComment]:
        # The hot loop: one iteration per line of the stream. State lives in
        # locals and is written back once; ``data:`` and ``event:`` lines skip the general
        # field split. Faults set self._error and stop.
        out: list[ServerSentEvent | SSEComment] = []
        first = self._first
        size = self._size
        max_event = self._max_event
        for line in lines:
            if not line:  # blank line: dispatch (inlined: once per event)
                if first is not None:
                    # size == len(first) iff the event had one data line.
                    data = first if size == len(first) else self._join_data(first)
                    event_type = self._event_type
                    out.append(
                        ServerSentEvent(
                            data.decode("utf-8", "replace"),
                            event_type.decode("utf-8", "replace") if event_type else "message",
                            self._last_id,
                            self._retry,
                        )
                    )
                    self._retry = None
                    first = None
                    size = 0
                self._event_type = b""
                continue
            if line.startswith(b"data: "):
                value = line[6:]
            elif line.startswith(b"event: "):  # Anthropic & co. name every event
                self._event_type = line[7:]
                continue
            elif line.startswith(b"data:"):
                value = line[5:]
            else:
                if line[0] == 0x3A:  # ":" comment
                    if self._emit_comments:
                        text = line[1:].decode("utf-8", "replace")
                        out.append(SSEComment(text[1:] if text[:1] == " " else text))
                    continue
                colon = line.find(b":")
                if colon < 0:
                    field, value = line, b""
                else:
                    field = line[:colon]
                    value = (
                        line[colon + 2 :]
                        if line[colon + 1 : colon + 2] == b" "
                        else line[colon + 1 :]
                    )
                if field != b"data":
                    if field == b"event":
                        self._event_type = value
                    elif field == b"id":
                        if b"\x00" not in value:
                            self._last_id = value.decode("utf-8", "replace")
                    elif field == b"retry":
                        self._set_retry(value)
                    continue
            if first is None:
                first = value
                size = len(value)
            else:
                self._more += b"\n"
                self._more += value
                size += 1 + len(value)
            if size > max_event:
                self._fail(f"SSE event data larger than {max_event} bytes", limit=True)
                return out
        self._first = first
        self._size = size
        return out

    def _sink_lines(self, lines: list[bytes], sink: DataSink) -> bool | None:
        """`_process` for `feed_to`: the same fields, data handed over raw.

        Returns whether any event reached the sink, None if the sink said stop.
        """
        first = self._first
        size = self._size
        event_type = self._event_type
        max_event = self._max_event
        delivered = False
        for line in lines:
            if not line:
                if first is not None:
                    data = first if size == len(first) else bytes(self._join_data(first))
                    if self._retry is not None:
                        self._retry = None
                    delivered = True
                    if sink(data, event_type):
                        self._first, self._size, self._event_type = None, 0, b""
                        return None
                    first = None
                    size = 0
                event_type = b""
            elif line.startswith(b"data: "):
                if first is None:
                    first = line[6:]
                    size = len(first)
                else:
                    self._more += b"\n"
                    self._more += line[6:]
                    size += len(line) - 5
                if size > max_event:
                    self._fail(f"SSE event data larger than {max_event} bytes", limit=True)
                    return delivered
            elif line.startswith(b"event: "):
                event_type = line[7:]
            else:
                # Everything unusual (comments, id, retry, "data:" without its
                # space) goes through the general field parser, one line at a time.
                self._first, self._size, self._event_type = first, size, event_type
                self._process([line])  # a non-blank line dispatches nothing
                if self._error is not None:
                    return delivered
                first, size, event_type = self._first, self._size, self._event_type
        self._first, self._size, self._event_type = first, size, event_type
        return delivered

    def _set_retry(self, value: bytes) -> None:
        if value and value.isdigit():  # bytes.isdigit: ASCII digits only, as the spec asks
            significant = value.lstrip(b"0")
            if len(significant) <= 18:
                self._retry = self._reconnection_time = int(significant or b"0")

    def _join_data(self, first: bytes) -> bytes | bytearray:
        more = self._more
        self._more = bytearray()
        more[0:0] = first
        return more
