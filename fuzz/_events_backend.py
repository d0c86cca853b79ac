"""`EventsBackend`: a `streamfn serve` backend that replays event lists, for tests,
demos and benchmarks.

It serves on either shell: it sleeps with the running loop's own ``sleep``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncGenerator, AsyncIterator

from streamfn.asgi import UnknownModelError
from streamfn.core import Context, Event, Options, Start

__all__ = ["EventsBackend"]


async def _sleep(seconds: float) -> None:
    """The running loop's sleep: trio's under trio, asyncio's otherwise."""
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            pass
        else:
            await trio.sleep(seconds)
            return
    await asyncio.sleep(seconds)


class EventsBackend:
    """Serves recorded event lists by model name.

    ``delay`` seconds pass before each event after `Start`, to exercise
    keep-alives, disconnects and concurrency limits with real timing;
    ``first_delay`` more before the first one (a model that thinks, a queue).
    Every model generates at most ``max_output`` tokens per request;
    ``cancelled`` counts the streams stopped while they waited.
    """

    def __init__(
        self,
        streams: dict[str, list[Event]],
        *,
        delay: float = 0.0,
        first_delay: float = 0.0,
        max_output: int | None = None,
    ) -> None:
        self.streams = streams
        self.delay = delay
        self.first_delay = first_delay
        self.limit = max_output
        self.cancelled = 0
        #: (model, options) of every stream opened, for tests
        self.opened: list[tuple[str, Options]] = []

    def list_models(self) -> list[str]:
        return sorted(self.streams)

    def max_output(self, model: str) -> int | None:
        self._check(model)
        return self.limit

    def _check(self, model: str) -> None:
        if model not in self.streams:
            raise UnknownModelError(
                f"unknown model {model!r}; this server has: {', '.join(self.list_models())}"
            )

    @contextlib.asynccontextmanager
    async def stream(
        self, model: str, context: Context, options: Options
    ) -> AsyncIterator[AsyncIterator[Event]]:
        self._check(model)
        self.opened.append((model, options))
        events = self._events(self.streams[model])
        try:
            yield events
        finally:
            await events.aclose()  # a stream left early (a cancelled request) ends here

    async def _events(self, events: list[Event]) -> AsyncGenerator[Event, None]:
        first = True
        for event in events:
            if not isinstance(event, Start):
                wait = self.delay + (self.first_delay if first else 0.0)
                first = False
                if wait:
                    try:
                        await _sleep(wait)
                    except BaseException:  # cancelled (asyncio's or trio's) while waiting
                        self.cancelled += 1
                        raise
            yield event
