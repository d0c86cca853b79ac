"""A response body in chunked transfer coding, decoded many chunks at a time, sans I/O.

h11 hands out one ``Data`` event per chunk, and a streaming upstream sends one
chunk per event: a 64 KiB read of an OpenAI stream is ~200 round trips
through h11's state machine, which cost more than decoding the events
themselves. `ChunkedBody` decodes every chunk that is complete in what was
read and gives their data back joined, so the provider decodes a read in
one call.

It follows h11 exactly (h11 is the oracle in ``tests/http/test_chunked.py``):
the same chunk-size grammar (1 to 20 hex digits, an extension after ``;``,
trailing blanks, CRLF), the same footer check, the same cap on an incomplete
line, and the same `h11.RemoteProtocolError` messages, raised only after the
data decoded before the fault was handed out. Trailers are rare: when a body
has some, they go to a small h11 connection of their own, so their rules
and messages are h11's by construction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import h11

__all__ = ["ChunkedBody", "is_chunked", "keeps_alive"]

#: h11's chunk header (``chunk_header`` in its ABNF module), written out here
_HEADER: Final = re.compile(rb"([0-9A-Fa-f]{1,20})(;.*)?[ \t]*\r\n")
_CRLF: Final = b"\r\n"
#: the data a first `ChunkedBody.read` hands out at most; each read may give four times
#: the last: the first events of a big read leave before the rest is decoded, and a
#: whole stream still takes a handful of reads
FIRST_SHARE: Final = 2048
#: a response whose body h11 then reads up to the end of a chunked message: the trailers
_TRAILER_PRIMER: Final = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n"


class ChunkedBody:
    """Feed it the bytes after the response head; `read` gives the body's data back.

    ``max_incomplete`` is h11's ``max_incomplete_event_size``: a chunk header
    or trailer longer than that without its line end is an error, as in h11.
    After the message ended, `leftover` counts the bytes that came after it
    (they belong to no request: the connection is then not reusable) and
    `closed` says the peer closed its side.
    """

    __slots__ = (
        "_buf",
        "_discard",
        "_error",
        "_left",
        "_max_incomplete",
        "_pos",
        "_share",
        "_trailers",
        "_trailing",
        "closed",
        "done",
        "leftover",
    )

    def __init__(self, max_incomplete: int) -> None:
        self._max_incomplete = max_incomplete
        self._buf = b""
        self._pos = 0
        #: data bytes left in the chunk being read
        self._left = 0
        #: the part of a chunk's closing CRLF still to come
        self._discard = b""
        #: after the last chunk: reading the trailer section (None: not there yet)
        self._trailing = False
        self._trailers: h11.Connection | None = None
        #: an error found after data that was handed out first
        self._error: h11.RemoteProtocolError | None = None
        self._share = FIRST_SHARE
        self.done = False
        self.closed = False
        self.leftover = 0

    def feed(self, data: bytes) -> None:
        """Bytes from the socket (not empty: the end of input is `close`)."""
        if self.done:
            self.leftover += len(data)
        elif self._trailers is not None:
            self._trailers.receive_data(data)
        elif self._pos >= len(self._buf):
            self._buf, self._pos = data, 0
        else:
            self._buf = self._buf[self._pos :] + data
            self._pos = 0

    def close(self) -> None:
        """The peer closed its side; the next `read` raises if the body is incomplete."""
        self.closed = True
        if self._trailers is not None:
            self._trailers.receive_data(b"")

    def read(self, budget: int, *, single: bool = False) -> bytes | None:
        """The data of what is complete, joined; None when more input is needed or done.

        At most ``budget`` bytes and the growing share (`FIRST_SHARE`), unless one
        piece alone is bigger (then that piece, so the caller's cap fires where
        h11's per-chunk check would). ``single``: one chunk's data only.
        Raises `h11.RemoteProtocolError` with h11's message for a broken body.
        """
        if self._error is not None:
            raise self._error
        pieces: list[bytes] = []
        size = 0
        if not single and self._share < budget:
            # grown only while it limits: the budget never grows, so a share past it
            # stays past it (and a stream of a million reads keeps a small int)
            budget = self._share
            self._share *= 4
        try:
            while not self.done:
                if not (self._left or self._discard or self._trailing):
                    size = self._whole_chunks(pieces, size, budget, single)
                if pieces and (single or size >= budget):
                    break
                piece = self._next_piece()
                if piece is None:
                    if self.closed and not self.done and not pieces:
                        self._cut_short()
                    break
                if pieces and size + len(piece) > budget:
                    self._unread(piece)
                    break
                pieces.append(piece)
                size += len(piece)
                if single or size >= budget:
                    break
        except h11.RemoteProtocolError as exc:
            if not pieces:
                raise
            self._error = exc
        if not pieces:
            return None
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def whole_chunk(self, data: bytes) -> bytes | None:
        """The data of ``data`` when it is exactly one whole non-empty chunk and
        nothing is held (a live stream's read: one event, one chunk, one read);
        otherwise None, with nothing read (then `feed` and `read` as usual)."""
        if (
            self._pos < len(self._buf)
            or self._left
            or self._discard
            or self._trailing
            or self._trailers is not None
            or self.done
            or self._error is not None
        ):
            return None
        eol = data.find(b"\r\n")
        match = _HEADER.fullmatch(data, 0, eol + 2) if eol > 0 else None
        if match is None:
            return None
        start = eol + 2
        end = start + int(match.group(1), 16)
        if end == start or end + 2 != len(data) or data[end] != 13 or data[-1] != 10:
            return None
        return data[start:end]

    # -- internals -------------------------------------------------------------
    def _whole_chunks(self, pieces: list[bytes], size: int, budget: int, single: bool) -> int:
        """The fast path: chunks whose size line, data and CRLF are all here, onto
        ``pieces`` (holding ``size`` bytes); their new size. It stops at anything
        else (a partial or last chunk, a fault) at that chunk's size line."""
        buf, pos = self._buf, self._pos
        find, header, crlf_at, append = buf.find, _HEADER.fullmatch, buf.startswith, pieces.append
        limit = 0 if single else budget  # past it, stop (one piece when single)
        while (eol := find(b"\r\n", pos)) >= 0 and (match := header(buf, pos, eol + 2)):
            start = eol + 2
            end = start + int(match.group(1), 16)
            if (
                end == start
                or not crlf_at(b"\r\n", end)
                or (pieces and size + end - start > budget)
            ):
                break
            append(buf[start:end])
            size += end - start
            pos = end + 2
            if size >= limit:
                break
        self._pos = pos
        return size

    def _cut_short(self) -> None:
        """Raise h11's error for a body the peer ended early: within a line, or between."""
        if self._trailers is not None:
            self._trailers.next_event()  # raises: it was told of the close
        if self._pos < len(self._buf):
            raise h11.RemoteProtocolError("peer unexpectedly closed connection")
        raise h11.RemoteProtocolError(
            "peer closed connection without sending complete message body (incomplete chunked read)"
        )

    def _unread(self, piece: bytes) -> None:
        """Put back a piece `read` decoded but may not hand out yet (over budget)."""
        self._pos -= len(piece)
        if self._left or self._discard:
            self._left += len(piece)
            self._discard = b""
        else:  # the whole chunk and its CRLF were consumed: back before the CRLF
            self._pos -= 2
            self._left = len(piece)

    def _next_piece(self) -> bytes | None:
        """The next run of chunk data (a whole chunk when it is all here), or None."""
        buf, pos = self._buf, self._pos
        while True:
            if self._left:
                end = pos + self._left
                if end + 2 <= len(buf) and buf[end : end + 2] == _CRLF:  # the common case
                    self._pos = end + 2
                    self._left = 0
                    return buf[pos:end]
                piece = buf[pos:end]
                if not piece:
                    return None
                self._pos = pos + len(piece)
                self._left -= len(piece)
                if not self._left:
                    self._discard = _CRLF
                return piece
            if self._discard:
                pos = self._footer(buf, pos)
                if self._discard:
                    return None
            if self._trailing or self._trailers is not None:
                self._read_trailers(buf, pos)
                return None
            pos = self._header(buf, pos)
            if pos < 0:
                return None

    def _footer(self, buf: bytes, pos: int) -> int:
        """Check the CRLF after a chunk's data (maybe arriving a byte at a time)."""
        data = buf[pos : pos + len(self._discard)]
        if data != self._discard[: len(data)]:
            raise h11.RemoteProtocolError(
                f"malformed chunk footer: {bytearray(data)!r} (expected {self._discard!r})"
            )
        self._discard = self._discard[len(data) :]
        self._pos = pos = pos + len(data)
        return pos

    def _header(self, buf: bytes, pos: int) -> int:
        """Parse a chunk-size line; the position after it, or -1 when it is incomplete."""
        eol = buf.find(_CRLF, pos)
        if eol < 0:
            if len(buf) - pos > self._max_incomplete:
                raise h11.RemoteProtocolError("Receive buffer too long", error_status_hint=431)
            return -1
        match = _HEADER.fullmatch(buf, pos, eol + 2)
        if match is None:
            line = bytearray(buf[pos : eol + 2])
            raise h11.RemoteProtocolError(f"illegal chunk header: {line!r}")
        self._pos = pos = eol + 2
        self._left = int(match.group(1), 16)
        if not self._left:
            self._trailing = True
        return pos

    def _read_trailers(self, buf: bytes, pos: int) -> None:
        """After the last chunk: the empty trailer section, or h11 reads the trailers."""
        if self._trailers is None:
            rest = buf[pos:]
            if rest[:1] == b"\n" or rest[:2] == _CRLF:  # no trailers (h11 takes a bare LF too)
                self._end(len(rest) - (1 if rest[:1] == b"\n" else 2))
                return
            if rest in (b"", b"\r"):  # not known yet
                return
            self._trailers = _trailer_reader(self._max_incomplete)
            self._buf, self._pos = b"", 0
            self._trailers.receive_data(rest)
            if self.closed:
                self._trailers.receive_data(b"")
        event = self._trailers.next_event()
        if isinstance(event, h11.EndOfMessage):
            data, _ = self._trailers.trailing_data
            self._end(len(data))

    def _end(self, leftover: int) -> None:
        self.done = True
        self.leftover = leftover
        self._trailers = None
        self._buf, self._pos = b"", 0


def _trailer_reader(max_incomplete: int) -> h11.Connection:
    """An h11 client connection positioned just after a last chunk, to read trailers."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_incomplete)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "trailers")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(_TRAILER_PRIMER)
    while not isinstance(conn.next_event(), h11.Response):
        pass
    return conn


def is_chunked(method: str, response: h11.Response, conn: h11.Connection) -> bool:
    """Does h11 read this response's body as chunked? (its framing rule: no body for
    204, 304, HEAD and a successful CONNECT; else chunked when Transfer-Encoding is
    there, which h11 accepts only as ``chunked``)."""
    status = response.status_code
    if conn.their_state is not h11.SEND_BODY or status in (204, 304) or method == "HEAD":
        return False
    if method == "CONNECT" and 200 <= status < 300:
        return False
    return any(name == b"transfer-encoding" for name, _ in response.headers)


def keeps_alive(http_version: bytes | None, headers: Iterable[tuple[str, str]]) -> bool:
    """Does a response let its connection carry another request? h11's rule: HTTP/1.1
    and no ``close`` token in Connection (the request's side is h11's ``our_state``)."""
    return http_version == b"1.1" and not any(
        name.lower() == "connection"
        and "close" in (token.strip().lower() for token in value.split(","))
        for name, value in headers
    )
