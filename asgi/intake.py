"""Waiting for what a client sends, bounded by a deadline and by the server's shutdown.

A request still sending its body when the server begins shutting down would
otherwise wait out the grace period and be cut by the HTTP server (a 500 and a
traceback in the log); `interruptible` ends such a wait at once, so the `App`
can answer a 503 with ``Retry-After`` while the connection is still its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from streamfn.core.serve.routes import body_too_slow
from streamfn.core.serve.status import shutting_down_refusal

from .messages import Receive
from .runtime import Flag, Runtime

__all__ = ["ShutdownBegan", "interruptible", "receive_body"]

T = TypeVar("T")


class ShutdownBegan(Exception):
    """The server began shutting down while the work was waiting."""


async def interruptible(
    runtime: Runtime, waiting: set[Flag], seconds: float, work: Callable[[], Awaitable[T]]
) -> T:
    """``await work()``; `TimeoutError` after ``seconds``; `ShutdownBegan` as soon as
    the flag this call adds to ``waiting`` is set (shutdown sets every flag there).
    ``work`` is cancelled in either case; its own exceptions pass through."""
    ended = runtime.flag()  # the work finished or failed, or shutdown began
    outcome: list[tuple[T | None, Exception | None]] = []

    async def run() -> None:
        try:
            outcome.append((await work(), None))
        except Exception as exc:  # handed to the caller below, not to the task group
            outcome.append((None, exc))
        finally:
            ended.set()

    waiting.add(ended)
    try:
        async with runtime.task_group() as tasks:
            tasks.start_soon(run)
            finished = await runtime.wait(ended, seconds)
    finally:  # leaving the group cancelled the work if it was still running
        waiting.discard(ended)
    if not outcome:
        if finished:
            raise ShutdownBegan
        raise TimeoutError
    value, error = outcome[0]
    if error is not None:
        raise error
    return value  # type: ignore[return-value]


async def receive_body(
    runtime: Runtime,
    uploads: set[Flag],
    timeout: float,
    receive: Receive,
    held: list[int],
    read: Callable[[Receive, list[int]], Awaitable[bytes]],
) -> bytes:
    """``await read(receive, held)`` (the whole body, counted in ``held[0]``), or a 408
    past ``timeout``, or a 503 with the connection closed once shutdown begins."""
    try:
        return await interruptible(runtime, uploads, timeout, lambda: read(receive, held))
    except TimeoutError:
        raise body_too_slow(timeout) from None
    except ShutdownBegan:
        refusal = shutting_down_refusal()
        refusal.headers.append((b"connection", b"close"))
        raise refusal from None
