"""The whole stack end to end: a local model behind `streamfn serve`, streamed to the
official openai SDK and to our own proxy provider over both shells."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator

import openai
import pytest
import trio
from test_server import KEY, Server, _post, _read_all
from tiny_model import build_tiny_model

import streamfn.io_asyncio as sf_asyncio
import streamfn.io_trio as sf_trio
from streamfn.core import Context, Done, Error, ErrorKind, Event, Model, Options, TextDelta
from streamfn.core.accumulate import check_protocol
from streamfn.io_asyncio.backends import LocalBackend, RouterBackend
from streamfn.io_asyncio.server import App, ServerConfig

PROMPT = "Say something."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    model_dir = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    backend = LocalBackend(model_dir)
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


def test_health_answers_within_50_ms_while_a_6_mb_prompt_is_prepared(server: Server) -> None:
    prompt = "the cat sat on the mat " * (6_000_000 // 23)
    body = json.dumps(
        {"model": "local", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    ).encode()
    reply: list[bytes] = []

    def big_request() -> None:
        with _post(server.port, "/v1/chat/completions", body) as sock:
            reply.append(_read_all(sock, 120))

    worker = threading.Thread(target=big_request)
    latencies = []
    worker.start()
    while worker.is_alive():
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
            assert _read_all(sock).startswith(b"HTTP/1.1 200")
        latencies.append(time.perf_counter() - started)
        time.sleep(0.002)
    worker.join()
    assert latencies, "the big request was answered before any probe"
    assert max(latencies) < 0.050, latencies
    # refused from its size alone, in the client's dialect, without tokenizing 6 MB
    assert reply[0].startswith(b"HTTP/1.1 400") and b"context_length_exceeded" in reply[0]
