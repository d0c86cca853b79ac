"""The local model on asyncio: `streamfn.local._model.Generation`'s callback as an
asyncio queue.

The model runs on its own threads and calls back with each item; here the
callback hands it to the event loop (``call_soon_threadsafe``) and the stream
waits for the model's last item before it ends, even when cancelled meanwhile
(the cancellation is raised after), so a cancelled or abandoned stream stops
its generation within one token and none outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from streamfn.core import Context, Event, Options
from streamfn.io_common._local_events import LocalEvents

from ._shield import wait_shielded

if TYPE_CHECKING:
    from streamfn.local import LocalModel

__all__ = ["stream_local"]


@contextlib.asynccontextmanager
async def stream_local(
    model: LocalModel, context: Context, options: Options | None = None
) -> AsyncIterator[AsyncIterator[Event]]:
    """``async with stream_local(model, ctx) as events: async for event in events``."""
    # imported here, not at the top: importing the shell must not import the local model
    from streamfn.local._batching import Item, is_last

    loop = asyncio.get_running_loop()
    items: asyncio.Queue[Item] = asyncio.Queue()
    released = asyncio.Event()

    def deliver(item: Item) -> None:
        if is_last(item):
            released.set()
        items.put_nowait(item)

    def post(item: Item) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed under a leaked stream
            loop.call_soon_threadsafe(deliver, item)

    generation = model.generate(context, options, post)
    try:
        yield LocalEvents(generation, items.get)
    finally:
        generation.stop()
        await wait_shielded(released.wait)
