"""A catalogue file's bytes -> its JSON value, at a bounded cost whoever wrote them.

A catalogue may come from a mirror or a file the user was handed, so its bytes
are read as hostile: gzip is inflated piece by piece and refused past
`MAX_CATALOG_BYTES` (a few hundred kilobytes must not inflate to gigabytes),
the nesting and the number of values are measured before parsing (a deep text
would exhaust the parser's recursion, millions of tiny values its memory), and the numbers must be finite (``1e400`` and ``NaN`` are no price or
limit). Each refusal is a `CatalogError` naming the bound.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Final

from .catalogue._catalog_build import CatalogError
from .http._content_coding import BodyDecoder, CodingError
from .json._json_shape import json_structure, nests_deeper, value_count

__all__ = ["MAX_CATALOG_BYTES", "MAX_CATALOG_DEPTH", "MAX_CATALOG_VALUES", "catalog_json"]

#: the most a catalogue may weigh, fetched or inflated (models.dev's is a few megabytes)
MAX_CATALOG_BYTES: Final = 64 * 1024 * 1024
#: the deepest nesting a catalogue may have (models.dev's data nests 7 levels, ours 4)
MAX_CATALOG_DEPTH: Final = 32
#: the most JSON values a catalogue may hold (models.dev's held 120,000 in 2026): each
#: costs the parser memory, so 64 MiB of ``[{},{},...]`` would build gigabytes
MAX_CATALOG_VALUES: Final = 2_000_000
_GZIP_MAGIC: Final = b"\x1f\x8b"
_SLICE: Final = 64 * 1024


def catalog_json(raw: bytes, *, max_bytes: int = MAX_CATALOG_BYTES) -> Any:
    """The JSON value ``raw`` holds (gzipped or not), or `CatalogError` saying why not."""
    text = _inflated(raw, max_bytes) if raw[:2] == _GZIP_MAGIC else raw
    structure = json_structure(text)
    if nests_deeper(structure, MAX_CATALOG_DEPTH):
        raise CatalogError(f"nests deeper than {MAX_CATALOG_DEPTH} levels; not a catalogue")
    if (values := value_count(structure)) > MAX_CATALOG_VALUES:
        raise CatalogError(
            f"holds {values:,} JSON values, more than a catalogue may ({MAX_CATALOG_VALUES:,})"
        )
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except CatalogError:
        raise
    except ValueError as exc:  # also bad UTF-8, and integers longer than Python reads
        raise CatalogError(f"not JSON: {exc}") from None


def _inflated(raw: bytes, max_bytes: int) -> bytes:
    """``raw`` gunzipped, refused as soon as it passes ``max_bytes``."""
    decoder = BodyDecoder("gzip")
    pieces: list[bytes] = []
    size = 0
    try:
        # lazily, and the input in slices (each step copies what it leaves unread):
        # each piece is counted before the next is inflated
        slices = (raw[at : at + _SLICE] for at in range(0, len(raw), _SLICE))
        fed = itertools.chain.from_iterable(map(decoder.feed, slices))
        for piece in itertools.chain(fed, decoder.finish()):
            size += len(piece)
            if size > max_bytes:
                raise CatalogError(
                    f"inflates to more than {max_bytes:,} bytes (the limit for a catalogue)"
                )
            pieces.append(piece)
    except CodingError as exc:
        raise CatalogError(str(exc)) from None
    return b"".join(pieces)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise CatalogError(f"the number {text[:40]} is out of range")
    return number


def _no_constant(name: str) -> Any:
    raise CatalogError(f"{name} is not a number a catalogue may hold")
