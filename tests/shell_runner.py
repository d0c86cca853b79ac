"""Run a coroutine under any shell (the blocking one through `_SyncAsAsync`) with a fresh client and a hard time limit;
shared by the shell suite and the tests of other rooms that drive a shell."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from streamfn.core import Context, Event, Model, Options
from streamfn.io_asyncio import Client as AsyncioClient
from streamfn.io_sync import Client as SyncClient
from streamfn.io_trio import Client as TrioClient

#: every shell the suites run on
SHELLS = ["trio", "asyncio", "sync"]

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


class _Overtime(BaseException):
    """The blocking shell's hard time limit (a BaseException: no shell code catches it)."""


async def _each(events: Iterator[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


class _SyncAsAsync:
    """A blocking `SyncClient` behind the suite's async API: every call blocks and
    returns, nothing ever suspends, so `blocking` runs a test's coroutine to its end."""

    def __init__(self, **kwargs: Any) -> None:
        self.client = SyncClient(**kwargs)

    async def __aenter__(self) -> _SyncAsAsync:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.client.close()

    @property
    def idle_connections(self) -> int:
        return self.client.idle_connections

    @property
    def responses_upgraded(self) -> set[tuple[str, str, str]]:
        return self.client.responses_upgraded

    @asynccontextmanager
    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[AsyncIterator[Event]]:
        with self.client.stream(*args, **kwargs) as events:
            yield _each(events)

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        return self.client.complete(*args, **kwargs)

    async def count_tokens(self, *args: Any, **kwargs: Any) -> Any:
        return self.client.count_tokens(*args, **kwargs)

    async def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def blocking(coro: Coroutine[Any, Any, Any], limit: float) -> Any:
    """Run a coroutine that never suspends, interrupted (`_Overtime`) after ``limit`` s."""

    def overtime(signum: int, frame: object) -> None:
        raise _Overtime(f"over the {limit} s limit")

    previous = signal.signal(signal.SIGALRM, overtime)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    coro.close()
    raise AssertionError("the blocking shell suspended")


def client_class(shell: str) -> Any:
    return {"trio": TrioClient, "asyncio": AsyncioClient, "sync": _SyncAsAsync}[shell]


def run(
    shell: str,
    fn: Callable[..., Awaitable[Any]],
    *args: Any,
    limit: float = 10.0,
    environ: dict[str, str] | None = None,
) -> Any:
    """Run ``fn(client, *args)`` under ``shell`` with a fresh client (its environment
    ``environ``, else none) and a hard time limit."""
    client_cls = client_class(shell)

    async def main() -> Any:
        async with client_cls(environ=environ or {}) as client:
            return await fn(client, *args)

    started = time.monotonic()
    if shell == "sync":
        result = blocking(main(), limit)
    elif shell == "trio":

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


async def collect(
    client: Any, model: Model, options: Options = FAST, context: Context | None = None
) -> list[Event]:
    context = Context.of("hi") if context is None else context
    async with client.stream(model, context, options) as events:
        return [event async for event in events]
