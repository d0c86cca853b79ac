"""`Client.stream_batches` is `Client.stream` before flattening, over real sockets.

Against the loopback fake provider, for good and broken answers in both async
shells: the lists hold the same events in the same order as the per-event
stream, none is empty, and an answer written at once comes in far fewer lists
than events (one per read, not one per event: what the server relies on to
encode and send a read in one write).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import trio
from fake_provider import FakeProvider

from streamfn.core import Context, Done, Error, Event, Model, Options
from streamfn.fuzz._fake_bodies import openai_body
from streamfn.io_asyncio import Client as AsyncioClient
from streamfn.io_trio import Client as TrioClient

OPTIONS = Options(
    api_key="sk-test", max_attempts=1, connect_timeout=2, first_byte_timeout=2, idle_timeout=2
)
FAULTS = ["ok", "ok-length", "drip", "reset", "truncated", "401", "429-then-ok", "garbage-body"]


@pytest.fixture(scope="module")
def fake() -> Any:
    with FakeProvider() as server:
        yield server


def _both(shell: str, url: str) -> tuple[list[Event], list[list[Event]]]:
    """The events of ``stream`` and the lists of ``stream_batches``, one request each."""
    model = Model(id="gpt-4o-mini", provider="openai", api="openai-chat", base_url=url)
    context = Context.of("Hi")

    async def run(client: Any) -> tuple[list[Event], list[list[Event]]]:
        async with client:
            async with client.stream(model, context, OPTIONS) as events:
                one = [event async for event in events]
            async with client.stream_batches(model, context, OPTIONS) as batches:
                many = [batch async for batch in batches]
        return one, many

    if shell == "trio":
        result: tuple[list[Event], list[list[Event]]] = trio.run(run, TrioClient())
        return result
    return asyncio.run(run(AsyncioClient()))


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("shell", ["trio", "asyncio"])
def test_the_batches_are_the_stream_before_flattening(shell: str, fault: str, fake: Any) -> None:
    one, many = _both(shell, fake.base_url(fault, "openai-chat"))
    assert all(many), "an empty batch"
    flat = [event for batch in many for event in batch]
    if isinstance(one[-1], Error):  # the same failure, in the same place
        assert isinstance(flat[-1], Error) and flat[-1].kind == one[-1].kind
        assert flat[:-1] == one[:-1]
    else:
        assert flat == one
    assert isinstance(one[-1], (Done, Error))


@pytest.mark.parametrize("shell", ["trio", "asyncio"])
def test_an_answer_written_at_once_comes_in_far_fewer_lists_than_events(
    shell: str, fake: Any
) -> None:
    """400 deltas (about 60 KB) written at once arrive in a few reads, so in a few lists
    (4 here: the head's, two reads of the body, the end's). The bound, a tenth of the
    events, leaves room for a loaded machine's smaller reads, and fails a list per event
    or per pair of events."""
    url = fake.serve(openai_body([f" word{n}" for n in range(400)]))
    one, many = _both(shell, url)
    assert len(one) == 404  # Start, TextStart, 400 deltas, TextEnd, Done
    assert [event for batch in many for event in batch] == one
    assert len(many) <= len(one) // 10, [len(batch) for batch in many]
