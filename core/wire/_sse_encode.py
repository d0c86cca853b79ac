"""`encode_sse`: one server-sent event frame as bytes, refusing what would break framing.

The writing half of `streamfn.core.wire._sse` (which re-exports it): the
server's encoders and the fake providers write their streams with it.
"""

from __future__ import annotations

__all__ = ["encode_sse"]


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
