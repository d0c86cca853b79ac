"""The whole stack end to end: a local model behind `streamfn serve`, streamed to the
official openai SDK and to our own proxy provider over both shells."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import trio
from loopback_server import KEY, Server, raw_post, read_all, runtime_for
from tiny_model import build_tiny_model

import streamfn.asgi._app as app_module
import streamfn.io_asyncio as sf_asyncio
import streamfn.io_trio as sf_trio
from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.cli._serve_local import LocalBackend
from streamfn.core import Context, Done, Error, ErrorKind, Event, Model, Options, TextDelta
from streamfn.core._accumulate import check_protocol

PROMPT = "Say something."


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def server(model_dir: Path, shell: str) -> Iterator[Server]:
    """The local model served on each shell (tests/serve/conftest.py)."""
    backend = LocalBackend(model_dir, runtime=runtime_for(shell))
    try:
        with Server(App(RouterBackend(backend, None), ServerConfig(api_key=KEY))) as srv:
            yield srv
    finally:
        backend.close()


def _text(events: list[Event]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


def _openai_text(server: Server) -> str:
    with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as client:
        parts = []
        for chunk in client.chat.completions.create(
            model="local",
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            max_tokens=8,
            temperature=0,
        ):
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
    return "".join(parts)


def test_local_model_streams_to_the_openai_sdk_and_to_our_proxy_over_both_shells(
    server: Server,
) -> None:
    expected = _openai_text(server)
    assert expected  # greedy decoding of the tiny model produces some text
    model = Model(id="local", provider="proxy", api="proxy", base_url=server.url)
    options = Options(api_key=KEY, max_tokens=8, temperature=0)

    async def via_asyncio() -> list[Event]:
        async with sf_asyncio.stream(model, Context.of(PROMPT), options) as events:
            return [e async for e in events]

    async def via_trio() -> list[Event]:
        async with sf_trio.stream(model, Context.of(PROMPT), options) as events:
            return [e async for e in events]

    for events in (asyncio.run(via_asyncio()), trio.run(via_trio)):
        check_protocol(events)
        assert isinstance(events[-1], Done)
        assert events[-1].usage.output > 0
        assert _text(events) == expected


def test_proxy_with_a_wrong_token_is_an_auth_error(server: Server) -> None:
    model = Model(id="local", provider="proxy", api="proxy", base_url=server.url)

    async def run() -> list[Event]:
        opts = Options(api_key="wrong", max_attempts=1)
        async with sf_asyncio.stream(model, Context.of(PROMPT), opts) as events:
            return [e async for e in events]

    last = asyncio.run(run())[-1]
    assert isinstance(last, Error) and last.kind is ErrorKind.AUTH and last.status == 401


class _Held:
    """Wraps one step of the server's work: the step, once entered, waits (off the
    serving loop if the server put it there) until the test has probed ``/health``.

    Whether the probe was answered while the step was still held is an ordering,
    not a time: a step run on the serving loop blocks the loop, so no probe can be
    answered until the step gives up waiting (``GIVE_UP`` s, a hang guard only)."""

    GIVE_UP = 20.0

    def __init__(self, step: Callable[..., Any]) -> None:
        self.step = step
        self.entered = threading.Event()
        self.released = threading.Event()
        self.gave_up = False

    def __call__(self, *args: Any) -> Any:
        self.entered.set()
        self.gave_up = not self.released.wait(self.GIVE_UP)
        return self.step(*args)


def _health(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        return read_all(sock, 2 * _Held.GIVE_UP)


def test_health_answers_while_a_6_mb_prompt_is_parsed_and_counted(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parse of a huge body and the count of its last message run off the
    serving loop: ``/health`` answers while each of them is still under way."""
    parse = _Held(app_module.parse_request)
    count = _Held(LocalBackend._surely_too_long)
    monkeypatch.setattr(app_module, "parse_request", parse)
    monkeypatch.setattr(LocalBackend, "_surely_too_long", lambda self, text: count(self, text))
    prompt = "the cat sat on the mat " * (6_000_000 // 23)
    body = json.dumps(
        {"model": "local", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    ).encode()
    reply: list[bytes] = []

    def big_request() -> None:
        with raw_post(server.port, "/v1/chat/completions", body) as sock:
            reply.append(read_all(sock, 120))

    worker = threading.Thread(target=big_request)
    worker.start()
    try:
        for step in (parse, count):
            assert step.entered.wait(60), "the big request never reached this step"
            assert _health(server.port).startswith(b"HTTP/1.1 200")
            answered_while_held = not step.gave_up
            step.released.set()
            assert answered_while_held, "the serving loop was blocked by this step"
    finally:
        parse.released.set()
        count.released.set()
        worker.join()
    # refused from its size alone, in the client's dialect, without tokenizing 6 MB
    assert reply[0].startswith(b"HTTP/1.1 400") and b"context_length_exceeded" in reply[0]
