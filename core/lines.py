"""Incremental line splitting shared by the SSE and NDJSON decoders.

Lines end at CRLF, LF or a lone CR. A CR that ends one chunk may be the
first half of a CRLF whose LF starts the next chunk, so that LF is swallowed
rather than read as an empty line. A partial line is kept in a bytearray and
only the new bytes are searched, so a single huge line fed in small chunks
costs O(n), not O(n^2). The partial line is capped: memory stays bounded.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["LineSplitter", "LineTooLong"]

_ANY_EOL: Final = re.compile(rb"\r\n|\r|\n")


class LineTooLong(Exception):
    """A line grew past the splitter's cap before its terminator arrived."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"line longer than {limit} bytes")
        self.limit = limit


class LineSplitter:
    """Feed bytes, get complete lines (without terminators) back."""

    __slots__ = ("_after_cr", "_max", "_partial")

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        self._max = max_line_bytes
        self._partial = bytearray()
        self._after_cr = False

    def feed(self, data: bytes) -> list[bytes]:
        if self._after_cr:
            self._after_cr = False
            if data[:1] == b"\n":
                data = data[1:]
        if not data:
            return []
        has_cr = b"\r" in data
        if not has_cr and b"\n" not in data:
            self._partial += data
            if len(self._partial) > self._max:
                raise LineTooLong(self._max)
            return []
        if has_cr:
            if data[-1:] == b"\r":
                self._after_cr = True
            lines = _ANY_EOL.split(data)
        else:
            lines = data.split(b"\n")
        if self._partial:
            self._partial += lines[0]
            lines[0] = bytes(self._partial)
        tail = lines.pop()
        self._partial = bytearray(tail)
        limit = self._max
        if len(tail) > limit:
            raise LineTooLong(limit)
        for line in lines:
            if len(line) > limit:
                raise LineTooLong(limit)
        return lines

    def end(self) -> bytes | None:
        """The unterminated last line, if any bytes of it arrived."""
        if not self._partial:
            return None
        line = bytes(self._partial)
        self._partial = bytearray()
        return line

    @property
    def buffered(self) -> int:
        return len(self._partial)
