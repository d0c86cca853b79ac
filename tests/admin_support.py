"""A gateway with the dashboard on: its admin key, hostile texts, a stream held open
until a test lets it end, and a usage store seeded with known records; shared by the
admin routes' tests (both shells) and the dashboard's browser tests."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Iterator

import httpx
import sniffio
import trio
from loopback_server import HANG_GUARD, KEY, STREAMS, USER, Server

from streamfn.asgi import App, ServerConfig
from streamfn.core import (
    Done,
    Error,
    Event,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    Usage,
)
from streamfn.fuzz._events_backend import EventsBackend
from streamfn.ledger import MemoryStore, UsageRecord

ADMIN = "test-admin-key-0123456789"
#: what a hostile upstream or client puts where the page shows text
XSS = '<img src=x onerror="window.__pwned=1">'
XSS_MODEL = '<img src=x onerror="window.__pwned=2">'
GATED = "demo-gated"
#: an hour's worth of seconds, and a fixed moment the seeded records are relative to
HOUR = 3600.0


class GatedBackend(EventsBackend):
    """The demo streams, a hostile one, and ``demo-gated``: its first text, then a wait
    until `gate` is set (a live stream that ends when the test says)."""

    def __init__(self) -> None:
        super().__init__(
            {
                **STREAMS,
                GATED: [
                    Start(model=GATED),
                    TextStart(0),
                    TextDelta(0, "waiting"),
                    TextEnd(0),
                    Done(stop_reason=StopReason.STOP, usage=Usage(input=3, output=1)),
                ],
                XSS_MODEL: [
                    Start(model="hostile"),
                    TextStart(0),
                    TextDelta(0, XSS),
                    Error.network(XSS),
                ],
            }
        )
        self.gate = threading.Event()

    async def _events(self, events: list[Event]) -> AsyncGenerator[Event, None]:
        for event in events:
            if isinstance(event, TextEnd) and events[0] is self.streams[GATED][0]:
                while not self.gate.is_set():
                    await (
                        trio.sleep if sniffio.current_async_library() == "trio" else asyncio.sleep
                    )(0.01)
            yield event


def seeded_store(now: float) -> MemoryStore:
    """Two keys and a model's use over the last three hours (alice spends in two of
    them, bob in one), one record of an hour too old to show in a two-hour window;
    alice's latest was billed an estimate (its upstream reported no usage)."""
    store = MemoryStore()
    alice, _ = store.create_key("alice", now=now - 10 * HOUR)
    bob, _ = store.create_key("bob", now=now - 10 * HOUR)
    for at, key, model, cost, tokens in [
        (now - 2 * HOUR, alice, "demo-text", 0.5, 100),
        (now - 60, alice, "demo-text", 0.25, 40),
        (now - 60, bob, "demo-tool", 1.0, 300),
        (now - 30 * HOUR, bob, "demo-tool", 9.0, 999),
    ]:
        store.settle(
            None,
            UsageRecord(
                at=at,
                key_id=key.id,
                route="/v1/chat/completions",
                model=model,
                input_tokens=tokens - 10,
                output_tokens=10,
                cost=cost,
                estimated=cost == 0.25,
            ),
        )
    return store


@contextlib.contextmanager
def dashboard(
    store: MemoryStore | None = None, shell: str | None = None
) -> Iterator[tuple[Server, GatedBackend]]:
    backend = GatedBackend()
    config = ServerConfig(api_key=KEY, admin_key=ADMIN)
    with Server(App(backend, config, store=store), shell=shell) as server:
        yield server, backend


def gated_stream(server: Server) -> threading.Event:
    """A client streaming ``demo-gated`` in a thread; the event is set once its answer
    ended (after the test opened the backend's gate)."""
    ended = threading.Event()

    def run() -> None:
        with httpx.stream(
            "POST",
            server.url + "/v1/chat/completions",
            headers={"authorization": f"Bearer {KEY}"},
            json={"model": GATED, "messages": USER, "stream": True},
            timeout=HANG_GUARD,
        ) as answer:
            answer.read()
        ended.set()

    threading.Thread(target=run, daemon=True).start()
    return ended
