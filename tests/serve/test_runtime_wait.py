"""The asyncio runtime's flag and timed wait: the gateway waits once per streamed
delta (the mailbox's reader), so the wait is a future and one loop timer, not an
``asyncio.timeout`` block around an ``asyncio.Event``; it still times out, wakes
every waiter and leaves nothing behind when cancelled."""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any

import pytest

from streamfn.io_asyncio._server import AsyncioRuntime


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_timed_wait_runs_no_timeout_block_nor_event() -> None:
    async def main() -> list[str]:
        runtime, loop = AsyncioRuntime(), asyncio.get_running_loop()
        seen: list[str] = []

        def profile(frame: FrameType, event: str, arg: object) -> None:
            name = frame.f_code.co_filename
            if event == "call" and name.endswith(("asyncio/timeouts.py", "asyncio/locks.py")):
                seen.append(f"{name.rsplit('/', 1)[1]}:{frame.f_code.co_name}")

        flag = runtime.flag()
        loop.call_soon(flag.set)
        sys.setprofile(profile)
        try:
            assert await runtime.wait(flag, 15.0)
        finally:
            sys.setprofile(None)
        return seen

    assert run(main()) == []


def test_it_times_out_wakes_every_waiter_and_cleans_up() -> None:
    async def main() -> None:
        runtime, loop = AsyncioRuntime(), asyncio.get_running_loop()
        flag = runtime.flag()
        assert not await runtime.wait(flag, 0.01)  # nobody set it
        assert not await runtime.wait(flag, 0.0)
        waiters = [asyncio.ensure_future(runtime.wait(flag, 30.0)) for _ in range(3)]
        waiters.append(asyncio.ensure_future(flag.wait()))
        await asyncio.sleep(0)
        loop.call_soon(flag.set)
        assert await asyncio.gather(*waiters) == [True] * 4
        assert await runtime.wait(flag, 0.0)  # already set: at once
        other = runtime.flag()
        task = asyncio.ensure_future(runtime.wait(other, 30.0))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert other._waiters == []  # type: ignore[attr-defined]
        before = len(loop._scheduled)  # type: ignore[attr-defined]
        flag2 = runtime.flag()
        loop.call_soon(flag2.set)
        await runtime.wait(flag2, 30.0)
        assert sum(not h.cancelled() for h in loop._scheduled) <= before  # type: ignore[attr-defined]

    run(main())
