"""Whole runs of plain SSE events read with a few C-level calls, or not at all.

`SSEDecoder.feed_to` spends most of its time stepping through lines in Python,
two or three per event, though nearly every real stream is the same few
shapes over and over. A *region* is the stream from an event boundary up to
the last blank line of the bytes at hand. When a region is made only of
events of one of the two shapes providers send::

    data: <one line>\\n\\n                       (OpenAI and most others)
    event: <type>\\ndata: <one line>\\n\\n        (Anthropic, when the caller
                                                 takes every event type)

with no CR anywhere, its events' data is exactly what `region_datas` returns
(`bytes.split` finds the events; one join and one memchr prove that no event
had a second line). Anything else (a comment, ``id:``, ``retry:``, ``data:``
without its space, multi-line data, CRLF, an event type the caller wants
apart) returns None and the region goes through the general line parser,
which then ends the region in the same clean state it started in. So the
fast path never decides anything: it only recognises what needs no deciding.
"""

from __future__ import annotations

from typing import Final

__all__ = ["region_datas", "typed_head"]

_DATA: Final = b"data: "
_EVENT: Final = b"event: "
_LF_DATA: Final = b"\ndata: "
_BLANK: Final = b"\n\n"
#: how far into a region its first event's type line is looked for
_HEAD_WINDOW: Final = 256


def typed_head(data: bytes) -> bytes:
    """``event: <type>\\ndata: `` when ``data`` begins with exactly that (a type line,
    then a data line), else ``b""``."""
    if not data.startswith(_EVENT):
        return b""
    head, found, _ = data.partition(_LF_DATA)
    return head + found if found and 10 not in head else b""


def region_datas(region: bytes, any_type: bool, head: bytes = b"") -> list[bytes] | None:
    """The data of every event in ``region`` (events up to, not including, the
    final blank line's ``\\n\\n``), or None when the region is not plain.

    ``any_type``: events with an ``event:`` line may be read too (the caller
    ignores event types); ``head``: the `typed_head` the caller saw last, a hint
    (the region's own is found when it does not begin with it).

    Each shape is checked at C speed, not by looping: the split consumes the
    separators between events (for typed events, blank line and the same type
    line), and a piece left holding a LF came from an event with another line
    (or another type line: `_typed_datas` then reads the region).
    """
    # `in` with an int needle is one memchr and no method call: on a live
    # stream's one-event regions the call costs more than the scan
    if 13 in region:  # CR
        return None
    if region.startswith(_DATA):
        if 10 not in region:  # one event: the usual region of a live stream
            return [region[6:]]
        datas = region.split(b"\n\ndata: ")
        datas[0] = datas[0][6:]
        # a split piece holding a LF came from an event with another line
        return None if 10 in b"".join(datas) else datas
    if any_type and region.startswith(_EVENT):
        if not (head and region.startswith(head)):
            head = typed_head(region[:_HEAD_WINDOW])
        if head:  # events of one type line: a run of deltas
            datas = region.split(_BLANK + head)
            datas[0] = datas[0][len(head) :]
            if 10 not in b"".join(datas):
                return datas
        return _typed_datas(region)
    return None


def _typed_datas(region: bytes) -> list[bytes] | None:
    """Events of ``event: <type>`` then ``data: <line>``, of any types: three lines
    each, the last event's blank line cut off. A line starts with a prefix iff LF +
    prefix occurs at its start, and lines hold no LF, so n lines joined after an LF
    hold n such starts iff each does.
    """
    lines = region.split(b"\n")
    n, rest = divmod(len(lines) + 1, 3)
    if rest or any(lines[2::3]):
        return None
    if b"\n".join([b"", *lines[0::3]]).count(b"\nevent: ") != n:
        return None
    datas = b"\n".join([b"", *lines[1::3]]).split(b"\ndata: ")
    if len(datas) != n + 1:
        return None
    del datas[0]
    return datas
