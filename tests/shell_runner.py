"""Run a coroutine under either shell with a fresh client and a hard time limit;
shared by the shell suite and the tests of other rooms that drive a shell."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from streamfn.core import Context, Event, Model, Options
from streamfn.io_asyncio import Client as AsyncioClient
from streamfn.io_trio import Client as TrioClient

KEY = "sk-test-PLANTED-SECRET-0123456789"
FAST = Options(
    api_key=KEY,
    connect_timeout=2.0,
    first_byte_timeout=0.3,
    idle_timeout=0.3,
    max_attempts=3,
    retry_base_delay=0.01,
    retry_max_delay=0.05,
)


def run(shell: str, fn: Callable[..., Awaitable[Any]], *args: Any, limit: float = 10.0) -> Any:
    """Run ``fn(client, *args)`` under ``shell`` with a fresh client and a hard time limit."""
    client_cls = TrioClient if shell == "trio" else AsyncioClient

    async def main() -> Any:
        async with client_cls(environ={}) as client:
            return await fn(client, *args)

    started = time.monotonic()
    if shell == "trio":

        async def bounded() -> Any:
            with trio.fail_after(limit):
                return await main()

        result = trio.run(bounded)
    else:

        async def bounded_asyncio() -> Any:
            async with asyncio.timeout(limit):
                return await main()

        result = asyncio.run(bounded_asyncio())
    assert time.monotonic() - started < limit
    return result


async def collect(client: Any, model: Model, options: Options = FAST) -> list[Event]:
    async with client.stream(model, Context.of("hi"), options) as events:
        return [event async for event in events]
