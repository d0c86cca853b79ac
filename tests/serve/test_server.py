"""`streamfn serve` tested with clients nobody here wrote: the official openai and
anthropic SDKs, raw sockets and curl, against a real hypercorn on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from streamfn.core import (
    Done,
    Error,
    Event,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from streamfn.io_asyncio.serve import serve
from streamfn.io_asyncio.server import App, EventsBackend, ServerConfig

KEY = "test-server-key"

TEXT: list[Event] = [
    Start(model="demo-text"),
    TextStart(0),
    TextDelta(0, "Hello"),
    TextDelta(0, ", wörld 🌍"),
    TextEnd(0),
    Done(stop_reason=StopReason.STOP, usage=Usage(input=12, output=4, cache_read=3)),
]
TOOL: list[Event] = [
    Start(model="demo-tool"),
    TextStart(0),
    TextDelta(0, "Checking."),
    TextEnd(0),
    ToolCallStart(1, "call_abc123", "get_weather"),
    ToolCallDelta(1, '{"city": '),
    ToolCallDelta(1, '"Paris", "units": "c"}'),
    ToolCallEnd(1),
    Done(stop_reason=StopReason.TOOL_USE, usage=Usage(input=20, output=9)),
]
THINKING: list[Event] = [
    Start(model="demo-thinking"),
    ThinkingStart(0),
    ThinkingDelta(0, "The user greets me. "),
    ThinkingDelta(0, "I should greet back."),
    ThinkingEnd(0, signature="c2lnbmF0dXJl"),
    TextStart(1),
    TextDelta(1, "Hi there!"),
    TextEnd(1),
    Done(stop_reason=StopReason.STOP, usage=Usage(input=5, output=15, reasoning=10)),
]
OVERFLOW: list[Event] = [
    Start(model="demo-overflow"),
    Error.context_overflow("prompt is too long: 300000 tokens > 200000 maximum", status=400),
]
MIDSTREAM_ERROR: list[Event] = [
    Start(model="demo-midstream"),
    TextStart(0),
    TextDelta(0, "partial"),
    Error.network("upstream dropped the connection"),
]
STREAMS = {
    "demo-text": TEXT,
    "demo-tool": TOOL,
    "demo-thinking": THINKING,
    "demo-overflow": OVERFLOW,
    "demo-midstream": MIDSTREAM_ERROR,
}


class Server:
    """The app on a real hypercorn in a thread, through `streamfn.io_asyncio.serve`."""

    def __init__(self, app: App, **serve_options: Any) -> None:
        self.app = app
        self.serve_options = serve_options
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._ready = threading.Event()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self._stop = asyncio.Event()
            self._ready.set()
            await serve(self.app, self.sock, self._stop, log_errors=False, **self.serve_options)

        self.loop.run_until_complete(main())
        self.loop.close()

    def __enter__(self) -> Server:
        self._thread.start()
        self._ready.wait(5)
        _wait_port(self.port)
        return self

    def stop(self) -> None:
        """Start a graceful shutdown (as SIGTERM does) without waiting for it."""
        assert self._stop is not None
        if not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):  # it closed meanwhile: stopped already
                self.loop.call_soon_threadsafe(self._stop.set)

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._thread.join(30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _wait_port(port: int) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise RuntimeError("server did not start")


@contextlib.contextmanager
def serving(**config: Any) -> Iterator[tuple[Server, EventsBackend]]:
    backend_options = {
        k: config.pop(k) for k in ("delay", "first_delay", "max_output") if k in config
    }
    serve_options = {k: config.pop(k) for k in ("max_connections", "head_timeout") if k in config}
    backend = EventsBackend(STREAMS, **backend_options)
    with Server(App(backend, ServerConfig(api_key=KEY, **config)), **serve_options) as server:
        yield server, backend


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serving() as (srv, _):
        yield srv


_CLIENTS: list[openai.OpenAI | anthropic.Anthropic] = []


def oa(server: Server, key: str = KEY) -> openai.OpenAI:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0, timeout=10)
    _CLIENTS.append(client)
    return client


def an(server: Server, key: str = KEY) -> anthropic.Anthropic:
    client = anthropic.Anthropic(base_url=server.url, api_key=key, max_retries=0, timeout=10)
    _CLIENTS.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


USER = [{"role": "user", "content": "hello"}]


def test_openai_sdk_streams_text_and_its_final_completion_matches_ours(server: Server) -> None:
    with oa(server).chat.completions.stream(
        model="demo-text",
        messages=USER,
        stream_options={"include_usage": True},  # type: ignore[arg-type]
    ) as stream:
        # OpenAI's first chunk carries role and an empty content, so drop empties
        deltas = [e.delta for e in stream if e.type == "content.delta" and e.delta]
        final = stream.get_final_completion()
    assert deltas == ["Hello", ", wörld 🌍"]
    assert final.choices[0].message.content == "Hello, wörld 🌍"
    assert final.choices[0].finish_reason == "stop"
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (15, 4)


def test_openai_sdk_streams_a_tool_call_with_arguments(server: Server) -> None:
    with oa(server).chat.completions.stream(model="demo-tool", messages=USER) as stream:  # type: ignore[arg-type]
        for _ in stream:
            pass
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == "Checking."
    assert final.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    call = message.tool_calls[0]
    assert (call.id, call.function.name) == ("call_abc123", "get_weather")
    assert call.function.arguments == '{"city": "Paris", "units": "c"}'


def test_anthropic_sdk_streams_thinking_and_text(server: Server) -> None:
    with an(server).messages.stream(model="demo-thinking", max_tokens=100, messages=USER) as s:  # type: ignore[arg-type]
        texts = list(s.text_stream)
        final = s.get_final_message()
    assert texts == ["Hi there!"]
    kinds = [b.type for b in final.content]
    assert kinds == ["thinking", "text"]
    thinking = final.content[0]
    assert thinking.type == "thinking"
    assert thinking.thinking == "The user greets me. I should greet back."
    assert thinking.signature == "c2lnbmF0dXJl"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 15


def test_anthropic_sdk_streams_a_tool_call(server: Server) -> None:
    with an(server).messages.stream(model="demo-tool", max_tokens=100, messages=USER) as s:  # type: ignore[arg-type]
        final = s.get_final_message()
    assert final.stop_reason == "tool_use"
    tool = final.content[1]
    assert tool.type == "tool_use"
    assert (tool.id, tool.name, tool.input) == (
        "call_abc123",
        "get_weather",
        {"city": "Paris", "units": "c"},
    )


def test_non_streaming_openai_and_anthropic(server: Server) -> None:
    completion = oa(server).chat.completions.create(model="demo-tool", messages=USER)  # type: ignore[arg-type]
    assert completion.choices[0].message.tool_calls is not None
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    message = an(server).messages.create(model="demo-text", max_tokens=10, messages=USER)  # type: ignore[arg-type]
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello, wörld 🌍"


def test_wrong_key_is_401_in_each_clients_shape(server: Server) -> None:
    with pytest.raises(openai.AuthenticationError):
        oa(server, "wrong").chat.completions.create(model="demo-text", messages=USER)  # type: ignore[arg-type]
    with pytest.raises(anthropic.AuthenticationError) as info:
        an(server, "wrong").messages.create(model="demo-text", max_tokens=5, messages=USER)  # type: ignore[arg-type]
    assert info.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


def test_malformed_request_is_a_400_naming_the_field(server: Server) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        an(server).messages.create(model="demo-text", max_tokens=5, messages=[])
    assert "messages" in str(info.value)
    with pytest.raises(openai.BadRequestError):
        oa(server).chat.completions.create(
            model="demo-text",
            messages=[{"role": "wizard", "content": "x"}],  # type: ignore[list-item]
        )


def test_unknown_model_is_404(server: Server) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        oa(server).chat.completions.create(model="nope", messages=USER)  # type: ignore[arg-type]
    assert "demo-text" in str(info.value)


def test_error_before_output_is_an_http_error_clients_understand(server: Server) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oa(server).chat.completions.create(model="demo-overflow", messages=USER, stream=True)  # type: ignore[arg-type]
    assert "prompt is too long" in str(info.value)


def test_error_after_output_arrives_in_stream(server: Server) -> None:
    got: list[str] = []
    with pytest.raises(openai.APIError):
        for chunk in oa(server).chat.completions.create(
            model="demo-midstream",
            messages=USER,
            stream=True,  # type: ignore[arg-type]
        ):
            if chunk.choices and chunk.choices[0].delta.content:
                got.append(chunk.choices[0].delta.content)
    assert got == ["partial"]
    with pytest.raises(anthropic.APIStatusError):  # noqa: SIM117
        with an(server).messages.stream(model="demo-midstream", max_tokens=5, messages=USER) as s:  # type: ignore[arg-type]
            for _ in s:
                pass


def test_models_and_health(server: Server) -> None:
    ids = [m.id for m in oa(server).models.list()]
    assert ids == sorted(STREAMS)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        data = _read_all(sock)
    assert b" 200 " in data.split(b"\r\n", 1)[0] and b'"status":"ok"' in data


def _read_all(sock: socket.socket, limit: float = 5.0) -> bytes:
    sock.settimeout(limit)
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _post(port: int, path: str, body: bytes, key: str = KEY) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nauthorization: Bearer {key}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


STREAM_BODY = b'{"model":"demo-text","stream":true,"messages":[{"role":"user","content":"hi"}]}'


def test_keep_alive_comments_while_the_model_is_silent() -> None:
    with serving(keepalive_interval=0.05, delay=0.3) as (server, _):
        sock = _post(server.port, "/v1/chat/completions", STREAM_BODY)
        with sock:
            data = _read_all(sock)
    assert b": keep-alive" in data
    assert b"data: [DONE]\n\n" in data


def test_client_disconnect_cancels_generation_at_once() -> None:
    with serving(delay=0.5) as (server, backend):
        sock = _post(server.port, "/v1/chat/completions", STREAM_BODY)
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.close()
        deadline = time.monotonic() + 3
        while backend.cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert backend.cancelled == 1
        assert server.app.active == 0


def test_overload_is_429_with_retry_after() -> None:
    with serving(max_concurrency=1, max_queue=0, delay=0.3) as (server, _):
        first = _post(server.port, "/v1/chat/completions", STREAM_BODY)
        first.settimeout(5)
        assert first.recv(4096).startswith(b"HTTP/1.1 200")
        with pytest.raises(openai.RateLimitError) as info:
            oa(server).chat.completions.create(model="demo-text", messages=USER)  # type: ignore[arg-type]
        assert info.value.response.headers["retry-after"] == "1"
        first.close()
        _CLIENTS.pop().close()


def test_request_body_cap_is_413() -> None:
    with serving(max_body_bytes=1000) as (server, _):
        with pytest.raises(anthropic.APIStatusError) as info:
            an(server).messages.create(
                model="demo-text", max_tokens=5, messages=[{"role": "user", "content": "x" * 5000}]
            )
        assert info.value.status_code == 413


def test_native_proxy_stream_is_our_events_as_sse(server: Server) -> None:
    body = (
        b'{"model":"demo-tool","context":{"messages":[{"type":"user","content":"hi"}]},'
        b'"options":{}}'
    )
    with _post(server.port, "/v1/stream", body) as sock:
        data = _read_all(sock)
    assert b"event: toolcall_delta\n" in data
    assert b'data: {"type":"done"' in data


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_smoke(server: Server) -> None:
    out = subprocess.run(
        [
            "curl",
            "-sN",
            server.url + "/v1/chat/completions",
            "-H",
            f"Authorization: Bearer {KEY}",
            "-H",
            "Content-Type: application/json",
            "-d",
            STREAM_BODY.decode(),
        ],
        capture_output=True,
        timeout=20,
        check=True,
    ).stdout
    assert b'"content":"Hello"' in out and out.rstrip().endswith(b"data: [DONE]")


def test_graceful_shutdown_ends_open_streams_cleanly_and_refuses_new_ones() -> None:
    with serving(delay=0.2, shutdown_grace=0.3) as (server, _):
        sock = _post(server.port, "/v1/chat/completions", STREAM_BODY)
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        done = asyncio.run_coroutine_threadsafe(server.app.shutdown(), server.loop)
        with sock:
            data = _read_all(sock)
        done.result(5)
        # the open stream got an in-stream error in OpenAI's shape, then a proper end
        assert b'"error":' in data and b"server is shutting down" in data
        assert data.endswith(b"0\r\n\r\n")  # the chunked body was terminated
        assert server.app.active == 0
        with pytest.raises(openai.InternalServerError) as info:
            oa(server).chat.completions.create(model="demo-text", messages=USER)  # type: ignore[arg-type]
        assert info.value.status_code == 503
