"""Event streams as the lists each read decodes to: what the shells' stages pass along.

A provider's decoder turns one socket read into a list of events; the shells'
stages (fallback, the Responses upgrade, paused turns, text tool calls, tool
checks, tracing) work on those lists as they come, so a read costs one step
through each stage whatever its number of events, and the server can encode
and send each list in one write. The per-event view callers iterate
(`ClientBase.stream`) is `flattened` over the same stream: both see the same
events in the same order; only their grouping differs.

A batch is never empty.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable

from ..core._events import Event, Start
from ..core._messages import Context
from ..core._models import Model
from ..core._options import Options

__all__ = ["Batches", "OpenBatches", "first_answer", "first_output", "flattened", "one_batch"]

#: one stream, a list of events per step (never an empty one)
Batches = AsyncGenerator[list[Event], None]
#: opens one model's stream of batches
OpenBatches = Callable[[Model, Context, Options], Batches]


async def one_batch(events: list[Event]) -> Batches:
    """A stream that is ``events`` (not empty), in one read: a stream decided before
    any request (a missing key)."""
    yield events


async def first_answer(batches: AsyncIterator[list[Event]]) -> list[Event]:
    """The events read until one after `Start` came (all of that read's): what decides
    whether a stream fails before output (its first event after the `Start` events
    is an `Error`) or answers. Empty when the stream ended first."""
    head: list[Event] = []
    async for batch in batches:
        head += batch
        if any(not isinstance(event, Start) for event in batch):
            break
    return head


def first_output(events: list[Event]) -> Event | None:
    """The first event of ``events`` that is not a `Start`, or None."""
    for event in events:
        if not isinstance(event, Start):
            return event
    return None


async def flattened(batches: AsyncIterator[list[Event]]) -> AsyncGenerator[Event, None]:
    """The events of ``batches`` one by one (the per-event view of a stream)."""
    try:
        async for batch in batches:
            for event in batch:
                yield event
    finally:
        aclose = getattr(batches, "aclose", None)
        if aclose is not None:
            await aclose()
