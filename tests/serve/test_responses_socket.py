"""Responses over a WebSocket, served to the openai SDK's ``responses.connect()``.

Many turns on one socket, each answered with the events the HTTP route streams; what
the server does not take is an ``error`` event and the socket stays open; the key and
the Host/Origin rules are HTTP's; a closed socket cancels the upstream call and frees
its place; a client cannot queue work without bound.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend, wait_until

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.asgi._socket import MAX_WAITING
from streamfn.core import Model

TEXT = "Bonjour le monde — 東京!"


pytestmark = pytest.mark.usefixtures("shell")


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider(stall=30.0) as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(shell: str, upstream: FakeProvider) -> Iterator[tuple[Server, App]]:
    def claude(fault: str, token: str) -> Model:
        url = upstream.base_url(fault, "anthropic", token)
        return Model(id="claude-sonnet-4-6", provider="anthropic", api="anthropic", base_url=url)

    served = {"claude": claude("ok", "ws"), "claude-stalls": claude("stall-mid", "ws-stall")}
    backend = provider_backend({"ANTHROPIC_API_KEY": "upstream"}, models=list(served.values()))
    backend.models.update(served)
    app = App(RouterBackend(None, backend), ServerConfig(api_key=KEY))
    with Server(app) as server:
        yield server, app


def _client(server: Server, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)


def _turn(conn: Any) -> list[Any]:
    events = []
    for event in conn:
        events.append(event)
        if event.type in ("response.completed", "response.incomplete", "response.failed", "error"):
            return events
    raise AssertionError("the socket closed inside a turn")


def test_many_turns_on_one_socket(gateway: tuple[Server, App]) -> None:
    server, _ = gateway
    with _client(server) as client, client.responses.connect() as conn:
        for _ in range(3):
            conn.response.create(model="claude", input="Hi", instructions="Be brief.")
            events = _turn(conn)
            assert events[0].type == "response.created" and events[-1].type == "response.completed"
            text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
            assert text == TEXT
            assert events[-1].response.output[0].content[0].text == TEXT


def test_what_the_server_does_not_take_is_an_error_event_and_the_socket_stays(
    gateway: tuple[Server, App],
) -> None:
    server, _ = gateway
    with _client(server) as client, client.responses.connect() as conn:
        conn.send({"type": "response.steer", "input": "faster", "previous_response_id": "r"})  # type: ignore[typeddict-item]
        [error] = _turn(conn)
        assert error.type == "error" and "response.steer" in error.message
        assert error.status == 400
        conn.response.create(model="claude", input="Hi", store=True)
        [error] = _turn(conn)
        assert "keeps no conversations" in error.message
        conn.response.create(model="nosuch", input="Hi")
        [error] = _turn(conn)
        assert error.status == 404
        conn.response.create(model="claude", input="Hi")
        assert _turn(conn)[-1].type == "response.completed"


def test_the_key_is_checked_at_the_handshake(
    gateway: tuple[Server, App], upstream: FakeProvider
) -> None:
    server, _ = gateway
    before = len(upstream.requests)
    with (
        _client(server, key="wrong") as client,
        pytest.raises(Exception, match="401"),
        client.responses.connect() as conn,
    ):
        conn.response.create(model="claude", input="Hi")
        _turn(conn)
    assert len(upstream.requests) == before


def _handshake(port: int, extra: str = "") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            (
                "GET /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\nupgrade: websocket\r\n"
                "connection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                f"sec-websocket-version: 13\r\nauthorization: Bearer {KEY}\r\n{extra}\r\n"
            ).encode()
        )
        return sock.recv(4096)


def test_web_pages_and_foreign_hosts_are_refused(gateway: tuple[Server, App]) -> None:
    server, _ = gateway
    assert _handshake(server.port).startswith(b"HTTP/1.1 101")
    assert not _handshake(server.port, "origin: http://evil.example\r\n").startswith(
        b"HTTP/1.1 101"
    )


def test_the_handshake_answer_carries_a_request_id_like_every_answer(
    gateway: tuple[Server, App],
) -> None:
    """Accepted (101) or refused (403), the answer names a request id under both names
    the SDKs read, as every HTTP answer does (the operator's log and a user's report
    meet on it)."""
    server, _ = gateway
    for answer in (
        _handshake(server.port),
        _handshake(server.port, "origin: http://e.example\r\n"),
    ):
        head = answer.split(b"\r\n\r\n")[0].lower()
        [own] = [
            line[len(b"x-request-id: ") :]
            for line in head.split(b"\r\n")
            if line.startswith(b"x-request-id: ")
        ]
        assert own.startswith(b"req_") and b"request-id: " + own in head, head


def test_a_closed_socket_cancels_the_upstream_call(
    gateway: tuple[Server, App], upstream: FakeProvider
) -> None:
    server, app = gateway
    with _client(server) as client, client.responses.connect() as conn:
        conn.response.create(model="claude-stalls", input="Hi")
        for event in conn:  # the answer starts, then the upstream stalls
            if event.type == "response.output_text.delta":
                break
        assert app.active == 1
    wait_until(lambda: app.active == 0 and app.admitted == 0, within=5.0)


def test_a_client_cannot_queue_work_without_bound(gateway: tuple[Server, App]) -> None:
    server, app = gateway
    with _client(server) as client, client.responses.connect() as conn:
        conn.response.create(model="claude-stalls", input="Hi")  # holds the socket's turn
        for _ in range(MAX_WAITING + 2):
            conn.response.create(model="claude", input="Hi")
        started = time.monotonic()
        with pytest.raises(Exception, match="1008"):
            for _ in conn:
                assert time.monotonic() - started < 10
    wait_until(lambda: app.active == 0 and app.admitted == 0, within=5.0)


def _stalled_turn(conn: Any) -> None:
    """A turn that starts and then holds the socket (its upstream stalls)."""
    conn.response.create(model="claude-stalls", input="Hi")
    for event in conn:
        if event.type == "response.output_text.delta":
            return


def test_messages_waiting_for_their_turn_are_charged_to_the_memory_budget(
    gateway: tuple[Server, App],
) -> None:
    # A waiting message is a request body held in memory: a client with many sockets,
    # each with MAX_WAITING messages of --max-body-bytes queued, held them uncounted.
    server, app = gateway
    with _client(server) as client, client.responses.connect() as conn:
        _stalled_turn(conn)
        before = app.buffered
        size = 200_000
        for _ in range(3):
            conn.response.create(model="claude", input="x" * size)
        wait_until(lambda: app.buffered >= before + 3 * size, within=5.0)
    wait_until(lambda: app.active == 0 and app.admitted == 0 and app.buffered == 0, within=5.0)


def test_socket_errors_have_the_sdk_shape(gateway: tuple[Server, App]) -> None:
    # the openai SDK reads a socket's error event as ResponseWsError: its details in
    # ``error`` ({type, code, message, param}), the HTTP status in ``status``
    server, _ = gateway
    with _client(server) as client, client.responses.connect() as conn:
        conn.response.create(model="nosuch", input="Hi")
        [error] = _turn(conn)
        assert error.status == 404
        assert error.error is not None and error.error.code == error.code
        assert "nosuch" in error.error.message and error.error.type


def test_an_error_inside_a_turn_has_the_sdk_shape() -> None:
    # an upstream failure after the turn began: the encoder's ``error`` event, read by
    # the SDK as ResponseWsError (its ``error``), the HTTP stream's flat fields kept
    from openai._models import construct_type_unchecked
    from openai.types.responses.responses_server_event import ResponsesServerEvent

    from streamfn.core._events import Error, Start
    from streamfn.core.dialects.openai_responses._encode import ResponsesEncoder

    encoder = ResponsesEncoder(response_id="r", model="m", messages=True)
    encoder.encode(Start())
    encoder.encode(Error.network("the upstream reset the connection"))
    assert encoder.messages is not None
    event: Any = construct_type_unchecked(
        value=json.loads(encoder.messages[-1]), type_=ResponsesServerEvent
    )
    assert event.type == "error" and event.error is not None
    assert event.error.message == event.message == "the upstream reset the connection"
    assert event.error.code == event.code and event.error.type
    plain = ResponsesEncoder(response_id="r", model="m")  # the SSE stream: unchanged
    plain.encode(Start())
    assert b'"error":' not in plain.encode(Error.network("x"))


def test_an_idle_socket_is_closed(
    gateway: tuple[Server, App], monkeypatch: pytest.MonkeyPatch
) -> None:
    # an idle HTTP connection closes after the head timeout; a socket with no turn and
    # no message held its connection place (of --max-connections) forever
    server, _ = gateway
    monkeypatch.setattr("streamfn.asgi._socket.IDLE_TIMEOUT", 0.5)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            (
                "GET /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\nupgrade: websocket\r\n"
                "connection: Upgrade\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                f"sec-websocket-version: 13\r\nauthorization: Bearer {KEY}\r\n\r\n"
            ).encode()
        )
        head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 101")
        frame = head.split(b"\r\n\r\n", 1)[1] or sock.recv(64)
        assert frame[0] == 0x88 and frame[2:4] == (1001).to_bytes(2, "big")  # going away
