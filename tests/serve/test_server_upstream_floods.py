"""An upstream flooding bytes that make no event never stalls the server's loop.

While one client's stream reads endless interim responses or SSE comments from
the upstream, ``/health`` answers: within a third of the flood's length, which
a server whose loop the flood holds never meets (it answers when the flood ends).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend, read_all, wait_until

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core.catalogue._models import Model

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

#: how long a flood lasts unless the server leaves
FLOOD = 30.0


@pytest.fixture(scope="module")
def flooding() -> Iterator[FakeProvider]:
    with FakeProvider(stall=FLOOD) as fake:
        yield fake


def _health_seconds(port: int) -> float:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        data = read_all(sock, FLOOD)
    assert data.startswith(b"HTTP/1.1 200"), data
    return time.monotonic() - started


@pytest.mark.parametrize("fault", ["flood-1xx", "flood-comments"])
def test_health_answers_while_an_upstream_floods_bytes_without_events(
    flooding: FakeProvider, shell: str, fault: str
) -> None:
    token = f"{fault}-{shell}"
    model = Model(
        id="flood",
        provider="openai",
        api="openai-chat",
        base_url=flooding.base_url(fault, "openai-chat", token),
        max_output=100,
    )
    backend = provider_backend(environ={"OPENAI_API_KEY": "sk-k"}, models=[model], registry=False)
    app = App(RouterBackend(None, backend), ServerConfig(api_key=KEY))
    body = b'{"model":"openai:flood","stream":true,"messages":[{"role":"user","content":"hi"}]}'
    with Server(app) as server, socket.create_connection(("127.0.0.1", server.port)) as client:
        client.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            + f"authorization: Bearer {KEY}\r\ncontent-type: application/json\r\n".encode()
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        wait_until(lambda: flooding.hits(token) == 1, FLOOD / 3)  # the flood has begun
        time.sleep(0.2)
        assert _health_seconds(server.port) < FLOOD / 3
