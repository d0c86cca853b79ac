"""Client-chosen text as it may appear in a log line: one line, no terminal controls.

A model name or any other string a client sends can hold a newline (a forged
log line after it), a carriage return, an ANSI escape that rewrites the
operator's terminal, or a bidirectional override that reorders what is shown.
Every character that is not printable (Unicode's own test, which covers the C0
and C1 controls, DEL, line and paragraph separators and the format characters)
is written as its Python escape, a backslash doubled so an escape cannot be
forged, and the text is cut to a bounded length.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_LOGGED_CHARS", "loggable"]

#: the most characters of one client string a log line shows
MAX_LOGGED_CHARS: Final = 200


def loggable(text: object, limit: int = MAX_LOGGED_CHARS) -> str:
    """``text`` (made a string) with non-printable characters escaped, at most
    ``limit`` characters of it, and how many more there were."""
    raw = str(text)
    shown = raw[:limit]
    out = "".join(_escaped(char) for char in shown)
    if len(raw) > limit:
        out += f"...({len(raw) - limit} more characters)"
    return out


_SHORT: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(char: str) -> str:
    short = _SHORT.get(char)
    if short is not None:
        return short
    if char.isprintable():
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
