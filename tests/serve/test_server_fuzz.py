"""No body a client can send makes `streamfn serve` answer 500 or log a traceback.

A hypothesis property over random bytes and over valid requests mutated at
random (fields replaced by any JSON, added, removed), on all three routes,
driven through the ASGI app in process. The backend checks that whatever
reaches it is well typed, so a loose parse cannot hide behind a 200.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from loopback_server import STREAMS

from streamfn.asgi import ServerConfig
from streamfn.core import Context, Options
from streamfn.fuzz._events_backend import EventsBackend
from streamfn.io_asyncio._server import App

ROUTES = ("/v1/chat/completions", "/v1/messages", "/v1/stream")
VALID: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "model": "demo-tool",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "stream": True,
        "max_tokens": 10,
    },
    "/v1/messages": {
        "model": "demo-thinking",
        "max_tokens": 10,
        "system": [{"type": "text", "text": "be brief"}],
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
            },
        ],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "thinking": {"type": "enabled", "budget_tokens": 5},
        "stream": False,
    },
    "/v1/stream": {
        "model": "demo-text",
        "context": {"messages": [{"type": "user", "content": "hi"}], "system_prompt": "s"},
        "options": {"temperature": 0.5, "max_tokens": 10},
    },
}
KEYS = st.sampled_from(
    [
        "model",
        "messages",
        "stream",
        "max_tokens",
        "tools",
        "tool_choice",
        "temperature",
        "stop",
        "system",
        "options",
        "context",
        "thinking",
        "content",
        "role",
        "type",
        "text",
        "function",
        "arguments",
        "input",
        "base_url",
    ]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(KEYS | st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


class CheckingBackend(EventsBackend):
    """Fails loudly (a 502 and a logged traceback) if an ill-typed request gets through."""

    def stream(self, model: str, context: Context, options: Options) -> Any:
        msgspec.convert(msgspec.to_builtins(context), Context)
        msgspec.convert(msgspec.to_builtins(options), Options)
        return super().stream(model, context, options)


@st.composite
def mutated(draw: st.DrawFn, obj: Any) -> Any:
    """``obj`` with a few of its nodes replaced, dropped, or given extra keys."""
    if draw(st.integers(0, 3)) == 0:
        return draw(JSON)
    if isinstance(obj, dict) and obj:
        out = dict(obj)
        for _ in range(draw(st.integers(1, 2))):
            action = draw(st.sampled_from(["mutate", "drop", "add"]))
            key = draw(st.sampled_from(sorted(out))) if out else None
            if action == "mutate" and key is not None:
                out[key] = draw(mutated(out[key]))
            elif action == "drop" and key is not None:
                del out[key]
            else:
                out[draw(KEYS)] = draw(JSON)
        return out
    if isinstance(obj, list) and obj:
        i = draw(st.integers(0, len(obj) - 1))
        return [*obj[:i], draw(mutated(obj[i])), *obj[i + 1 :]]
    return obj


async def _call(app: App, path: str, body: bytes) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")],
    }
    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


class _Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _check(path: str, body: bytes) -> None:
    handler = _Tracebacks()
    logger = logging.getLogger("streamfn")
    logger.addHandler(handler)
    try:

        async def run() -> tuple[int, bytes]:
            app = App(CheckingBackend(STREAMS, max_output=100), ServerConfig())
            return await _call(app, path, body)

        status, reply = asyncio.run(run())
    finally:
        logger.removeHandler(handler)
    assert status < 500, (status, reply)
    assert not handler.records, [r.getMessage() for r in handler.records]
    if status >= 400:
        error = json.loads(reply)
        if path == "/v1/messages":
            assert error["type"] == "error" and isinstance(error["error"]["type"], str)
        else:
            assert isinstance(error["error"]["message"], str)


@given(path=st.sampled_from(ROUTES), body=st.binary(max_size=300))
def test_random_bytes_are_never_a_500(path: str, body: bytes) -> None:
    _check(path, body)


@given(data=st.data(), path=st.sampled_from(ROUTES))
def test_mutated_requests_are_never_a_500(data: st.DataObject, path: str) -> None:
    body = data.draw(mutated(VALID[path]))
    encoded = json.dumps(body).encode()
    if data.draw(st.booleans()):  # and broken bytes inside otherwise valid JSON
        cut = data.draw(st.integers(0, len(encoded)))
        encoded = encoded[:cut] + data.draw(st.binary(min_size=1, max_size=3)) + encoded[cut:]
    _check(path, encoded)


def test_the_valid_seeds_are_served() -> None:
    for path, body in VALID.items():

        async def run(path: str = path, body: dict[str, Any] = body) -> tuple[int, bytes]:
            return await _call(App(CheckingBackend(STREAMS)), path, json.dumps(body).encode())

        status, reply = asyncio.run(run())
        assert status == 200, reply
