"""The request id and rate-limit headers of one answer, whichever route gives it.

`answer_headers` (called once per HTTP request, as it arrives) wraps ``send`` so the
response start carries CORS's headers, a request id and the upstream's rate limits
(`streamfn.core.serve._upstream_headers`), as known at that moment. What is known
comes from the request's producer, a task deeper down, through `note_start`: the
request's `UpstreamIds` is found in a context variable, which every task the request
starts inherits (asyncio and trio both copy the context to a task they spawn), so no
route, handler or producer signature carries it.
"""

from __future__ import annotations

from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Final

from streamfn.core._events import Event, Start
from streamfn.core.serve._responses import Stamps
from streamfn.core.serve._upstream_headers import UpstreamIds, upstream_headers

from ._messages import Send, adding_headers

__all__ = ["answer_headers", "current_request_id", "note_start"]

#: the `UpstreamIds` of the request this task serves (unset outside a request)
_ANSWER: Final[ContextVar[UpstreamIds | None]] = ContextVar("streamfn_answer", default=None)


def answer_headers(send: Send, cors: list[tuple[bytes, bytes]], stamps: Stamps) -> Send:
    """``send`` with the headers every answer carries: ``cors`` (if any), a request id
    (the upstream's once a `Start` named one, else ``req_`` and fresh hex) and the
    upstream's rate limits, reset times counted on ``stamps``' clock."""
    ids = UpstreamIds(own=f"req_{stamps.hex_id()}")
    _ANSWER.set(ids)

    def extra() -> list[tuple[bytes, bytes]]:
        now = datetime.fromtimestamp(stamps.unix_time(), UTC)
        return [*cors, *upstream_headers(ids, now)]

    return adding_headers(send, extra)


def note_start(event: Event) -> bool:
    """Whether ``event`` is a `Start`; the first of the current request's is kept for
    its answer's headers."""
    ids = _ANSWER.get()
    return ids.saw(event) if ids is not None else isinstance(event, Start)


def current_request_id() -> str | None:
    """The id this server gave the request the current task serves (None outside one)."""
    ids = _ANSWER.get()
    return None if ids is None else ids.own
