"""Incremental line splitting shared by the SSE and NDJSON decoders.

Lines end at CRLF, LF or a lone CR. A CR that ends one chunk may be the
first half of a CRLF whose LF starts the next chunk, so that LF is swallowed
rather than read as an empty line. A partial line is kept as pieces and only
the new bytes are searched, so a single huge line fed in small chunks costs
O(n), not O(n^2). The partial line is capped: memory stays bounded.

Speed matters here (every streamed byte passes through): the common chunk has
no CR, so it is cut with one C-level ``bytes.split``; per-line length checks
are skipped whenever the chunk plus the partial line cannot exceed the cap.
"""

from __future__ import annotations

import re
from typing import Final

from .._errors import StreamfnError

__all__ = ["LineSplitter", "LineTooLong"]

_ANY_EOL: Final = re.compile(rb"\r\n|\r|\n")


class LineTooLong(StreamfnError):
    """A line grew past the splitter's cap before its terminator arrived.

    A signal between `LineSplitter` and the decoders built on it, which turn it
    into their own `DecodeError`; ``limit`` here is the cap in bytes.

    ``lines`` holds the complete lines that preceded the long one in the same
    feed, so a caller can still act on them: the outcome then does not depend
    on where the chunk boundaries fell.
    """

    def __init__(self, limit: int, lines: list[bytes] | None = None) -> None:
        super().__init__(f"line longer than {limit} bytes")
        self.limit = limit
        self.lines: list[bytes] = lines if lines is not None else []


class LineSplitter:
    """Feed bytes, get complete lines (without terminators) back.

    The partial line is the bytes tail of the last chunk (no copy) and turns
    into a bytearray only when a line spans more chunks (amortized O(1) growth,
    memory exactly the line's length).

    After `LineTooLong` the splitter holds nothing; callers treat the stream
    as failed.
    """

    __slots__ = ("_after_cr", "_max", "_pending")

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self._max = max_line_bytes
        self._pending: bytes | bytearray = b""
        self._after_cr = False

    def feed(self, data: bytes) -> list[bytes]:
        if not data:
            return []  # keeps a pending CR pending: its LF may still come
        if self._after_cr:
            self._after_cr = False
            if data[0] == 0x0A:
                data = data[1:]
                if not data:
                    return []
        limit = self._max
        pending = self._pending
        longest_possible = len(pending) + len(data)
        if 0x0D in data:  # an int needle is one memchr; b"\r" takes the slower search
            self._after_cr = data[-1] == 0x0D
            lines = _ANY_EOL.split(data)
        else:
            lines = data.split(b"\n")
        tail = lines.pop()
        if not lines:  # no terminator: the partial line grows
            if longest_possible > limit:
                self._reset()
                raise LineTooLong(limit)
            if type(pending) is bytes:
                self._pending = pending = bytearray(pending)
            pending += tail
            return []
        if pending:
            lines[0] = (pending if type(pending) is bytes else bytes(pending)) + lines[0]
        if longest_possible > limit:
            # Only now can a line be over the cap: find the first one.
            for i, line in enumerate(lines):
                if len(line) > limit:
                    self._reset()
                    raise LineTooLong(limit, lines[:i])
            if len(tail) > limit:
                self._reset()
                raise LineTooLong(limit, lines)
        self._pending = tail
        return lines

    def end(self) -> bytes | None:
        """The unterminated last line, if any bytes of it arrived."""
        line = bytes(self._pending) if self._pending else None
        self._reset()
        return line

    def _reset(self) -> None:
        self._pending = b""
        self._after_cr = False

    @property
    def idle(self) -> bool:
        """Nothing held: the next byte starts a line."""
        return not self._pending and not self._after_cr

    @property
    def buffered(self) -> int:
        """Bytes of the partial line held (never more than the cap)."""
        return len(self._pending)
