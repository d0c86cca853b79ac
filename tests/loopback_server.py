"""A loopback `streamfn serve`: the demo event streams, the app on a real hypercorn
in a thread (on the shell `SHELL[0]` names: the serve tests run on both), and
raw-socket helpers; shared by the serve tests and other rooms' tests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import trio

from streamfn.asgi import App, Runtime, ServerConfig
from streamfn.asgi._backends import ProviderBackend, environment
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
from streamfn.fuzz._events_backend import EventsBackend

KEY = "test-server-key"
#: a time nothing in a test reaches when the behaviour under test works, so that a
#: bound of a third of it holds on any machine yet fails when the behaviour breaks
SLOW = 30.0
#: how long to wait for what surely comes (a hang guard, not a timing claim)
HANG_GUARD = 30.0

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


#: the shell the next `Server` runs on (the ``shell`` fixture of conftest.py sets it)
SHELL = ["asyncio"]


class Server:
    """The app on a real hypercorn in a thread, on asyncio (`streamfn.io_asyncio._serve`)
    or trio (`streamfn.io_trio._server`): the shell of `SHELL` unless ``shell`` is given."""

    def __init__(self, app: App, shell: str | None = None, **serve_options: Any) -> None:
        self.app = app
        self.shell = shell or SHELL[0]
        self.serve_options = serve_options
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self._stop: Any = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._ready = threading.Event()

    def _run(self) -> None:
        if self.shell == "trio":
            self.loop.close()
            trio.run(self._main_trio)
            return
        from streamfn.io_asyncio._serve import serve

        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self._stop = asyncio.Event()
            self._ready.set()
            await serve(self.app, self.sock, self._stop, log_errors=False, **self.serve_options)

        self.loop.run_until_complete(main())
        self.loop.close()

    async def _main_trio(self) -> None:
        from streamfn.io_trio._server import serve

        self._stop = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        self._ready.set()
        await serve(self.app, self.sock, self._stop, log_errors=False, **self.serve_options)

    def __enter__(self) -> Server:
        self._thread.start()
        self._ready.wait(5)
        wait_port(self.port)
        return self

    def stop(self) -> None:
        """Start a graceful shutdown (as SIGTERM does) without waiting for it."""
        assert self._stop is not None
        if self._token is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        elif not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):  # it closed meanwhile: stopped already
                self.loop.call_soon_threadsafe(self._stop.set)

    def call(self, fn: Callable[[], Awaitable[None]], timeout: float = 5) -> None:
        """Run ``fn`` on the server's loop and wait for it."""
        if self._token is not None:
            trio.from_thread.run(fn, trio_token=self._token)
        else:
            asyncio.run_coroutine_threadsafe(fn(), self.loop).result(timeout)

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._thread.join(30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def runtime_for(shell: str) -> Runtime:
    """The serving loop's primitives for a backend that relays to it (the local model)."""
    from streamfn.io_asyncio._server import AsyncioRuntime
    from streamfn.io_trio._server import TrioRuntime

    return TrioRuntime() if shell == "trio" else AsyncioRuntime()


def provider_backend(environ: dict[str, str] | None = None, **options: Any) -> ProviderBackend:
    """A `ProviderBackend` whose upstream client runs on the shell of `SHELL`."""
    from streamfn.io_asyncio import Client as AsyncioClient
    from streamfn.io_trio import Client as TrioClient

    env = environment(environ)
    client = (TrioClient if SHELL[0] == "trio" else AsyncioClient)(environ=env)
    return ProviderBackend(client, env, **options)


def wait_port(port: int) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise RuntimeError("server did not start")


def wait_until(condition: Callable[[], bool], within: float) -> None:
    """Poll ``condition`` until it holds; an AssertionError after ``within`` s."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"not within {within} s"
        time.sleep(0.005)


@contextlib.contextmanager
def serving(**config: Any) -> Iterator[tuple[Server, EventsBackend]]:
    backend_options = {
        k: config.pop(k) for k in ("delay", "first_delay", "max_output") if k in config
    }
    serve_options = {
        k: config.pop(k) for k in ("max_connections", "head_timeout", "allow_h2c") if k in config
    }
    observers = config.pop("observers", ())
    backend = EventsBackend(STREAMS, **backend_options)
    config.setdefault("api_key", KEY)
    app = App(backend, ServerConfig(**config), observers=observers)
    with Server(app, **serve_options) as server:
        yield server, backend


USER = [{"role": "user", "content": "hello"}]


def read_all(sock: socket.socket, limit: float = 5.0) -> bytes:
    sock.settimeout(limit)
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def raw_post(port: int, path: str, body: bytes, key: str = KEY) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nauthorization: Bearer {key}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


@contextlib.contextmanager
def serve_cli(
    args: list[str], environ: dict[str, str], api_key: str | None = KEY
) -> Iterator[str]:
    """The real ``streamfn serve`` (``--no-local --port 0 --api-key KEY`` and ``args``)
    in a child process with ``environ`` added; yields its base URL. ``api_key`` None:
    no ``--api-key`` (a gateway with client keys)."""
    code = "import sys; from streamfn.cli import main; sys.exit(main())"
    key = ["--api-key", api_key] if api_key is not None else []
    argv = ["serve", "--no-local", "--port", "0", *key, *args]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **environ},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert match, line
        yield f"http://127.0.0.1:{match.group(1)}"
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


def ask_served(backend: Any, model: str, content: str = "hi") -> Any:
    """The Chat Completions answer of ``backend`` served on a loopback server (behind the
    server key), asked for ``model`` with the official openai SDK."""
    import openai

    from streamfn.asgi._backends import RouterBackend

    with (
        Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server,
        openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client,
    ):
        return client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": content}]
        )
