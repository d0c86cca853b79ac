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
(`bytes.split` finds the events; a join and one ``find`` prove that no event
had a second line). Anything else (a comment, ``id:``, ``retry:``, ``data:``
without its space, multi-line data, CRLF, an event type the caller wants
apart) returns None and the region goes through the general line parser,
which then ends the region in the same clean state it started in. So the
fast path never decides anything: it only recognises what needs no deciding.
"""

from __future__ import annotations

from typing import Final

__all__ = ["region_datas"]

_DATA: Final = b"data: "
_EVENT: Final = b"event: "


def region_datas(region: bytes, any_type: bool) -> list[bytes] | None:
    """The data of every event in ``region`` (events up to, not including, the
    final blank line's ``\\n\\n``), or None when the region is not plain.

    ``any_type``: events with an ``event:`` line may be read too (the caller
    ignores event types).
    """
    # `in` with an int needle is one memchr and no method call: on a live
    # stream's one-event regions the call costs more than the scan
    if 13 in region:  # CR
        return None
    if region[:6] == _DATA:
        if 10 not in region:  # one event: the usual region of a live stream
            return [region[6:]]
        datas = region[6:].split(b"\n\ndata: ")
        # a split piece holding a LF came from an event with another line
        return None if 10 in b"".join(datas) else datas
    if any_type and region[:7] == _EVENT:
        return _typed_datas(region)
    return None


def _typed_datas(region: bytes) -> list[bytes] | None:
    """Events of ``event: <type>`` then ``data: <line>``: three lines each, the
    last event's blank line cut off. Checked by counting, not by looping: a
    line starts with a prefix iff LF + prefix occurs at its start, and lines
    hold no LF, so n lines joined after an LF hold n such starts iff each does.
    """
    head, found, data = region.partition(b"\ndata: ")
    if found and 10 not in data and 10 not in head:
        return [data]  # one event: the usual region of a live stream
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
