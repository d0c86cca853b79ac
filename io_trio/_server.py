"""`streamfn serve` on trio: the shared ASGI `App` on hypercorn's trio worker.

The application is `streamfn.asgi.App`, the same one asyncio serves; this
module supplies trio's primitives (`TrioRuntime`) and runs it with
``hypercorn.trio``. Backends must stream on trio too: give `ProviderBackend`
a `streamfn.io_trio.Client` (``streamfn serve --shell trio`` does).

``max_connections`` caps open connections as on asyncio (`streamfn.io_trio._capped`).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import trio

from streamfn.asgi import _app as _shared
from streamfn.asgi._hosting import hypercorn_arguments, hypercorn_worker
from streamfn.asgi._runtime import Flag

__all__ = ["App", "TrioRuntime", "serve"]

T = TypeVar("T")


class _Tasks:
    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery

    def start_soon(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        self.nursery.start_soon(fn, *args)


class TrioRuntime:
    """The `Runtime` on the running trio loop."""

    name = "trio"

    def flag(self) -> Flag:
        return trio.Event()

    async def wait(self, flag: Flag, timeout: float | None) -> bool:
        if timeout is None:
            await flag.wait()
            return True
        with trio.move_on_after(timeout):
            await flag.wait()
        return flag.is_set()

    @contextlib.asynccontextmanager
    async def task_group(self) -> AsyncIterator[_Tasks]:
        # The block's own exception leaves as itself, not inside an ExceptionGroup.
        error: BaseException | None = None
        async with trio.open_nursery() as nursery:
            try:
                yield _Tasks(nursery)
            except BaseException as exc:
                error = exc
            finally:
                nursery.cancel_scope.cancel()
        if error is not None:
            raise error

    async def within(self, seconds: float, fn: Callable[[], Awaitable[T]]) -> T:
        try:
            with trio.fail_after(seconds):
                return await fn()
        except trio.TooSlowError:
            raise TimeoutError(f"not done within {seconds:g} s") from None

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args)

    def clock(self) -> float:
        return trio.current_time()

    def spawn_system(self, fn: Callable[[], Awaitable[None]]) -> None:
        trio.lowlevel.spawn_system_task(fn)

    def from_thread(self) -> Callable[[Callable[[], None]], None]:
        return trio.lowlevel.current_trio_token().run_sync_soon

    async def wait_shielded(self, flag: Flag) -> None:
        with trio.CancelScope(shield=True):
            await flag.wait()


class App(_shared.App):
    """`streamfn.asgi.App` on trio unless another ``runtime`` is given."""

    default_runtime = TrioRuntime


async def serve(
    app: _shared.App,
    sock: socket.socket,
    stop: trio.Event,
    *,
    max_connections: int = 4096,
    head_timeout: float = 10.0,
    log_errors: bool = True,
    allow_h2c: bool = False,
) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stop`` is set, then shut down
    (the order of `streamfn.io_asyncio.serve`: hypercorn stops accepting
    while the app's shutdown runs beside it)."""
    worker_serve = hypercorn_worker("trio", "streamfn.io_trio.serve")
    from ._capped import cap_connections

    app.bind(TrioRuntime())
    wrapped, config, options = hypercorn_arguments(
        app, sock, stop, head_timeout=head_timeout, log_errors=log_errors, allow_h2c=allow_h2c
    )
    cap_connections(config, max_connections)
    await worker_serve(wrapped, config, **options)
