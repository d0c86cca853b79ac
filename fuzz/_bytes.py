"""`chunkings` and `mutations`: how a body can arrive, and how it can arrive broken.

Every decoder in streamfn promises that any chunking of the same bytes gives
the same events; code built on top should promise the same of what it does
with those events. `chunkings` draws the cuts (including one byte at a time
and empty chunks); `mutations` draws damaged copies of a body, at the byte
level (flips, insertions, deletions, truncation) and at the frame level
(a dropped, duplicated or reordered SSE event, NDJSON line or event-stream
frame, an oversized line) so damage lands where parsers have state.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from typing import TypeVar

from hypothesis import strategies as st

__all__ = ["by_sizes", "bytewise", "chunkings", "mutations", "split_at", "split_frames"]


S = TypeVar("S", bytes, str)


def split_at(data: S, cuts: Sequence[int]) -> list[S]:
    """``data`` cut at the offsets ``cuts`` (any order; repeated offsets give empty
    pieces, which a decoder must accept)."""
    points: list[int] = sorted(min(max(c, 0), len(data)) for c in cuts)
    return [data[a:b] for a, b in itertools.pairwise([0, *points, len(data)])]


def bytewise(data: S) -> list[S]:
    """One piece per byte (per character for text): every boundary at once."""
    return [data[i : i + 1] for i in range(len(data))]


def by_sizes(data: S, sizes: Sequence[int]) -> list[S]:
    """Pieces of ``sizes[0]``, ``sizes[1]`` ... cycling; sizes below 1 count as 1.
    Empty ``data`` gives no pieces at all."""
    pieces: list[S] = []
    at, i = 0, 0
    while at < len(data):
        size = max(1, sizes[i % len(sizes)])
        pieces.append(data[at : at + size])
        at, i = at + size, i + 1
    return pieces


@st.composite
def _chunkings(draw: st.DrawFn, body: bytes, max_chunks: int) -> list[bytes]:
    way = draw(st.sampled_from(["whole", "bytewise", "sizes", "cuts"]))
    if way == "whole" or not body:
        return [body]
    if way == "bytewise":
        return bytewise(body)
    if way == "sizes":
        return by_sizes(body, draw(st.lists(st.integers(1, 64), min_size=1, max_size=8)))
    return split_at(body, draw(st.lists(st.integers(0, len(body)), max_size=max_chunks)))


def chunkings(body: bytes, *, max_chunks: int = 32) -> st.SearchStrategy[list[bytes]]:
    """Ways ``body`` can be cut into chunks: whole, one byte each, repeating sizes,
    or random cuts (possibly empty chunks). Joined, a chunking is ``body`` again."""
    return _chunkings(body, max_chunks)


def split_frames(body: bytes) -> list[bytes]:
    """The body's frames, joined back they are the body: AWS event-stream frames
    (by their length prelude), else SSE events (up to a blank line), else lines."""
    if len(body) >= 16 and body[0] == 0:
        frames, at = [], 0
        while at + 4 <= len(body):
            (total,) = struct.unpack_from(">I", body, at)
            if total < 16 or at + total > len(body):
                break
            frames.append(body[at : at + total])
            at += total
        if at == len(body):
            return frames
    for separator in (b"\r\n\r\n", b"\n\n", b"\n"):
        if separator in body:
            parts = body.split(separator)
            frames = [p + separator for p in parts[:-1]]
            return [*frames, parts[-1]] if parts[-1] else frames
    return [body] if body else []


_BYTE_OPS = ("flip", "insert", "delete", "truncate", "duplicate")
_FRAME_OPS = ("drop-frame", "duplicate-frame", "swap-frames", "oversized-line")


@st.composite
def _mutations(draw: st.DrawFn, body: bytes, max_ops: int, oversize: int) -> bytes:
    data = bytearray(body)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(_BYTE_OPS + _FRAME_OPS))
        if op in _FRAME_OPS:
            data = bytearray(_frame_op(draw, op, bytes(data), oversize))
            continue
        if not data:
            data += draw(st.binary(min_size=1, max_size=8))
            continue
        at = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "truncate":
            del data[at:]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 256))]
    return bytes(data)


def _frame_op(draw: st.DrawFn, op: str, body: bytes, oversize: int) -> bytes:
    frames = split_frames(body)
    if op == "oversized-line":
        at = draw(st.integers(0, len(frames)))
        frames.insert(at, b"data: " + b"x" * oversize + b"\n\n")
        return b"".join(frames)
    if not frames:
        return body
    i = draw(st.integers(0, len(frames) - 1))
    if op == "drop-frame":
        del frames[i]
    elif op == "duplicate-frame":
        frames.insert(i, frames[i])
    elif len(frames) > 1:
        j = draw(st.integers(0, len(frames) - 1))
        frames[i], frames[j] = frames[j], frames[i]
    return b"".join(frames)


def mutations(
    body: bytes, *, max_ops: int = 4, oversized_line_bytes: int = 1 << 16
) -> st.SearchStrategy[bytes]:
    """Damaged copies of ``body``: 1 to ``max_ops`` byte-level or frame-level changes.

    A stream built on streamfn should survive every one of them: a `protocol`,
    `network` or `limit` `Error` (never an exception), and never a cut stream
    reported as complete. ``oversized_line_bytes`` sizes the inserted long line
    (pass more than your ``Options.max_line_bytes`` to exercise the cap).
    """
    return _mutations(body, max_ops, oversized_line_bytes)
