"""How long one request's upstream stream may run: the server's bound, or its reservation's.

An upstream that sends a delta just inside its idle timeout, again and again, never
trips that timer: without a bound on the whole it would hold a connection and a
worker slot for as long as it liked. So every request's relay runs under one
deadline (`Runtime.within`, a single timer, nothing per delta): the server's
``max_stream_seconds`` from the moment the request was read, or sooner, under a client key's
budget, the time its reservation holds (past it the store lets the reservation go
while the stream would still spend). The stream then ends with a terminal error in
the client's dialect that names the bound and how to raise it; the upstream call is
closed with it, and the record says ``cut`` (or the error, before any output).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from streamfn.core import Error
from streamfn.core.serve._client_keys import reservation_outlived

from ._keys import LEASE_SHARE
from ._observe import Flight

if TYPE_CHECKING:
    from ._app import App

__all__ = ["StreamLimit", "outlasted", "stream_limit", "within_limit"]


class StreamLimit:
    """When (``deadline``, on the runtime's clock) a request's stream must end, and the
    `Error` it then ends with."""

    __slots__ = ("deadline", "error")

    def __init__(self, deadline: float, error: Error) -> None:
        self.deadline = deadline
        self.error = error


def outlasted(seconds: float) -> Error:
    """The end of a stream that ran as long as the server lets any run (``seconds``)."""
    return Error.limit(
        f"cut: this answer ran for as long as this server lets a stream run ({seconds:g} s), "
        "so the upstream call was cancelled; continue the conversation in a new request, "
        "or ask the server's operator to raise --max-stream-seconds "
        "(ServerConfig.max_stream_seconds)"
    )


def stream_limit(app: App, flight: Flight | None) -> StreamLimit:
    """The bound of the stream ``flight`` is about to relay (None: timed from now)."""
    clock = app.runtime.clock()
    bound = app.config.max_stream_seconds
    limit = StreamLimit((clock if flight is None else flight.started) + bound, outlasted(bound))
    if flight is not None and flight.lease_until is not None and app.keys is not None:
        by_lease = clock + (flight.lease_until - time.time())  # Unix seconds to the clock's
        if by_lease < limit.deadline:
            limit = StreamLimit(
                by_lease, reservation_outlived(app.keys.store.lease_ttl * LEASE_SHARE)
            )
    return limit


async def within_limit(
    app: App,
    flight: Flight | None,
    relay: Callable[[], Awaitable[None]],
    fail: Callable[[Error], Awaitable[None]],
) -> None:
    """``await relay()`` within ``flight``'s `stream_limit`; past it, the relay cancelled
    (its upstream call closed with it), ``fail`` with the limit's `Error`."""
    limit = stream_limit(app, flight)
    clock = app.runtime.clock
    try:
        await app.runtime.within(max(0.0, limit.deadline - clock()), relay)
    except TimeoutError:
        if clock() < limit.deadline:  # the backend's own, not the bound's
            raise
        await fail(limit.error)
