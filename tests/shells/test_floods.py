"""An upstream that floods bytes which never make an event, on every shell.

Endless interim (1xx) responses, or SSE comments as fast as the socket takes
them: the shell's timeout error still ends the stream (the flood outlasts
any timeout here by far), and on the async shells the event loop keeps
turning meanwhile (a 50 ms sleep beside the stream finishes first). The hang
guard runs each stream in a thread, so it holds even when a loop never turns.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio
from fake_provider import FakeProvider
from shell_runner import KEY, SHELLS, blocking, client_class, collect

from streamfn.core import Error, Event, Model, Options

#: how long a flood lasts unless the client leaves; the timeouts below are far shorter
FLOOD = 30.0
#: no size cap: the timeouts, not max_response_bytes, must end the flood
OPTIONS = Options(
    api_key=KEY,
    first_byte_timeout=1.0,
    idle_timeout=1.0,
    max_attempts=1,
    max_response_bytes=1 << 50,
)


@pytest.fixture(scope="module")
def flooding() -> Iterator[FakeProvider]:
    with FakeProvider(stall=FLOOD) as srv:
        yield srv


def _model(server: FakeProvider, fault: str, token: str) -> Model:
    return Model(
        id="m",
        provider="openai",
        api="openai-chat",
        base_url=server.base_url(fault, "openai-chat", token),
    )


Outcome = tuple[list[Event], list[str]]


async def _asyncio_scenario(model: Model) -> Outcome:
    order: list[str] = []

    async def tick() -> None:
        await asyncio.sleep(0.05)
        order.append("tick")

    async with client_class("asyncio")(environ={}) as client:
        ticker = asyncio.create_task(tick())
        events = await collect(client, model, OPTIONS)
        order.append("stream ended")
        await ticker
    return events, order


async def _trio_scenario(model: Model) -> Outcome:
    order: list[str] = []
    events: list[Event] = []

    async def tick() -> None:
        await trio.sleep(0.05)
        order.append("tick")

    async with client_class("trio")(environ={}) as client, trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        events = await collect(client, model, OPTIONS)
        order.append("stream ended")
    return events, order


async def _sync_scenario(model: Model) -> Outcome:
    async with client_class("sync")(environ={}) as client:
        events = await collect(client, model, OPTIONS)
    return events, ["tick", "stream ended"]  # a blocking call has no loop to keep turning


def _guarded(run: Callable[[], Outcome]) -> Outcome:
    """``run()`` in a thread, failing after a third of the flood rather than hanging."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(run()), daemon=True)
    thread.start()
    thread.join(FLOOD / 3)
    assert result, f"the stream outlived its {OPTIONS.first_byte_timeout:g} s timeouts"
    return result[0]  # type: ignore[no-any-return]


@pytest.mark.parametrize("fault", ["flood-1xx", "flood-comments"])
@pytest.mark.parametrize("shell", SHELLS)
def test_a_flood_without_events_ends_in_the_shells_timeout_error(
    shell: str, fault: str, flooding: FakeProvider
) -> None:
    model = _model(flooding, fault, f"{fault}-{shell}")
    started = time.monotonic()
    if shell == "sync":
        events, order = blocking(_sync_scenario(model), FLOOD / 3)
    elif shell == "trio":
        events, order = _guarded(lambda: trio.run(_trio_scenario, model))
    else:
        events, order = _guarded(lambda: asyncio.run(_asyncio_scenario(model)))
    assert time.monotonic() - started < FLOOD / 3
    assert isinstance(events[-1], Error), events
    assert "timeout" in events[-1].message, events[-1]
    assert not any(isinstance(e, Error) for e in events[:-1])
    assert order == ["tick", "stream ended"]
