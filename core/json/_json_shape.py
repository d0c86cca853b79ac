"""The shape of a JSON text (how many values, how deep), measured before it is parsed.

A parser builds every value it reads and recurses once per level, so a small
text can cost gigabytes (millions of tiny values) or end in a `RecursionError`
(a hundred thousand brackets). These measures run on the raw bytes in a few
passes at C speed, never a Python loop per value, so a caller refuses such a
text before building anything from it: the server's request bodies and the
model catalogues fetched from a mirror both do.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["json_structure", "nests_deeper", "value_count"]

#: a JSON string once its escaped backslashes and quotes are gone (or an unterminated
#: one, to the end): replaced before counting so its commas and brackets are not
#: structure; possessive, so no quote is ever scanned twice
_STRING: Final = re.compile(rb'"[^"]*+"?')
#: how many strings (and the text between them) `json_structure` replaces at a time
_STRETCH_TOKENS: Final = 4096
#: a stretch of the text that ends at a string's end (or the text's): runs of
#: other bytes and whole strings, at most `_STRETCH_TOKENS` of each
_STRETCH: Final = re.compile(rb'(?:[^"]++|"[^"]*+"?){1,%d}+' % _STRETCH_TOKENS)
_EMPTY_CONTAINER: Final = re.compile(rb"\[\]|\{\}")
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")


def json_structure(text: bytes) -> bytes:
    """``text`` with each string replaced by ``0`` and whitespace removed: what is left
    is brackets, braces, commas, colons and scalars.

    Done `_STRETCH_TOKENS` strings at a time: one substitution over the whole text
    builds a piece per string before joining them, some 300 bytes of Python objects
    per string (25 MiB for a 1 MiB text of short strings) before any parse began."""
    # escaped backslashes first: a backslash-quote left after that is an escaped quote
    unescaped = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(
        _STRING.sub(b"0", stretch).translate(None, b" \t\r\n")
        for stretch in _STRETCH.findall(unescaped)
    )


def value_count(structure: bytes) -> int:
    """The number of JSON values in a valid document's `json_structure` (exact): the
    root, plus one per comma, plus one first element per container that is not empty."""
    count = structure.count
    containers = count(b"[") + count(b"{")
    return 1 + count(b",") + containers - count(b"[]") - count(b"{}")


def nests_deeper(structure: bytes, limit: int) -> bool:
    """Whether containers nest more than ``limit`` deep in a valid document's
    `json_structure`: each pass removes the innermost pairs, so what survives ``limit``
    passes is nested deeper (at most ``limit`` linear passes, never a Python loop
    per value)."""
    brackets = structure.translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = _EMPTY_CONTAINER.sub(b"", brackets)
    return bool(brackets)
