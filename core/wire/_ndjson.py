"""Newline-delimited JSON framing (Ollama), byte-fed and bounded.

Returns each non-blank line as bytes so the caller decodes it straight into
its own msgspec struct; a last line without a newline is returned by `end`.
Lines end at LF, CRLF or a lone CR (the shared `LineSplitter`), and blank or
whitespace-only lines are skipped: servers send them as keep-alives.
"""

from __future__ import annotations

from .._errors import NDJSONError
from ._lines import LineSplitter, LineTooLong

__all__ = ["NDJSONDecoder", "NDJSONError"]


def _non_blank(lines: list[bytes]) -> list[bytes]:
    return [line for line in lines if line.strip()]


class NDJSONDecoder:
    """Incremental NDJSON line framer; memory held is at most one line.

    As with `SSEDecoder`, a feed that completes lines and then breaks the
    cap returns those lines and the next call raises, so any chunking of the
    same bytes yields the same lines followed by the same error.
    """

    __slots__ = ("_closed", "_error", "_lines")

    def __init__(self, *, max_line_bytes: int = 16 << 20) -> None:
        self._lines = LineSplitter(max_line_bytes)
        self._error: NDJSONError | None = None
        self._closed = False

    def feed(self, data: bytes) -> list[bytes]:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise RuntimeError("NDJSONDecoder.feed() after end()")
        try:
            lines = self._lines.feed(data)
        except LineTooLong as exc:
            self._error = NDJSONError(f"NDJSON line longer than {exc.limit} bytes", limit=True)
            done = _non_blank(exc.lines)
            if done:
                return done
            raise self._error from None
        return _non_blank(lines)

    def end(self) -> list[bytes]:
        """The last line if it had no newline; idempotent."""
        if self._error is not None:
            raise self._error
        self._closed = True
        last = self._lines.end()
        return [last] if last is not None and last.strip() else []

    @property
    def buffered(self) -> int:
        """Bytes of the partial line held (never more than the cap)."""
        return self._lines.buffered
