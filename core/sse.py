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


class SSEError(Exception):
    """The byte stream broke a cap; ``reason`` says which. Sticky."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SSEDecoder:
    """Incremental SSE parser.

    ``max_line_bytes`` caps one line, ``max_event_bytes`` the data of one event;
    memory held is O(largest event), never O(stream). With
    ``emit_comments=True`` comment lines come back as `SSEComment` items so a
    shell can reset its idle timer on keep-alives.
    """

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
        self._bom_pending: bytes | None = b""  # None once the BOM question is settled
        self._data: list[bytes] = []
        self._data_size = 0
        self._event_type = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self._error: SSEError | None = None

    def feed(self, data: bytes) -> list[ServerSentEvent | SSEComment]:
        if self._error is not None:
            raise self._error
        if self._bom_pending is not None:
            data = self._strip_bom(data)
            if not data:
                return []
        try:
            lines = self._lines.feed(data)
        except LineTooLong as exc:
            raise self._fail(f"SSE line longer than {exc.limit} bytes") from None
        return self._process(lines)

    def end(self) -> list[ServerSentEvent | SSEComment]:
        """Flush at end of stream: a last unterminated line and a pending event."""
        if self._error is not None:
            raise self._error
        lines: list[bytes] = []
        if self._bom_pending:
            lines_feed = self._lines.feed(self._bom_pending)
            lines.extend(lines_feed)
            self._bom_pending = None
        last = self._lines.end()
        if last is not None:
            lines.append(last)
        lines.append(b"")
        return self._process(lines)

    def _strip_bom(self, data: bytes) -> bytes:
        assert self._bom_pending is not None
        head = self._bom_pending + data
        if len(head) < len(_BOM) and _BOM.startswith(head):
            self._bom_pending = head
            return b""
        self._bom_pending = None
        return head[3:] if head.startswith(_BOM) else head

    def _fail(self, reason: str) -> SSEError:
        self._error = SSEError(reason)
        self._data = []
        return self._error

    def _process(self, lines: list[bytes]) -> list[ServerSentEvent | SSEComment]:
        out: list[ServerSentEvent | SSEComment] = []
        for line in lines:
            if not line:
                if self._data:
                    out.append(self._dispatch())
                else:
                    self._event_type = ""
                continue
            first = line[0]
            if first == 0x3A:  # ":" comment
                if self._emit_comments:
                    out.append(SSEComment(line[1:].decode("utf-8", "replace").removeprefix(" ")))
                continue
            colon = line.find(b":")
            if colon < 0:
                field, value = line, b""
            else:
                field = line[:colon]
                value = line[colon + 1 :]
                if value[:1] == b" ":
                    value = value[1:]
            if field == b"data":
                self._data.append(value)
                self._data_size += len(value) + 1
                if self._data_size > self._max_event:
                    raise self._fail(f"SSE event data larger than {self._max_event} bytes")
            elif field == b"event":
                self._event_type = value.decode("utf-8", "replace")
            elif field == b"id":
                if b"\x00" not in value:
                    self._last_id = value.decode("utf-8", "replace")
            elif field == b"retry" and value and value.isdigit():
                self._retry = int(value)
        return out

    def _dispatch(self) -> ServerSentEvent:
        data = b"\n".join(self._data).decode("utf-8", "replace")
        event = ServerSentEvent(data, self._event_type or "message", self._last_id, self._retry)
        self._data = []
        self._data_size = 0
        self._event_type = ""
        self._retry = None
        return event


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
