"""What one connection may hold on `streamfn serve`, tried with raw sockets on loopback.

Cleartext HTTP/2 is refused unless the operator allows it, and when allowed a
connection is bounded by the head timeout like an HTTP/1.1 one; a connection
whose peer has closed gives its place back at once. Every bound below is a
third of a timer the test sets far out (`SLOW`): the behaviour under test
ends the connection long before, a missing one never does.
"""

from __future__ import annotations

import socket
import struct
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import hpack
import pytest
from loopback_server import HANG_GUARD, KEY, SLOW, read_all, serving

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

HEALTH = b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"


def _h2_client() -> h2.connection.H2Connection:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    return conn


def _h2_events(data: bytes) -> list[h2.events.Event]:
    """What an HTTP/2 client makes of the server's bytes."""
    client = _h2_client()
    client.data_to_send()
    return list(client.receive_data(data))


def _preface_only(port: int) -> socket.socket:
    """A connection that sends the HTTP/2 preface and SETTINGS, then nothing."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(_h2_client().data_to_send())
    return sock


def _health(port: int) -> int:
    """The status of a plain HTTP/1.1 /health (0: refused or cut)."""
    try:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(HEALTH)
            data = read_all(sock, HANG_GUARD)
    except OSError:
        return 0
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0


def _health_within(port: int, seconds: float) -> int:
    deadline = time.monotonic() + seconds
    status = _health(port)
    while status != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
        status = _health(port)
    return status


# -- cleartext HTTP/2 ------------------------------------------------------------------


def test_cleartext_http2_is_refused_in_http2_by_default() -> None:
    with serving(head_timeout=SLOW) as (server, _), _preface_only(server.port) as sock:
        data = read_all(sock, SLOW / 3)  # returns when the server closes the connection
    terminated = [e for e in _h2_events(data) if isinstance(e, h2.events.ConnectionTerminated)]
    assert terminated, data
    assert terminated[0].error_code == h2.errors.ErrorCodes.HTTP_1_1_REQUIRED
    assert b"use HTTP/1.1" in (terminated[0].additional_data or b"")


def _read_until_closed(sock: socket.socket, limit: float) -> bytes:
    """What the server sent before it closed the connection (a reset counts: it closes
    with the client's SETTINGS unread); raises when it is still open after ``limit``."""
    sock.settimeout(limit)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def _refused_in_http2(data: bytes) -> bool:
    """Whether ``data`` is the server's HTTP/2 refusal (not the cap's HTTP/1.1 503)."""
    ended = [e for e in _h2_events(data) if isinstance(e, h2.events.ConnectionTerminated)]
    return bool(ended) and ended[0].error_code == h2.errors.ErrorCodes.HTTP_1_1_REQUIRED


def _admitted_preface_only(port: int, within: float) -> socket.socket:
    """A preface-only connection the server admitted, refused and closed (its client end
    still open). Past the cap a connection reads the cap's 503 instead and is tried again
    (the server's start-up probe may hold a place for a moment); a server that never
    closes it fails here, as does one with no place free within ``within``."""
    deadline = time.monotonic() + within
    while True:
        sock = _preface_only(port)
        data = _read_until_closed(sock, within)
        if _refused_in_http2(data):
            return sock
        sock.close()
        assert data.startswith(b"HTTP/1.1 503 "), data
        assert time.monotonic() < deadline, "no place came free for a new connection"
        time.sleep(0.05)


def test_preface_only_connections_cannot_lock_the_server_out() -> None:
    """As many preface-only connections as the server admits (`max_connections`), each
    admitted (it reads the HTTP/2 refusal, which only an admitted connection gets) and
    closed by the server while the client keeps its end open: their places are free
    again, so a plain request is served. A server that kept them (h2c served, or a
    refused connection never given back) would be locked out."""
    with serving(head_timeout=SLOW, max_connections=3) as (server, _):
        held: list[socket.socket] = []
        try:
            for _ in range(3):
                held.append(_admitted_preface_only(server.port, SLOW / 3))
            assert _health_within(server.port, SLOW / 3) == 200
        finally:
            for sock in held:
                sock.close()


def test_an_h2c_upgrade_is_answered_in_http1_by_default() -> None:
    upgrade = HEALTH.replace(
        b"connection: close\r\n",
        b"connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAAP__\r\n",
    )
    with (
        serving(head_timeout=SLOW) as (server, _),
        socket.create_connection(("127.0.0.1", server.port)) as sock,
    ):
        sock.sendall(upgrade)
        sock.settimeout(SLOW / 3)
        data = b""
        while not data.endswith(b"\r\n0\r\n\r\n"):  # the whole chunked answer
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data
    assert b'"status":"ok"' in data.replace(b" ", b"")


def test_allowed_h2c_without_a_request_head_is_closed_after_the_head_timeout() -> None:
    with serving(head_timeout=0.5, allow_h2c=True) as (server, _):
        with _preface_only(server.port) as sock:
            data = read_all(sock, SLOW / 3)
        assert any(isinstance(e, h2.events.RemoteSettingsChanged) for e in _h2_events(data))
        # a header block that never ends (no END_HEADERS, no CONTINUATION)
        block = hpack.Encoder().encode(
            [(":method", "GET"), (":path", "/health"), (":scheme", "http"), (":authority", "a")]
        )
        partial = block[:4]
        frame = struct.pack(">I", len(partial))[1:] + bytes([0x1, 0x0]) + struct.pack(">I", 1)
        with _preface_only(server.port) as sock:
            sock.sendall(frame + partial)
            read_all(sock, SLOW / 3)


def test_allowed_h2c_serves_a_request_and_closes_when_idle() -> None:
    with (
        serving(head_timeout=0.5, allow_h2c=True) as (server, _),
        socket.create_connection(("127.0.0.1", server.port)) as sock,
    ):
        client = _h2_client()
        headers = [
            (":method", "GET"),
            (":path", "/health"),
            (":scheme", "http"),
            (":authority", "127.0.0.1"),
            ("authorization", f"Bearer {KEY}"),
        ]
        client.send_headers(1, headers, end_stream=True)
        sock.sendall(client.data_to_send())
        data = read_all(sock, SLOW / 3)  # the answer, then the close once idle
    events = client.receive_data(data)
    status = [
        dict(e.headers).get(b":status") for e in events if isinstance(e, h2.events.ResponseReceived)
    ]
    assert status == [b"200"], events
    assert any(isinstance(e, h2.events.StreamEnded) for e in events)


# -- a peer that closed ----------------------------------------------------------------


@pytest.mark.parametrize("sent", [b"", b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127"])
def test_a_connection_whose_peer_closed_is_closed_at_once(sent: bytes) -> None:
    with (
        serving(head_timeout=SLOW) as (server, _),
        socket.create_connection(("127.0.0.1", server.port)) as sock,
    ):
        sock.sendall(sent)
        sock.shutdown(socket.SHUT_WR)
        data = read_all(sock, SLOW / 3)  # returns when the server closes the connection
    assert data == b"" if not sent else data.startswith(b"HTTP/1.1 400")


def test_closed_connections_give_their_place_back_at_once() -> None:
    with serving(head_timeout=SLOW, max_connections=2) as (server, _):
        for _ in range(3):  # a burst of short-lived connections, more than the cap
            for sock in [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]:
                sock.close()
            assert _health_within(server.port, SLOW / 3) == 200
