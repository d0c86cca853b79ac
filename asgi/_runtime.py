"""What the server needs from an event loop, and the two structures it builds from it.

The `App` is written once against ASGI and this small `Runtime`: events,
a wait with a timeout, a cancel-at-exit task group, a deadline, a worker
thread, a clock, a task that outlives a request (shutdown), and a way in
from another thread (the local model's loop). Each shell
implements it in a few lines (`streamfn.io_asyncio._server`,
`streamfn.io_trio._server`); hypercorn runs the same app on either loop.

On that contract live the per-request `Mailbox` (backend events in, with
backpressure, plus the disconnect and shutdown signals) and the `Slots`
that bound how many backend streams run at once.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, Protocol, TypeVar

from streamfn.core._events import Done, Error, Event, TextDelta, ThinkingDelta, ToolCallDelta
from streamfn.core.serve._responses import MAX_BATCH
from streamfn.core.serve._status import shutting_down, shutting_down_refusal

__all__ = [
    "ABORTED",
    "DISCONNECTED",
    "EVENT_OVERHEAD",
    "FIRST_TOKEN",
    "TIMEOUT",
    "Flag",
    "Mailbox",
    "Marker",
    "Runtime",
    "Slots",
    "TaskGroup",
    "batch_bytes",
    "ended_early",
    "event_bytes",
    "first_token_at",
    "next_batch",
]

T = TypeVar("T")

log = logging.getLogger("streamfn")

#: what an event costs in a mailbox beside its text (the object and its fields)
EVENT_OVERHEAD: Final = 200


class Flag(Protocol):
    """A one-shot event (``asyncio.Event`` and ``trio.Event`` both are one)."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    async def wait(self) -> Any: ...


