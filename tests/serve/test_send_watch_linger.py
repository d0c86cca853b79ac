"""The send-stall watcher of a connection outlives one write: a stream's writes come a
loop turn apart (a live model's deltas, a response's head and its end), and a watcher
started and ended for each cost a task per write. It stays one quiet look, ends after
that, stops at once when the connection closes, and still ends a write that waits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
import trio

from streamfn.asgi._runtime import Runtime
from streamfn.asgi._send_watch import SendWatch
from streamfn.io_asyncio._server import AsyncioRuntime
from streamfn.io_trio._server import TrioRuntime

#: the watcher looks every quarter of it; the waits below are counts of looks
TIMEOUT = 0.2


def _run(shell: str, fn: Callable[[Runtime], Awaitable[None]]) -> None:
    if shell == "asyncio":
        asyncio.run(fn(AsyncioRuntime()))  # type: ignore[arg-type]
    else:
        trio.run(fn, TrioRuntime())


class _Counting:
    """A runtime's `spawn_system` counted."""

    def __init__(self, runtime: Runtime) -> None:
        self.spawned = 0
        self._spawn = runtime.spawn_system

    def __call__(self, fn: Callable[[], Awaitable[None]]) -> None:
        self.spawned += 1
        self._spawn(fn)


@pytest.mark.parametrize("shell", ["asyncio", "trio"])
def test_a_streams_writes_share_one_watcher(shell: str) -> None:
    got: dict[str, object] = {}

    async def main(runtime: Runtime) -> None:
        counting = _Counting(runtime)
        runtime.spawn_system = counting  # type: ignore[method-assign]
        aborted: list[bool] = []
        watch = SendWatch(runtime, TIMEOUT, lambda: None, lambda: aborted.append(True))
        for _ in range(20):  # twenty writes, each done at once, a loop turn apart
            watch.begin()
            watch.end()
            await runtime.wait(runtime.flag(), 0.001)
        got["spawned_while_writing"] = counting.spawned
        # quiet: it lingers one look, then ends (bound: many looks, a hang guard)
        for _ in range(200):
            if not watch._watching:
                break
            await runtime.wait(runtime.flag(), TIMEOUT / 4)
        got["ended_when_quiet"] = not watch._watching
        watch.begin()  # a later write starts a watcher again
        watch.end()
        watch.close()  # the connection closed: it stops at once
        await runtime.wait(runtime.flag(), 0.01)
        got["stopped_on_close"] = not watch._watching
        got["spawned"] = counting.spawned
        got["aborted"] = bool(aborted)

    _run(shell, main)
    assert got == {
        "spawned_while_writing": 1,  # one per write before: twenty
        "ended_when_quiet": True,
        "stopped_on_close": True,
        "spawned": 2,
        "aborted": False,
    }


@pytest.mark.parametrize("shell", ["asyncio", "trio"])
def test_a_write_that_waits_after_a_quiet_spell_is_still_ended(shell: str) -> None:
    got: dict[str, object] = {}

    async def main(runtime: Runtime) -> None:
        aborted: list[float] = []
        watch = SendWatch(runtime, TIMEOUT, lambda: None, lambda: aborted.append(runtime.clock()))
        watch.begin()
        watch.end()
        await runtime.wait(runtime.flag(), TIMEOUT / 8)  # the watcher lingers, quiet
        began = runtime.clock()
        watch.begin()  # this write never completes: the client takes nothing
        for _ in range(100):  # a hang guard: many times the timeout
            if aborted:
                break
            await runtime.wait(runtime.flag(), TIMEOUT / 4)
        got["aborted"] = bool(aborted)
        # timed from the write's start, not from the quiet look before it
        got["waited_the_timeout"] = bool(aborted) and aborted[0] - began >= TIMEOUT
        watch.close()

    _run(shell, main)
    assert got == {"aborted": True, "waited_the_timeout": True}
