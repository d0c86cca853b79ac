"""``POST /v1/agent/stream`` on a real hypercorn: the agent contract, and streamfn reading it back."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import h11
import pytest
import ulid
from loopback_server import KEY, SLOW, TOOL, Server, raw_post, read_all, serving, wait_until
from test_agent_events import frames

from streamfn.core import Context, Done, Event, Model, Options, StopReason, accumulate
from streamfn.core._messages import TextContent, Tool, ToolCall
from streamfn.core.dialects.agent_events._encode import AGENT_ORDER
from streamfn.io_asyncio import Client

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

PATH = "/v1/agent/stream"


def native(model: str, *, tools: bool = False) -> dict[str, Any]:
    context: dict[str, Any] = {"messages": [{"type": "user", "content": "hi"}]}
    if tools:
        context["tools"] = [{"name": "get_weather", "description": "", "parameters": {}}]
    return {"model": model, "context": context, "options": {}}


class Response:
    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status, headers, content


def post(server: Server, body: dict[str, Any]) -> Response:
    """POST and read the whole response, parsed by h11 (not by our code)."""
    with raw_post(server.port, PATH, json.dumps(body).encode()) as sock:
        raw = read_all(sock)
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="POST", target=PATH, headers=[("host", "x")]))
    conn.receive_data(raw)
    conn.receive_data(b"")
    head = conn.next_event()
    assert isinstance(head, h11.Response)
    content = b""
    while not isinstance(event := conn.next_event(), h11.EndOfMessage):
        assert isinstance(event, h11.Data)
        content += event.data
    headers = {k.decode(): v.decode() for k, v in head.headers}
    return Response(head.status_code, headers, content)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serving() as (srv, _):
        yield srv


def test_a_tool_answer_follows_the_documented_order_with_fresh_ulids(server: Server) -> None:
    before = time.time()
    response = post(server, native("demo-tool", tools=True))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    got = frames(response.content)
    names = " ".join(name for name, _ in got)
    assert AGENT_ORDER.fullmatch(names)
    assert names.startswith("stream_start tool_call_start tool_call_args")
    start = got[0][1]
    session, message = (
        ulid.ULID.from_str(start["session_id"]),
        ulid.ULID.from_str(start["message_id"]),
    )
    assert session != message and abs(message.timestamp - before) < 5
    text = "".join(p["delta"] for n, p in got if n == "message_delta")
    assert text == "Checking."  # held until after the tool call
    end = got[-1][1]
    assert end["message_id"] == start["message_id"] and end["stop_reason"] == "tool_use"
    assert end["tokens_used"]["total_tokens"] == 29 and end["execution_time_ms"] >= 0


def test_errors_before_any_output_are_sent_in_stream_as_problem_details(server: Server) -> None:
    """The contract's errors are "sent when an error occurs during streaming": once the
    request is valid, even the model's first answer being an error comes in-stream."""
    overflow = post(server, native("demo-overflow"))
    assert overflow.status_code == 200
    got = frames(overflow.content)
    assert [n for n, _ in got] == ["stream_start", "error"]
    assert got[1][1]["status"] == 400 and got[1][1]["type"].startswith("https://")


def test_a_request_that_cannot_start_a_stream_is_an_http_error(server: Server) -> None:
    """An unknown model is refused before any stream exists, as on every route."""
    assert post(server, native("nosuch")).status_code == 404


def test_keepalive_comments_while_the_model_is_silent() -> None:
    with serving(keepalive_interval=0.05, delay=0.3) as (server, _):
        body = json.dumps(native("demo-text")).encode()
        with raw_post(server.port, PATH, body) as sock:
            data = read_all(sock)
    assert b": keepalive\n" in data and b"event: stream_end" in data


def test_client_disconnect_stops_generation() -> None:
    # after the head, nothing happens on its own before SLOW s: no event, no keep-alive
    # (a write to the closed socket would reveal the disconnect without the watch)
    with serving(delay=SLOW, head_wait=0.05, keepalive_interval=SLOW) as (server, backend):
        sock = raw_post(server.port, PATH, json.dumps(native("demo-text")).encode())
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.close()
        wait_until(lambda: backend.cancelled == 1, SLOW / 3)


def test_streamfn_consumes_the_agent_contract_through_its_own_shell(server: Server) -> None:
    async def consume(url: str) -> list[Event]:
        model = Model(id="demo-tool", provider="agent", api="agent-events", base_url=url)
        context = Context.of("hi")
        context.tools = [Tool(name="get_weather", description="", parameters={})]
        async with (
            Client(environ={}) as client,
            client.stream(model, context, Options(api_key=KEY)) as events,
        ):
            return [e async for e in events]

    events = asyncio.run(consume(server.url))
    message = accumulate(events)
    assert isinstance(events[-1], Done) and message.stop_reason == StopReason.TOOL_USE
    assert [b.text for b in message.content if isinstance(b, TextContent)] == ["Checking."]
    call = next(b for b in message.content if isinstance(b, ToolCall))
    assert (call.id, call.name, call.arguments) == (
        "call_abc123",
        "get_weather",
        {"city": "Paris", "units": "c"},
    )
    original = accumulate(TOOL)
    assert message.usage == original.usage
