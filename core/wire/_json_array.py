"""One JSON array streamed element by element (``[{...}\n,\r\n{...}]``), byte-fed and bounded.

Gemini's ``streamGenerateContent`` without ``alt=sse`` answers this way.
`JSONArrayDecoder.feed` returns the elements completed so far, as the bytes
of one JSON object each, whatever the chunking; the caller then parses each
element strictly. Only the structure is scanned here (strings, escapes,
brackets); memory held is one element, capped at ``max_element_bytes``.
"""

from __future__ import annotations

import re
from typing import Final

from .._errors import JSONArrayError

__all__ = ["JSONArrayDecoder", "JSONArrayError"]

_STRUCTURAL: Final = re.compile(rb'["\\{}\[\]]')


class JSONArrayDecoder:
    """Incremental splitter of a streamed JSON array into its elements.

    Like every streamfn decoder it raises one error type (`JSONArrayError`)
    and stays failed afterwards. ``end`` returns nothing: an element cut off
    by the end of the body is incomplete, and the caller decides what a body
    without its closing ``]`` means (`complete` says whether it came).
    """

    def __init__(self, *, max_element_bytes: int = 16 << 20) -> None:
        self._buf = bytearray()
        self._scan = 0
        self._depth = 0
        self._in_string = False
        self._escape = False  # the byte at _scan is escaped (a backslash ended a chunk)
        self._start = -1  # where the current element began in _buf
        self._closed = False
        self._ended = False
        self._error: JSONArrayError | None = None
        self._max = max_element_bytes

    @property
    def complete(self) -> bool:
        """The closing ``]`` of the array has arrived."""
        return self._closed

    @property
    def buffered(self) -> int:
        """Bytes of the unfinished element held (never more than the cap)."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        if self._error is not None:
            raise self._error
        if self._ended:
            raise RuntimeError("JSONArrayDecoder.feed() after end()")
        try:
            return self._feed(data)
        except JSONArrayError as exc:
            self._error = exc
            self._buf.clear()
            raise

    def end(self) -> list[bytes]:
        """Nothing more can complete; idempotent."""
        if self._error is not None:
            raise self._error
        self._ended = True
        return []

    def _feed(self, data: bytes) -> list[bytes]:
        if self._closed:
            if data.strip():
                raise JSONArrayError("data after the end of the JSON array")
            return []
        buf = self._buf
        buf += data
        out: list[bytes] = []
        pos = self._scan
        if self._escape and pos < len(buf):
            pos += 1
            self._escape = False
        skip = -1
        for match in _STRUCTURAL.finditer(buf, pos):
            at = match.start()
            if at == skip:
                continue
            char = buf[at]
            if self._in_string:
                if char == 0x5C:  # backslash: the next byte is escaped
                    if at + 1 == len(buf):
                        self._escape = True
                    skip = at + 1
                elif char == 0x22:
                    self._in_string = False
            elif char == 0x22:
                self._in_string = True
            elif char in (0x7B, 0x5B):  # { [
                self._depth += 1
                if self._depth == 1 and char != 0x5B:
                    raise JSONArrayError("the body is not a JSON array")
                if self._depth == 2:
                    self._start = at
            else:
                self._depth -= 1
                if self._depth == 1:
                    out.append(bytes(buf[self._start : at + 1]))
                    self._start = -1
                elif self._depth == 0:
                    self._closed = True
                    break
                elif self._depth < 0:
                    raise JSONArrayError("unbalanced JSON array")
        # Keep only the unfinished element.
        keep = self._start if self._start >= 0 else len(buf)
        del buf[:keep]
        if self._start >= 0:
            self._start = 0
        self._scan = len(buf)
        if len(buf) > self._max:
            raise JSONArrayError(f"JSON array element larger than {self._max} bytes", limit=True)
        return out
