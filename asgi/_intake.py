"""A request's body, waited for within a deadline and only until shutdown begins.

A request still sending its body when the server begins shutting down would
otherwise wait out the grace period and be cut by the HTTP server (a 500 and a
traceback in the log); `receive_body` ends such a wait at once, so the `App`
answers a 503 with ``Retry-After`` while the connection is still its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from streamfn.core.serve import HTTPError
from streamfn.core.serve._routes import BodyBudget, body_too_slow, disconnected_early
from streamfn.core.serve._status import shutting_down_refusal

from ._messages import Receive
from ._runtime import Flag, Runtime

__all__ = ["body_chunks", "receive_body"]


async def body_chunks(budget: BodyBudget, receive: Receive, held: list[int]) -> bytes:
    """An HTTP request's whole body, each chunk charged to ``budget`` as it arrives (and
    counted in ``held[0]``); a client that disconnects first is a 400."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise disconnected_early()
        chunk = message.get("body", b"")
        budget.hold(held[0], len(chunk))
        held[0] += len(chunk)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def receive_body(
    runtime: Runtime,
    uploads: set[Flag],
    timeout: float,
    receive: Receive,
    held: list[int],
    read: Callable[[Receive, list[int]], Awaitable[bytes]],
) -> bytes:
    """``await read(receive, held)`` (the whole body, counted in ``held[0]``), or a 408
    past ``timeout``, or a 503 with the connection closed as soon as the flag this call
    adds to ``uploads`` is set (shutdown sets every flag there). The read is cancelled
    in either case; the `HTTPError` it raises itself passes through."""
    ended = runtime.flag()  # the body is in, or the read failed, or shutdown began
    outcome: list[bytes | HTTPError] = []

    async def run() -> None:
        try:
            outcome.append(await read(receive, held))
        except HTTPError as exc:  # handed to the caller below, not to the task group
            outcome.append(exc)
        finally:
            ended.set()

    uploads.add(ended)
    try:
        async with runtime.task_group() as tasks:
            tasks.start_soon(run)
            finished = await runtime.wait(ended, timeout)
    finally:  # leaving the group cancelled the read if it was still running
        uploads.discard(ended)
    if not outcome:
        if not finished:
            raise body_too_slow(timeout)
        refusal = shutting_down_refusal()
        refusal.headers.append((b"connection", b"close"))
        raise refusal
    if isinstance(outcome[0], HTTPError):
        raise outcome[0]
    return outcome[0]
