"""Ways to cut a byte (or text) stream into chunks, shared by the chunking tests.

Every decoder promises that any chunking of the same input gives the same
result, so the tests cut inputs in many ways; these helpers keep each way
written once, with its edge cases (empty pieces, empty input) decided here.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TypeVar

__all__ = ["by_sizes", "bytewise", "split_at"]

S = TypeVar("S", bytes, str)


def split_at(data: S, cuts: Sequence[int]) -> list[S]:
    """``data`` cut at the sorted offsets ``cuts``; repeated offsets give empty pieces
    (a decoder must accept an empty chunk), so callers that mean "no empty chunk" filter."""
    return [data[a:b] for a, b in pairwise([0, *cuts, len(data)])]


def bytewise(data: S) -> list[S]:
    """One piece per byte (per character for text): every boundary at once."""
    return [data[i : i + 1] for i in range(len(data))]


def by_sizes(data: S, sizes: Sequence[int]) -> list[S]:
    """Pieces of ``sizes[0]``, ``sizes[1]`` ... bytes, cycling; sizes below 1 count as 1.
    Empty ``data`` gives no pieces at all."""
    pieces: list[S] = []
    at, i = 0, 0
    while at < len(data):
        size = max(1, sizes[i % len(sizes)])
        pieces.append(data[at : at + size])
        at, i = at + size, i + 1
    return pieces
