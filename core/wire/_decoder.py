"""The one shape every wire decoder has: bytes in, whole frames out.

``feed(data)`` returns the frames the bytes complete (whatever the chunking:
the same bytes give the same frames); ``end()`` flushes at end of body. Both
raise one `~streamfn.core._errors.DecodeError` subclass when the bytes cannot
be framed, and keep raising it: a decoder that failed stays failed. The
provider base (`streamfn.core.providers.FramedCall`) drives any of them with
one feed loop.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

__all__ = ["Decoder"]

FrameT = TypeVar("FrameT")


class Decoder(Protocol[FrameT]):
    """What `SSEDecoder`, `NDJSONDecoder`, `EventStreamDecoder` and `JSONArrayDecoder` share."""

    def feed(self, data: bytes) -> list[FrameT]: ...

    def end(self) -> list[FrameT]: ...
