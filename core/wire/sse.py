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

from typing import Final

import msgspec

from ..errors import SSEError
from .lines import LineSplitter, LineTooLong

__all__ = ["SSEComment", "SSEDecoder", "SSEError", "ServerSentEvent", "encode_sse"]

_BOM: Final = b"\xef\xbb\xbf"


class ServerSentEvent(msgspec.Struct, frozen=True, gc=False):
    """One dispatched event. ``id`` is the last event id seen so far (it persists
    across events, as the spec says); ``retry`` is set only on the event after a
    valid ``retry:`` field."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEComment(msgspec.Struct, frozen=True, gc=False):
    """A ``:`` line: servers send these as keep-alives while the model thinks."""

    text: str


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

    __slots__ = (
        "_bom",
        "_closed",
        "_emit_comments",
        "_error",
        "_event_type",
        "_first",
        "_last_id",
        "_lines",
        "_max_event",
        "_more",
        "_reconnection_time",
        "_retry",
        "_size",
    )

    def __init__(
        self,
        *,
        max_line_bytes: int = 1 << 20,
        max_event_bytes: int = 16 << 20,
        emit_comments: bool = False,
    ) -> None:
        self._lines = LineSplitter(max_line_bytes)
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
        return self._lines.buffered + self._size + pending_bom

    def feed(self, data: bytes) -> list[ServerSentEvent | SSEComment]:
        """Decode one chunk; return the events and comments it completed."""
        if self._error is not None:
            raise self._error
        if self._closed:
            raise RuntimeError("SSEDecoder.feed() after end()")
        if self._bom is not None:
            data = self._bom + data
            if len(data) < len(_BOM) and _BOM.startswith(data):
                self._bom = data
                return []
            self._bom = None
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
        return self._feed_lines(data)

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


def encode_sse(
    data: str | None = None,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
    comment: str | None = None,
) -> bytes:
    """One SSE frame as bytes; multi-line data becomes several ``data:`` lines.

    Values that would break framing (a newline in ``event`` or ``id``, NUL in
    ``id``) raise ValueError rather than silently producing another stream.
    """
    parts: list[str] = []
    if comment is not None:
        for line in comment.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            parts.append(f": {line}\n" if line else ":\n")
    if event is not None:
        if "\n" in event or "\r" in event:
            raise ValueError("SSE event type cannot contain a line break")
        parts.append(f"event: {event}\n")
    if id is not None:
        if "\n" in id or "\r" in id or "\x00" in id:
            raise ValueError("SSE id cannot contain a line break or NUL")
        parts.append(f"id: {id}\n")
    if retry is not None:
        if retry < 0:
            raise ValueError("SSE retry must be a non-negative integer")
        parts.append(f"retry: {retry}\n")
    if data is not None:
        for line in data.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            parts.append(f"data: {line}\n")
    if data is not None or event is not None or id is not None or retry is not None:
        parts.append("\n")
    return "".join(parts).encode("utf-8")
