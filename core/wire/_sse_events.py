"""What `streamfn.core.wire._sse` (which re-exports them) hands out: the event and
comment items of `SSEDecoder.feed`, and `decode_data` for the raw data of
`SSEDecoder.feed_to`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

__all__ = ["SSEComment", "ServerSentEvent", "decode_data"]

T = TypeVar("T")


def decode_data(decode: Callable[[bytes | str], T], data: bytes) -> T:
    """``decode`` (a msgspec decoder) on an event's raw data, as if it were the text.

    The spec decodes event data as UTF-8 with U+FFFD for invalid bytes; msgspec
    refuses invalid UTF-8 in bytes. So the bytes go first (no copy, the usual
    case) and only data that fails is decoded the spec's way and tried again,
    which gives exactly the result (or the error) of decoding the text.
    """
    try:
        return decode(data)
    except Exception:
        return decode(data.decode("utf-8", "replace"))


class ServerSentEvent(msgspec.Struct, frozen=True, gc=False):
    """One dispatched event. ``id`` is the last event id seen so far (it persists
    across events, as the spec says); ``retry`` is set only on the event after a
    valid ``retry:`` field."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEComment(msgspec.Struct, frozen=True, gc=False):
    """A ``:`` line: servers send these as keep-alives while the model thinks."""

    text: str
