"""The server's pure decisions (`streamfn.core.serve`) and its two loop structures
(`streamfn.asgi._runtime`) on their own, without a socket."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
import trio

from streamfn.asgi._runtime import ABORTED, DISCONNECTED, TIMEOUT, Mailbox, Runtime, Slots
from streamfn.core import Done, Error, ErrorKind, Start, TextDelta
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.core.serve._inbound import ClientRequest
from streamfn.core.serve._routes import BodyBudget, Route, authenticate, route
from streamfn.core.serve._served import SERVED, encoder_for, final_body
from streamfn.core.serve._status import ANTHROPIC, OPENAI, HTTPError, early_error, error_response
from streamfn.io_asyncio._server import AsyncioRuntime
from streamfn.io_trio._server import TrioRuntime

LOCAL = [(b"host", b"127.0.0.1:8000")]
JSON = [*LOCAL, (b"content-type", b"application/json")]


def decide(method: str, path: str, headers: list[tuple[bytes, bytes]], **kw: object) -> Route:
    options: dict[str, object] = {"allowed_hosts": ("127.0.0.1",), "cors": False, "api_key": None}
    options.update(kw)
    chosen, served = route(method, path, headers, **options)  # type: ignore[arg-type]
    assert served is SERVED[path]
    return chosen


def refusal(method: str, path: str, headers: list[tuple[bytes, bytes]], **kw: object) -> int:
    with pytest.raises(HTTPError) as info:
        decide(method, path, headers, **kw)
    return info.value.status


def test_routes_and_the_order_of_their_checks() -> None:
    assert decide("POST", "/v1/messages", JSON) is Route.COMPLETION
    assert decide("GET", "/health", LOCAL, api_key="k") is Route.HEALTH  # no key needed
    assert decide("OPTIONS", "/v1/messages", LOCAL, cors=True) is Route.PREFLIGHT
    # Host first: a rebinding page learns nothing, not even which paths exist
    assert refusal("POST", "/nowhere", [(b"host", b"evil.example")]) == 400
    assert refusal("POST", "/v1/messages", [*JSON, (b"origin", b"http://a.example")]) == 403
    assert refusal("POST", "/nowhere", JSON) == 404
    assert refusal("GET", "/v1/messages", JSON) == 405
    assert refusal("POST", "/v1/messages", JSON, api_key="k") == 401  # before Content-Type
    assert refusal("POST", "/v1/messages", LOCAL) == 415


def test_the_key_is_taken_from_any_of_the_three_headers() -> None:
    for name, value in ((b"authorization", b"Bearer k"), (b"x-api-key", b"k"), (b"api-key", b"k")):
        authenticate([(name, value)], "k")
    with pytest.raises(HTTPError) as info:
        authenticate([(b"authorization", b"Bearer kk")], "k")
    status, headers, _ = error_response(ANTHROPIC, info.value)
    assert status == 401 and (b"www-authenticate", b"Bearer") in headers


def test_early_errors_map_to_the_statuses_sdks_retry_on() -> None:
    assert early_error(ANTHROPIC, Error(message="x", kind=ErrorKind.THROTTLED)).status == 429
    assert early_error(ANTHROPIC, Error(message="x", kind=ErrorKind.AUTH)).status == 502
    assert early_error(OPENAI, Error.invalid_request("no", status=404)).status == 404


def test_the_body_budget_counts_all_requests_and_each_body() -> None:
    budget = BodyBudget(max_body=10, max_buffered=15)
    budget.hold(0, 8)
    with pytest.raises(HTTPError) as info:
        budget.hold(8, 3)  # this body would pass 10
    assert info.value.status == 413
    with pytest.raises(HTTPError) as info:
        budget.hold(0, 8)  # all bodies would pass 15
    assert info.value.status == 503 and info.value.retry_after == 1
    budget.release(8)
    budget.hold(0, 8)


class FixedStamps:
    def hex_id(self) -> str:
        return "0" * 24

    def ulid(self) -> str:
        return "01" + "A" * 24

    def unix_time(self) -> int:
        return 1700000000

    def clock(self) -> float:
        return 1.0


def test_ids_and_times_come_from_the_shell() -> None:
    request = ClientRequest(model="m", context=Context.of("hi"), options=Options())
    encode, _ = encoder_for(SERVED["/v1/chat/completions"], request, FixedStamps())
    assert b'"id":"chatcmpl-000000000000000000000000"' in encode([TextDelta(0, "x")])
    assert b'"created":1700000000' in encode([TextDelta(0, "x")])
    body = final_body(SERVED["/v1/messages"], request, [Start(), Done()], FixedStamps())
    assert body["id"] == "msg_" + "0" * 24


RUNS: dict[str, Callable[[Callable[[Runtime], Awaitable[None]]], None]] = {
    "asyncio": lambda fn: asyncio.run(fn(AsyncioRuntime())),
    "trio": lambda fn: trio.run(fn, TrioRuntime()),
}


@pytest.mark.parametrize("shell", RUNS)
def test_the_mailbox_gives_events_before_signals_and_holds_the_producer(shell: str) -> None:
    seen: list[object] = []

    async def main(runtime: Runtime) -> None:
        box = Mailbox(runtime, capacity=2)
        assert await box.get(0.01) is TIMEOUT
        await box.put([Start()])
        await box.put([TextDelta(0, "a")])
        async with runtime.task_group() as tasks:
            tasks.start_soon(box.put, [Done()])
            await runtime.wait(runtime.flag(), 0.01)
            assert len(box.items) == 2  # the producer waits: the box is full
            seen.append(await box.get(1.0))
            await runtime.wait(runtime.flag(), 0.01)
            assert len(box.items) == 2  # room made: it went on
            box.signal(ABORTED)
            box.signal(DISCONNECTED)  # the first signal wins
            for _ in range(3):
                seen.append(await box.get(1.0))

    RUNS[shell](main)
    assert [[type(x).__name__ for x in batch] for batch in seen[:3]] == [  # type: ignore[attr-defined]
        ["Start"],
        ["TextDelta"],
        ["Done"],
    ]
    assert seen[3] is ABORTED


@pytest.mark.parametrize("shell", RUNS)
def test_a_disconnect_is_seen_before_the_events_still_waiting(shell: str) -> None:
    """A client that is gone reads nothing more: its request ends at once instead of
    draining the model's stream into a closed connection."""
    seen: list[object] = []

    async def main(runtime: Runtime) -> None:
        box = Mailbox(runtime)
        await box.put([Start()])
        await box.put([TextDelta(0, "a")])
        box.signal(DISCONNECTED)
        seen.append(await box.get(1.0))
        seen.append(len(box.items))

    RUNS[shell](main)
    assert seen == [DISCONNECTED, 2]


@pytest.mark.parametrize("shell", RUNS)
def test_slots_serve_in_order_and_closing_turns_waiters_away(shell: str) -> None:
    got: list[tuple[str, bool]] = []

    async def main(runtime: Runtime) -> None:
        slots = Slots(runtime, 1)
        assert await slots.acquire()

        async def wait(name: str) -> None:
            got.append((name, await slots.acquire()))

        async with runtime.task_group() as tasks:
            for name in ("first", "second"):
                queued = len(slots._waiters)
                tasks.start_soon(wait, name)
                while len(slots._waiters) == queued:
                    await runtime.wait(runtime.flag(), 0.001)
            slots.release()  # to the first waiter
            while not got:
                await runtime.wait(runtime.flag(), 0.001)
            slots.close()  # the second gives up
            while len(got) < 2:
                await runtime.wait(runtime.flag(), 0.001)

    RUNS[shell](main)
    assert got == [("first", True), ("second", False)]
