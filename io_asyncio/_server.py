"""`streamfn serve` on asyncio: the shared ASGI `App` with asyncio's primitives.

The application is `streamfn.asgi.App` (written once, against ASGI and a
`Runtime`); the decisions are the sans-I/O codec's (`streamfn.core.serve`).
This module supplies asyncio's half: `AsyncioRuntime`, and an `App` that
uses it unless told otherwise. `streamfn.io_asyncio._serve` runs it on hypercorn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from streamfn.asgi import _app as _shared
from streamfn.asgi._runtime import Flag

from ._shield import wait_shielded

__all__ = ["App", "AsyncioRuntime"]

T = TypeVar("T")


class _Tasks:
    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[None]] = []

    def start_soon(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        self.tasks.append(asyncio.ensure_future(fn(*args)))


class LoopFlag:
    """A one-shot event for asyncio, cheaper than ``asyncio.Event`` where the gateway
    waits once per streamed delta (the mailbox's reader): a list of futures, no lock
    object, and `AsyncioRuntime.wait` times it out with one loop timer instead of an
    ``asyncio.timeout`` block (its context object, its reschedule and the
    cancellation it turns into ``TimeoutError``)."""

    __slots__ = ("_is_set", "_waiters")

    def __init__(self) -> None:
        self._is_set = False
        self._waiters: list[asyncio.Future[None]] = []

    def set(self) -> None:
        if not self._is_set:
            self._is_set = True
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def is_set(self) -> bool:
        return self._is_set

    async def wait(self) -> bool:
        if not self._is_set:
            await self._until(None)
        return True

    async def _until(self, timeout: float | None) -> None:
        """Wait until set, at most ``timeout`` seconds (None: no limit)."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiters.append(waiter)
        timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            self._waiters.remove(waiter)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class AsyncioRuntime:
    """The `Runtime` on asyncio's running loop."""

    name = "asyncio"

    def __init__(self) -> None:
        self._system: set[asyncio.Future[None]] = set()

    def flag(self) -> Flag:
        return LoopFlag()

    async def wait(self, flag: Flag, timeout: float | None) -> bool:
        if timeout is None:
            await flag.wait()
            return True
        if type(flag) is LoopFlag:
            if not flag.is_set():
                await flag._until(timeout)
            return flag.is_set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await flag.wait()
        return flag.is_set()

    @contextlib.asynccontextmanager
    async def task_group(self) -> AsyncIterator[_Tasks]:
        group = _Tasks()
        try:
            yield group
        finally:
            for task in group.tasks:
                task.cancel()
            for task in group.tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def within(self, seconds: float, fn: Callable[[], Awaitable[T]]) -> T:
        async with asyncio.timeout(seconds):
            return await fn()

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    def clock(self) -> float:
        return asyncio.get_running_loop().time()

    def spawn_system(self, fn: Callable[[], Awaitable[None]]) -> None:
        task = asyncio.ensure_future(fn())
        self._system.add(task)
        task.add_done_callback(self._system.discard)

    def from_thread(self) -> Callable[[Callable[[], None]], None]:
        loop = asyncio.get_running_loop()

        def call(fn: Callable[[], None]) -> None:
            loop.call_soon_threadsafe(fn)

        return call

    async def wait_shielded(self, flag: Flag) -> None:
        await wait_shielded(flag.wait)


class App(_shared.App):
    """`streamfn.asgi.App` on asyncio unless another ``runtime`` is given."""

    default_runtime = AsyncioRuntime
