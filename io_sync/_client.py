"""The blocking shell: streamfn without an event loop, for scripts and notebooks.

The same program as the trio and asyncio shells, by construction: `ClientBase`
(the pool, fallbacks, the Responses upgrade, text tool calls, tracing, and the
loop over `streamfn.core.http._driver.drive`'s steps) runs here unchanged, with
I/O primitives that block on a socket until the step's deadline instead of
awaiting. Its coroutines therefore never suspend, and `_run` takes each one
to its end with a single ``send(None)``: no event loop, no thread.

Closing a stream (leaving the ``with`` block, or an exception such as
KeyboardInterrupt inside a blocking read) closes its socket at once.
"""

from __future__ import annotations

import functools
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from contextlib import (
    AbstractContextManager,
    asynccontextmanager,
    closing,
    contextmanager,
)
from typing import Any, Self, TypeVar, Unpack

from streamfn.client import ClientBase, ClientSettings, PooledConnection
from streamfn.client._pool import PoolKey
from streamfn.core import AssistantMessage, Context, Error, Event, Model, Options, TokenCount
from streamfn.core.http import EXPIRED, Connect, Expired, TunnelError, connect_error
from streamfn.core.http._steps import ReceiveAnswer, SendAnswer
from streamfn.io_common._process import PROCESS

from ._sockets import READ_SIZE, connect, readable, time_left

__all__ = ["Client", "complete", "count_tokens", "default_client", "stream"]

T = TypeVar("T")

SUSPENDED = "the blocking shell's loop tried to suspend; it must never await an event loop"


def _run(awaitable: Awaitable[T]) -> T:
    """The result of a coroutine that never suspends (all its I/O blocks instead)."""
    steps = awaitable.__await__()
    try:
        steps.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    steps.close()
    raise RuntimeError(SUSPENDED)


def _iterate(events: AsyncIterator[Event]) -> Iterator[Event]:
    """The events of a stream whose every step blocks instead of suspending
    (`_run` inlined: this runs once per event)."""
    following = events.__anext__
    while True:
        step = following().__await__()
        try:
            step.send(None)
        except StopIteration as done:
            yield done.value
            continue
        except StopAsyncIteration:
            return
        step.close()
        raise RuntimeError(SUSPENDED)


class _Connection(PooledConnection):
    """A blocking socket (maybe TLS, maybe tunnelled) in the pool."""

    __slots__ = ("sock",)

    def __init__(self, key: PoolKey, sock: socket.socket) -> None:
        super().__init__(key)
        self.sock = sock