class TaskGroup(Protocol):
    """Tasks of one request: all cancelled and awaited when the group's block ends."""

    def start_soon(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None: ...


class Runtime(Protocol):
    """The event-loop primitives a shell hands to the `App`."""

    name: str

    def flag(self) -> Flag: ...

    async def wait(self, flag: Flag, timeout: float | None) -> bool:
        """Wait for ``flag`` at most ``timeout`` seconds (None: no limit); whether it is set."""
        ...

    def task_group(self) -> AbstractAsyncContextManager[TaskGroup]:
        """A group whose tasks are cancelled and awaited when its block exits; an
        exception from the block passes through as itself (not in a group)."""
        ...

    async def within(self, seconds: float, fn: Callable[[], Awaitable[T]]) -> T:
        """``await fn()``, or `TimeoutError` after ``seconds``."""
        ...

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T: ...

    def clock(self) -> float:
        """The loop's monotonic clock, in seconds."""
        ...

    def spawn_system(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` beside the server, outliving the request that started it."""
        ...

    def from_thread(self) -> Callable[[Callable[[], None]], None]:
        """What another thread calls to run a callback on this loop soon (it never
        blocks; it raises `RuntimeError` once the loop has closed)."""
        ...

    async def wait_shielded(self, flag: Flag) -> None:
        """Wait for ``flag`` even if cancelled meanwhile, then let the cancellation through."""
        ...


class Marker:
    """Why `Mailbox.get` has no event: timeout, client gone or server shutting down."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


TIMEOUT: Final = Marker("timeout")
DISCONNECTED: Final = Marker("disconnected")
ABORTED: Final = Marker("aborted")

#: a batch of events, the producer's end (None), or why there is none
Got = list[Event] | Marker | None


class Mailbox:
    """One request's backend events, as the batches the producer reads (one per
    upstream read): at most ``capacity`` batches and ``max_bytes`` of their text
    waiting (the producer waits for room: a client that reads slowly or not at all
    holds the model's stream back, never more memory), and the signals that end it
    early. One batch larger than ``max_bytes`` still passes, alone.

    Events come first: a signal is seen once the events already here are taken,
    except `DISCONNECTED`: a client that is gone reads nothing more, so the request
    ends at once rather than draining the model's stream into a closed connection.
    """

    def __init__(self, runtime: Runtime, capacity: int = 256, max_bytes: int = 1 << 20) -> None:
        self.runtime = runtime
        self.capacity = capacity
        self.max_bytes = max_bytes
        #: each waiting batch with what it costs (`batch_bytes`)
        self.items: deque[tuple[list[Event] | None, int]] = deque()
        #: what the waiting events cost
        self.bytes = 0
        self.signalled: Marker | None = None
        self._reader: Flag | None = None
        self._writer: Flag | None = None
        self._said_full = False

    def full(self) -> bool:
        return len(self.items) >= self.capacity or (
            bool(self.items) and self.bytes >= self.max_bytes
        )

    def put_nowait(self, batch: list[Event] | None) -> None:
        """Add ``batch`` (a non-empty list) whatever the capacity; None: the producer's end."""
        size = batch_bytes(batch)
        self.items.append((batch, size))
        self.bytes += size
        if self._reader is not None:
            self._reader.set()
            self._reader = None

    def offer(self, batch: list[Event]) -> bool:
        """Put ``batch`` if there is room (what `put` does without suspending); False if full.

        The producer's path per read: no coroutine while the reader keeps up.
        """
        if self.full():
            return False
        self.put_nowait(batch)
        return True

    async def put(self, batch: list[Event] | None) -> None:
        while self.full():
            if self.bytes >= self.max_bytes and not self._said_full:
                self._said_full = True
                log.warning(
                    "a client is reading slower than its model writes: %d bytes of events "
                    "wait for it (cap %d); the model's stream waits until the client reads",
                    self.bytes,
                    self.max_bytes,
                )
            self._writer = flag = self.runtime.flag()
            await flag.wait()
        self.put_nowait(batch)

    async def put_and_hand_over(self, batch: list[Event], patience: float = 0.05) -> None:
        """Put ``batch`` and wait (at most ``patience`` s) until the reader took it.

        For the first token: a put into a queue with room does not suspend, and one
        upstream read can hold the whole answer, so without this the rest of that
        read would be queued (and the next reads decoded) before the first byte left
        for the client.
        """
        self.put_nowait(batch)
        deadline = self.runtime.clock() + patience
        while self.items and self.signalled is None:  # until ``batch`` itself was taken
            left = deadline - self.runtime.clock()
            if left <= 0:
                break
            self._writer = flag = self.runtime.flag()
            await self.runtime.wait(flag, left)
            self._writer = None

    def signal(self, marker: Marker) -> None:
        """End the request early (the first signal wins)."""
        if self.signalled is None:
            self.signalled = marker
            self._wake_reader()

    async def get(self, timeout: float | None) -> Got:
        """The next batch, else the signal, else `TIMEOUT` after ``timeout`` seconds."""
        if self.signalled is DISCONNECTED:
            return DISCONNECTED
        if not self.items and self.signalled is None:
            self._reader = flag = self.runtime.flag()
            await self.runtime.wait(flag, timeout)
            self._reader = None
        if self.items:
            batch, size = self.items.popleft()
            self.bytes -= size
            self._wake_writer()
            return batch
        return self.signalled or TIMEOUT

    def take_ready(self, batch: list[Event], limit: int) -> None:
        """Move the batches already here onto ``batch`` while it has fewer than ``limit``
        events and no terminal one (a producer's end becomes `ended_early`)."""
        items = self.items
        while items and len(batch) < limit and not isinstance(batch[-1], (Done, Error)):
            ready, size = items.popleft()
            self.bytes -= size
            if ready is None:
                batch.append(ended_early())
            else:
                batch += ready
        self._wake_writer()

    def _wake_reader(self) -> None:
        if self._reader is not None:
            self._reader.set()
            self._reader = None

    def _wake_writer(self) -> None:
        if self._writer is not None and not self.full():
            self._writer.set()
            self._writer = None


#: the fields of an event that hold text of the upstream's length: a delta, a signature,
#: an opaque block's JSON (a server tool's results), a tool call's repaired arguments,
#: an error's message
_TEXT_FIELDS: Final = ("delta", "signature", "json", "arguments", "message")
def batch_bytes(batch: list[Event] | None) -> int:
    """What ``batch`` costs while it waits: `event_bytes` of each event, summed (the
    deltas, most of a stream, read here without a call each)."""
    if not batch:
        return EVENT_OVERHEAD
    size = EVENT_OVERHEAD * len(batch)
    for event in batch:
        if type(event) in _DELTAS:
            size += len(event.delta)  # type: ignore[union-attr]
        else:
            size += event_bytes(event) - EVENT_OVERHEAD
    return size


#: the events whose only text is a ``delta`` string
_DELTAS: Final = frozenset({TextDelta, ThinkingDelta, ToolCallDelta})


def event_bytes(event: Event | None) -> int:
    """What ``event`` costs while it waits: its text (`_TEXT_FIELDS`) and a fixed
    `EVENT_OVERHEAD`; a close estimate, read without encoding anything."""
    size = EVENT_OVERHEAD
    for name in _TEXT_FIELDS:
        text = getattr(event, name, None)
        if isinstance(text, str):
            size += len(text)
    return size


#: what counts as the first token (the moment a client's clock stops)
FIRST_TOKEN: Final = (TextDelta, ThinkingDelta, ToolCallDelta, Done, Error)


def first_token_at(batch: list[Event]) -> int | None:
    """Where the first event a client's clock waits for (`FIRST_TOKEN`) is in ``batch``."""
    for at, event in enumerate(batch):
        if isinstance(event, FIRST_TOKEN):
            return at
    return None


def ended_early() -> Error:
    """What a stream that stopped without `Done` or `Error` ends with."""
    return Error.network("backend ended without a terminal event")


class Slots:
    """At most ``limit`` backend streams at once; others wait in order, and all waiting
    ones give up (False) when the server starts shutting down."""

    def __init__(self, runtime: Runtime, limit: int) -> None:
        self.runtime = runtime
        self.free = limit
        self.closed = False
        self._waiters: deque[tuple[Flag, list[bool]]] = deque()

    async def acquire(self) -> bool:
        if self.closed:
            return False
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return True
        entry = (self.runtime.flag(), [False])
        self._waiters.append(entry)
        try:
            await entry[0].wait()
        except BaseException:  # cancelled while waiting: give back a slot won meanwhile
            if entry[1][0]:
                self.release()
            elif entry in self._waiters:
                self._waiters.remove(entry)
            raise
        if entry[1][0] and self.closed:
            self.release()
            return False
        return entry[1][0]

    def release(self) -> None:
        if self._waiters:
            flag, granted = self._waiters.popleft()
            granted[0] = True
            flag.set()
        else:
            self.free += 1

    def close(self) -> None:
        """Refuse new and waiting requests (they return False)."""
        self.closed = True
        while self._waiters:
            self._waiters.popleft()[0].set()


def next_batch(got: list[Event] | Marker | None, mailbox: Mailbox, started: bool) -> list[Event]:
    """What goes out in one write: ``got`` and what the producer already has ready
    (no added latency, far fewer sends when the model outpaces the socket)."""
    if got is ABORTED:
        if not started:
            raise shutting_down_refusal()
        return [shutting_down()]
    if got is None:
        return [ended_early()]
    assert not isinstance(got, Marker)
    if mailbox.items and not isinstance(got[-1], (Done, Error)):
        got = [*got]  # the producer's list stays the producer's
        mailbox.take_ready(got, MAX_BATCH)
    return got
