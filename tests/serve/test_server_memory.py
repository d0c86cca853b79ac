"""Memory a request holds is bounded in bytes, end to end.

- A request is charged to ``max_buffered_bytes`` as its body arrives, then with
  what parsing it holds at its most (`parsing_cost`), then only with what its parsed
  form keeps (`parsed_cost`; both checked here against Python's own allocator count,
  the peak as well as what is left), and the charge stays until the request ends:
  requests parked on a stalled model cannot add up past the budget.
- The events waiting for a client that does not read are bounded in bytes
  (``max_unsent_bytes``), not only in number: the model's stream waits.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import socket
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
from loopback_server import HANG_GUARD, KEY, SLOW, Server, raw_post, read_all, wait_until

from streamfn.asgi import App, Runtime, ServerConfig
from streamfn.asgi._runtime import EVENT_OVERHEAD, Mailbox, event_bytes
from streamfn.core._events import (
    Done,
    Error,
    OpaqueBlock,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEnd,
)
from streamfn.core.serve._routes import (
    BodyBudget,
    HTTPError,
    parse_request,
    parsed_cost,
    parsing_cost,
)
from streamfn.fuzz._events_backend import EventsBackend
from streamfn.io_asyncio._server import AsyncioRuntime
from streamfn.io_trio._server import TrioRuntime

CHAT = "/v1/chat/completions"
AGUI_PATH, UI_CHAT_PATH = "/v1/agui", "/v1/ui/chat"
M = 256 << 10


def _chat(**fields: Any) -> bytes:
    return json.dumps({"model": "m", **fields}).encode()


def _agui(messages: list[Any], **fields: Any) -> bytes:
    body = {"threadId": "t", "runId": "r", "messages": messages, **fields}
    return json.dumps({**body, "forwardedProps": {"model": "m"}}, ensure_ascii=False).encode()


def _ui(messages: list[Any]) -> bytes:
    return json.dumps({"id": "c", "model": "m", "messages": messages}, ensure_ascii=False).encode()


def _enum(values: list[Any]) -> bytes:
    schema = {"type": "object", "properties": {"a": {"enum": values}}}
    return _chat(
        messages=[{"role": "user", "content": "hi"}],
        tools=[{"type": "function", "function": {"name": "f", "parameters": schema}}],
    )


#: one emoji keeps its whole string at 4 bytes a character (2 for a character past
#: U+00FF), whether it is sent as UTF-8 or escaped
ASTRAL, BMP = "\N{GRINNING FACE}", "\N{LATIN SMALL LETTER A WITH MACRON}"

#: request shapes that cost the most per byte once parsed, and the cheapest one
SHAPES = {
    "one long prompt": _chat(messages=[{"role": "user", "content": "x" * (1 << 20)}]),
    "many short messages": _chat(messages=[{"role": "user", "content": "hi"}] * 30000),
    "many empty messages": _chat(messages=[{"role": "user", "content": ""}] * 30000),
    "many content parts": _chat(
        messages=[{"role": "user", "content": [{"type": "text", "text": "a"}] * 30000}]
    ),
    "many tools": _chat(
        messages=[{"role": "user", "content": "hi"}],
        tools=[
            {
                "type": "function",
                "function": {
                    "name": f"f{i}",
                    "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
                },
            }
            for i in range(8000)
        ],
    ),
    "a schema of many properties": _chat(
        messages=[{"role": "user", "content": "hi"}],
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "f",
                    "parameters": {
                        "type": "object",
                        "properties": {f"p{i}": {"type": "integer"} for i in range(30000)},
                    },
                },
            }
        ],
    ),
    "many numbers": _enum(list(range(100_000))),
    "many short strings": _enum([str(i) for i in range(100_000)]),
    "a prompt with an emoji": _chat(messages=[{"role": "user", "content": ASTRAL + "x" * M}]),
    "a prompt with an escaped emoji": json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": ASTRAL + "x" * M}]}
    ).encode(),
}
#: the same on the front-end routes, whose parsers build more per message
FRONT_END_SHAPES = {
    "AG-UI messages": _agui([{"id": "1", "role": "user", "content": "hi"}] * 10000),
    "AG-UI content parts": _agui(
        [{"id": "1", "role": "user", "content": [{"type": "text", "text": ""}] * 20000}]
    ),
    "AG-UI tool calls": _agui(
        [
            {"id": "1", "role": "user", "content": "hi"},
            {
                "id": "2",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                    for i in range(5000)
                ],
            },
            *(
                {"id": "t", "role": "tool", "toolCallId": f"c{i}", "content": ""}
                for i in range(5000)
            ),
        ]
    ),
    "AG-UI schema properties": _agui(
        [{"id": "1", "role": "user", "content": "hi"}],
        tools=[
            {
                "name": "f",
                "description": "",
                "parameters": {
                    "type": "object",
                    "properties": {f"p{i}": {"type": "integer"} for i in range(5000)},
                },
            }
        ],
    ),
    "AG-UI a prompt with an emoji": _agui(
        [{"id": "1", "role": "user", "content": ASTRAL + "x" * M}]
    ),
    "UI messages": _ui(
        [{"id": "1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}] * 20000
    ),
    "UI a prompt past U+00FF": _ui(
        [{"id": "1", "role": "user", "parts": [{"type": "text", "text": BMP + "x" * M}]}]
    ),
}
ALL_SHAPES = {
    **{name: (CHAT, body) for name, body in SHAPES.items()},
    **{
        name: (AGUI_PATH if name.startswith("AG-UI") else UI_CHAT_PATH, body)
        for name, body in FRONT_END_SHAPES.items()
    },
}


def _parsed(path: str, body: bytes) -> tuple[int, int]:
    """What parsing ``body`` held at its most, and what its result holds (Python's own
    allocator count; the body itself was there before and is not counted)."""
    gc.collect()
    tracemalloc.start()
    try:
        request = parse_request(path, body)
        gc.collect()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert request.model == "m"
    return peak, held


@pytest.mark.parametrize("shape", ALL_SHAPES)
def test_the_charges_for_a_request_bound_its_parse_at_its_most_and_what_it_keeps(
    shape: str,
) -> None:
    """The peak as well as what is left: the decoded JSON, the request built from it
    and the checks' copies are all there at one moment (the body beside them is
    charged as it arrived), and only the parsed form stays."""
    path, body = ALL_SHAPES[shape]
    peak, held = _parsed(path, body)
    assert peak <= parsing_cost(body), (peak, len(body), parsing_cost(body))
    assert held <= len(body) + parsed_cost(body), (held, len(body), parsed_cost(body))


def test_a_request_too_complex_for_the_budget_alone_is_a_413_others_a_503() -> None:
    budget = BodyBudget(max_body=100, max_buffered=1000)
    with pytest.raises(HTTPError) as info:
        budget.hold_parsed(100, 901)  # would never fit, however long it waited
    assert info.value.status == 413 and "memory budget" in info.value.message
    budget.hold_parsed(100, 600)
    with pytest.raises(HTTPError) as info:
        budget.hold_parsed(100, 600)  # fits alone, not beside the other one
    assert info.value.status == 503 and info.value.retry_after == 1
    budget.release(600)
    budget.hold_parsed(100, 600)


@pytest.mark.usefixtures("shell")
def test_requests_parked_on_a_stalled_model_stay_charged_until_they_end() -> None:
    events = [Start(), TextStart(0), TextDelta(0, "ok"), TextEnd(0), Done()]
    backend = EventsBackend({"m": events}, first_delay=SLOW)  # the model never starts
    body = _chat(messages=[{"role": "user", "content": "x" * 20000}])
    # the body, its parsed form, and the answer's first event (its Start), held whole
    charge = len(body) + parsed_cost(body) + EVENT_OVERHEAD
    parsing = parsing_cost(body) - parsed_cost(body)  # held only while it is parsed
    budget = 3 * charge + parsing + 100
    config = ServerConfig(api_key=KEY, max_body_bytes=1 << 20, max_buffered_bytes=budget)
    with Server(App(backend, config)) as server:
        parked = [raw_post(server.port, CHAT, body) for _ in range(3)]
        try:
            wait_until(lambda: server.app.active == 3, HANG_GUARD)  # all three parsed, running
            wait_until(lambda: server.app.buffered == 3 * charge, HANG_GUARD)
            with raw_post(server.port, CHAT, body) as extra:
                data = read_all(extra, HANG_GUARD)
            assert data.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in data.lower()
        finally:
            for sock in parked:
                sock.close()
        wait_until(lambda: server.app.buffered == 0, HANG_GUARD)  # given back as they end


# -- events waiting for a client ------------------------------------------------------------

RUNS: dict[str, Callable[[Callable[[Runtime], Awaitable[None]]], None]] = {
    "asyncio": lambda fn: asyncio.run(fn(AsyncioRuntime())),
    "trio": lambda fn: trio.run(fn, TrioRuntime()),
}


@pytest.mark.parametrize("shell", RUNS)
def test_the_mailbox_holds_the_producer_by_bytes_and_says_so_once(
    shell: str, caplog: pytest.LogCaptureFixture
) -> None:
    big = "x" * 600

    async def main(runtime: Runtime) -> None:
        box = Mailbox(runtime, capacity=256, max_bytes=1000)
        await box.put([TextDelta(0, "y" * 5000)])  # one batch past the cap passes alone
        assert box.get is not None and await box.get(0.01) == [TextDelta(0, "y" * 5000)]
        assert box.bytes == 0
        await box.put([TextDelta(0, big)])
        await box.put([TextDelta(0, big)])  # 1600 bytes now: full by bytes, not by count
        assert not box.offer([TextDelta(0, big)])
        async with runtime.task_group() as tasks:
            for _ in range(2):
                tasks.start_soon(box.put, [TextDelta(0, big)])
            await runtime.wait(runtime.flag(), 0.05)
            assert len(box.items) == 2  # both producers wait
            await box.get(1.0)
            await runtime.wait(runtime.flag(), 0.05)
            assert len(box.items) == 2  # room made: one went on, the other waits
            for _ in range(3):
                await box.get(1.0)
                await runtime.wait(runtime.flag(), 0.05)
        assert box.bytes == 0 and not box.items

    with caplog.at_level(logging.WARNING, logger="streamfn"):
        RUNS[shell](main)
    warnings = [r for r in caplog.records if "reading slower than its model" in r.getMessage()]
    assert len(warnings) == 1


@pytest.mark.usefixtures("shell")
def test_a_client_that_never_reads_holds_a_bounded_number_of_bytes() -> None:
    delta = "z" * (100 << 10)
    events = [Start(), TextStart(0), *[TextDelta(0, delta)] * 200, TextEnd(0), Done()]
    cap = 256 << 10
    config = ServerConfig(api_key=KEY, max_unsent_bytes=cap)
    body = _chat(stream=True, messages=[{"role": "user", "content": "hi"}])
    with Server(App(EventsBackend({"m": events}), config)) as server:
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(
            f"POST {CHAT} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {KEY}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        try:
            boxes = server.app._mailboxes
            wait_until(lambda: any(box.bytes >= cap for box in boxes), HANG_GUARD)
            time.sleep(0.3)  # the producer had time to run on, were it not held
            for box in list(boxes):
                assert box.bytes < cap + len(delta) + 1024, box.bytes
                assert len(box.items) < 200
        finally:
            sock.close()


@pytest.mark.parametrize(
    "event",
    [
        OpaqueBlock(0, "anthropic", "web_search_tool_result", "x" * 100_000),
        ToolCallEnd(0, arguments="x" * 100_000),
        Error(message="x" * 100_000),
        TextDelta(0, "x" * 100_000),
    ],
)
def test_every_event_that_carries_upstream_text_is_charged_for_it(event: object) -> None:
    """A server tool's results (an opaque block), repaired arguments and an error's text
    are as long as the upstream makes them: a client that never reads holds them too."""
    assert event_bytes(event) == 100_000 + EVENT_OVERHEAD  # type: ignore[arg-type]


@pytest.mark.usefixtures("shell")
def test_an_answer_asked_for_whole_is_charged_to_the_memory_budget() -> None:
    """A ``"stream": false`` answer is held until it is complete: 4 MiB of it under a
    1 MiB budget is a 503, and the charge is given back when the request ends."""
    delta = "z" * (100 << 10)
    events = [Start(), TextStart(0), *[TextDelta(0, delta)] * 40, TextEnd(0), Done()]
    config = ServerConfig(api_key=KEY, max_buffered_bytes=1 << 20)
    body = _chat(messages=[{"role": "user", "content": "hi"}])
    with Server(App(EventsBackend({"m": events}), config)) as server:
        with raw_post(server.port, CHAT, body) as sock:
            reply = read_all(sock, HANG_GUARD)
        assert reply.startswith(b"HTTP/1.1 503"), reply[:200]
        wait_until(lambda: server.app.buffered == 0, HANG_GUARD)
        small = [Start(), TextStart(0), TextDelta(0, "ok"), TextEnd(0), Done()]
        server.app.backend.streams["m"] = small  # type: ignore[attr-defined]
        with raw_post(server.port, CHAT, body) as sock:
            assert read_all(sock, HANG_GUARD).startswith(b"HTTP/1.1 200")
