"""Undo a ``Content-Encoding`` the server applied although we asked for ``identity``.

The shells send ``Accept-Encoding: identity``: an LLM stream is small text
that must reach the caller as it is produced, and a compressed stream
cannot be cut into events until the compressor flushes. Some proxies and
CDNs compress anyway. Rather than feeding gzip bytes to the SSE decoder
(which ends in a misleading "stream ended early" and a retry that bills the
generation again), the body is decoded here, incrementally, in bounded
pieces, so a small compressed body that inflates to gigabytes (a "gzip
bomb") meets the response cap piece by piece and never sits in memory.

``gzip`` (also ``x-gzip``, several members back to back) and ``deflate``
(zlib-wrapped as RFC 9110 says, or raw as some servers send it) are
decoded (deflate's framing is read from its first two bytes, the RFC 1950
header check); anything else (``br``, ``zstd``, stacked codings) is refused with
`CodingError` naming the coding. stdlib ``zlib`` only: no new dependency.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Final

from .._errors import DecodeError

__all__ = ["PIECE_BYTES", "BodyDecoder", "CodingError", "decoder_for"]

#: the most decoded bytes one step may produce; caps are checked between pieces
PIECE_BYTES: Final = 256 << 10

_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS
_ZLIB_WBITS: Final = zlib.MAX_WBITS
_RAW_WBITS: Final = -zlib.MAX_WBITS


class CodingError(DecodeError):
    """The body cannot be decoded; the message names the coding and the reason."""


class BodyDecoder:
    """Incremental gzip / deflate decoder yielding pieces of at most `PIECE_BYTES`."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._gzip = coding == "gzip"
        #: deflate: the first two bytes say zlib-wrapped or raw; they wait here until both
        #: arrived, so the decision (and so the output) does not depend on the chunking
        self._head: bytes | None = None if self._gzip else b""
        self._inflater = self._new(_GZIP_WBITS if self._gzip else _ZLIB_WBITS)

    @staticmethod
    def _new(wbits: int) -> zlib._Decompress:
        return zlib.decompressobj(wbits)

    def _framing(self, data: bytes) -> bytes | None:
        """Deflate only: the bytes to inflate once the framing is known (None: not yet)."""
        assert self._head is not None
        head = self._head + data
        if len(head) < 2:
            self._head = head
            return None
        self._head = None
        cmf, flg = head[0], head[1]
        # RFC 1950: compression method 8, window <= 32 KiB, header checksum a multiple of 31
        wrapped = cmf & 0x0F == 8 and cmf >> 4 <= 7 and ((cmf << 8) | flg) % 31 == 0
        self._inflater = self._new(_ZLIB_WBITS if wrapped else _RAW_WBITS)
        return head

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Decoded pieces of ``data``; raises `CodingError` on corrupt input."""
        pending: bytes | None = data
        if self._head is not None:
            pending = self._framing(data)
        while pending:
            if self._inflater.eof:
                # another gzip member (or junk after a deflate stream)
                if not self._gzip:
                    raise CodingError(f"data after the end of the {self.coding} stream")
                self._inflater = self._new(_GZIP_WBITS)
            try:
                piece = self._inflater.decompress(pending, PIECE_BYTES)
            except zlib.error as exc:
                raise CodingError(f"corrupt {self.coding} body: {exc}") from None
            if piece:
                yield piece
            if self._inflater.unconsumed_tail:  # the piece is full: more output waits
                pending = self._inflater.unconsumed_tail
            elif self._inflater.eof:  # the stream ended inside ``pending``
                pending = self._inflater.unused_data
            else:
                pending = b""

    def finish(self) -> Iterator[bytes]:
        """The last pieces at the end of the body; raises `CodingError` if it was cut short."""
        if self._head is not None or not self._inflater.eof:
            tail = self._inflater.flush()
            if tail:
                yield tail
            raise CodingError(f"the {self.coding} body ended before its compressed stream did")


def decoder_for(headers: Iterable[tuple[str, str]]) -> BodyDecoder | None:
    """The decoder the response's ``Content-Encoding`` needs, None for identity.

    Raises `CodingError` for a coding streamfn does not decode.
    """
    codings: list[str] = []
    for name, value in headers:
        if name.lower() == "content-encoding":
            codings += [c.strip().lower() for c in value.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
        return BodyDecoder("gzip" if codings[0] == "x-gzip" else codings[0])
    raise CodingError(
        f"unsupported Content-Encoding {', '.join(codings)!r} (streamfn decodes gzip and "
        "deflate, and asks for identity)"
    )
