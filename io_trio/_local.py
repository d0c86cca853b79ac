"""The local model on trio: `streamfn.local._model.Generation`'s callback as a trio channel.

The model runs on its own threads and calls back with each item; here the
callback hands it to the trio run (``run_sync_soon``) and the stream waits,
shielded, for the model's last item before it ends, so a cancelled or
abandoned stream stops its generation within one token and none outlives it.
No nursery: an exception raised in the caller's loop (or a ``Cancelled`` or
``KeyboardInterrupt``) comes out as itself, never inside an ExceptionGroup.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import trio

from streamfn.core import Context, Event, Options
from streamfn.io_common._local_events import LocalEvents

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

    send, receive = trio.open_memory_channel[Item](math.inf)
    released = trio.Event()
    token = trio.lowlevel.current_trio_token()

    def deliver(item: Item) -> None:
        if is_last(item):
            released.set()
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            send.send_nowait(item)

    def post(item: Item) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(deliver, item)

    generation = model.generate(context, options, post)
    try:
        async with receive:
            yield LocalEvents(generation, receive.receive)
    finally:
        generation.stop()
        with trio.CancelScope(shield=True):  # the lane lets go within a token
            await released.wait()
