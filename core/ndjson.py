"""Newline-delimited JSON framing (Ollama), byte-fed and bounded.

Returns each non-blank line as bytes so the caller decodes it straight into
its own msgspec struct; a last line without a newline is returned by `end`.
"""

from __future__ import annotations

from .lines import LineSplitter, LineTooLong

__all__ = ["NDJSONDecoder", "NDJSONError"]


class NDJSONError(Exception):
    """A line grew past its cap; sticky, like every streamfn decoder error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NDJSONDecoder:
    def __init__(self, *, max_line_bytes: int = 16 << 20) -> None:
        self._lines = LineSplitter(max_line_bytes)
        self._error: NDJSONError | None = None

    def feed(self, data: bytes) -> list[bytes]:
        if self._error is not None:
            raise self._error
        try:
            lines = self._lines.feed(data)
        except LineTooLong as exc:
            self._error = NDJSONError(f"NDJSON line longer than {exc.limit} bytes")
            raise self._error from None
        return [line for line in lines if line.strip()]

    def end(self) -> list[bytes]:
        if self._error is not None:
            raise self._error
        last = self._lines.end()
        return [last] if last is not None and last.strip() else []