class _BlockingLoop(ClientBase[_Connection]):
    """`ClientBase` with I/O that blocks until the step's deadline (never suspends)."""

    ambient = PROCESS  # the environment, randomness, wall clock and TLS defaults

    def _clock(self) -> Callable[[], float]:
        return time.monotonic

    async def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return fn(*args)  # this shell blocks anyway

    async def _close(self, conn: _Connection) -> None:
        conn.sock.close()

    async def _readable(self, conn: _Connection) -> bool:
        return readable(conn.sock)

    async def _open(self, step: Connect) -> _Connection | Error | Expired:
        tls = self.ssl_context if step.target.scheme == "https" else None
        try:
            sock = connect(step.target, step.proxy, tls, step.deadline)
        except TunnelError as exc:
            return Error.network(str(exc))
        except TimeoutError:
            return EXPIRED
        except OSError as exc:  # ssl.SSLError and socket errors alike
            return connect_error(step.target, exc)
        return _Connection(step.key, sock)

    async def _send(self, conn: _Connection, data: bytes, deadline: float) -> SendAnswer:
        left = time_left(deadline)
        if left <= 0:
            return EXPIRED
        try:
            conn.sock.settimeout(left)
            conn.sock.sendall(data)
        except TimeoutError:
            return EXPIRED
        except OSError as exc:
            return exc
        return None

    async def _receive(self, conn: _Connection, deadline: float) -> ReceiveAnswer:
        left = time_left(deadline)
        if left <= 0:
            return EXPIRED
        try:
            conn.sock.settimeout(left)
            return conn.sock.recv(READ_SIZE)
        except TimeoutError:
            return EXPIRED
        except OSError as exc:
            return exc

    @asynccontextmanager
    async def _local_stream(
        self, model: Model, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        from streamfn.local._provider import load_local

        local = await self._in_thread(load_local, model, self.environ)
        with closing(local.stream_sync(context, options)) as events:
            yield _never_suspending(events)


async def _never_suspending(events: Iterator[Event]) -> AsyncIterator[Event]:
    """A blocking iterator as the async iterator `_iterate` drives (it never awaits)."""
    for event in events:
        yield event


class Client:
    """A blocking client with the async shells' configuration, pool and limits.

    ``with Client() as client:`` closes its idle connections at the end (or call
    `close`). The keyword arguments are every shell's (`ClientSettings`). One
    client serves one thread at a time.
    """

    def __init__(self, **settings: Unpack[ClientSettings]) -> None:
        self._loop = _BlockingLoop(**settings)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every idle connection."""
        _run(self._loop.aclose())

    @property
    def idle_connections(self) -> int:
        return self._loop.idle_connections

    @property
    def max_idle_per_host(self) -> int:
        return self._loop.max_idle_per_host

    @property
    def responses_upgraded(self) -> set[tuple[str, str, str]]:
        """Models found to need the Responses API (the Responses upgrade)."""
        return self._loop.responses_upgraded

    @contextmanager
    def stream(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        raise_on_error: bool = False,
    ) -> Generator[Iterator[Event], None, None]:
        """``with client.stream(m, ctx) as events: for ev in events: ...``

        Leaving the block closes the connection at once unless the response
        was read to its end. A failure is the last event, an `Error` (a missing
        key too: an ``auth`` error naming the variable to set, before any
        connection); ``raise_on_error=True`` raises `StreamError` instead.
        """
        manager = self._loop.stream(model, context, options, raise_on_error=raise_on_error)
        events = _run(manager.__aenter__())
        try:
            yield _iterate(events)
        except BaseException:
            if not _run(manager.__aexit__(*sys.exc_info())):
                raise
        else:
            _run(manager.__aexit__(None, None, None))

    def complete(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        raise_on_error: bool = True,
    ) -> AssistantMessage:
        """The whole answer as one message (see `ClientBase.complete`)."""
        return _run(self._loop.complete(model, context, options, raise_on_error=raise_on_error))

    def count_tokens(
        self,
        model: Model,
        context: Context,
        options: Options | None = None,
        *,
        estimate: bool = False,
    ) -> TokenCount:
        """How many input tokens ``context`` is for ``model`` (see `ClientBase.count_tokens`)."""
        return _run(self._loop.count_tokens(model, context, options, estimate=estimate))


@functools.cache
def default_client() -> Client:
    """The client behind the module-level functions.

    It keeps no idle connections, like the async shells' default clients:
    nothing would close them. Create a `Client` for keep-alive reuse.
    """
    return Client(max_idle_per_host=0)


def stream(
    model: Model,
    context: Context,
    options: Options | None = None,
    *,
    raise_on_error: bool = False,
) -> AbstractContextManager[Iterator[Event]]:
    """Stream one assistant turn: ``with stream(m, ctx) as events: for ev in events: ...``.

    A failure is the last event, an `Error`; ``raise_on_error=True`` raises `StreamError`
    instead."""
    return default_client().stream(model, context, options, raise_on_error=raise_on_error)


def complete(
    model: Model,
    context: Context,
    options: Options | None = None,
    *,
    raise_on_error: bool = True,
) -> AssistantMessage:
    """The whole assistant turn as one message; an `Error` raises `CompletionError`
    (``raise_on_error=False`` returns the message with ``error_message`` set)."""
    return default_client().complete(model, context, options, raise_on_error=raise_on_error)


def count_tokens(
    model: Model,
    context: Context,
    options: Options | None = None,
    *,
    estimate: bool = False,
) -> TokenCount:
    """How many input tokens ``context`` is for ``model``, asked of the provider (the
    local model: its tokenizer); ``estimate=True`` accepts a marked estimate where the
    provider cannot count."""
    return default_client().count_tokens(model, context, options, estimate=estimate)
