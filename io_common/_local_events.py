"""The local model's events as an async iterator, for the event-loop shells' adapters.

`streamfn.local._model.Generation` offers threads and a callback; each event
loop's adapter (`streamfn.io_trio._local`, `streamfn.io_asyncio._local`) hands
the model's items to a queue of its loop and iterates with `LocalEvents`,
which only awaits that queue's ``receive``: nothing here picks an event loop.

A class rather than an async generator: leaving the ``async for`` early
needs no finaliser, and an exception the caller raises comes out as itself.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from streamfn.core import Event

if TYPE_CHECKING:
    from streamfn.local._batching import Item
    from streamfn.local._model import Generation

__all__ = ["LocalEvents"]


class LocalEvents:
    """``generation``'s events; ``receive`` awaits the next item the model posted."""

    def __init__(self, generation: Generation, receive: Callable[[], Awaitable[Item]]) -> None:
        self._generation = generation
        self._receive = receive
        self._ready: deque[Event] = deque(generation.opening())

    def __aiter__(self) -> LocalEvents:
        return self

    async def __anext__(self) -> Event:
        while not self._ready:
            if self._generation.finished:
                raise StopAsyncIteration
            self._ready.extend(self._generation.receive(await self._receive()))
        return self._ready.popleft()
