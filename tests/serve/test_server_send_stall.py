"""A client that stops reading is disconnected after the send timeout, not held forever.

The client is a raw socket with a small receive buffer that sends a streaming
request and never reads; the upstream is the loopback fake provider streaming
an answer far larger than every buffer between them, so the server's writes
wait on the client. With ``send_timeout`` the server resets that connection,
closes the upstream connection and frees the request's slot: with
``max_concurrency=1`` a second request is served. A client that reads slowly
but steadily is never cut. Bounds are orderings and generous hang guards
(`HANG_GUARD`), never a tight wall-clock claim.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Iterator

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import pytest
from fake_provider import WIRE_FORMATS, FakeProvider
from loopback_server import HANG_GUARD, KEY, Server, provider_backend, read_all, wait_until

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core.catalogue._models import Model

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

#: the send timeout under test: short, so the test is quick; the bounds below are
#: many times it (a hang guard), never a measure of it
TIMEOUT = 0.5

#: an answer of ~25 MB in OpenAI's streaming format: more than the kernel's and the
#: server's buffers hold, so a client that does not read stalls the server's writes
LONG = WIRE_FORMATS["openai-chat"][0]([f" word{i}" for i in range(150_000)])


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[FakeProvider, str]]:
    with FakeProvider() as fake:
        yield fake, fake.serve(LONG)


def _app(base_url: str, short: str | None = None, **config: object) -> App:
    """The app with model ``long`` at ``base_url`` (and ``short`` there, if given)."""
    urls = {"long": base_url, **({"short": short} if short else {})}
    models = [
        Model(id=name, provider="openai", api="openai-chat", base_url=url)
        for name, url in urls.items()
    ]
    backend = provider_backend(environ={"OPENAI_API_KEY": "sk-k"}, models=models, registry=False)
    return App(RouterBackend(None, backend), ServerConfig(api_key=KEY, **config))  # type: ignore[arg-type]


def _request(stream: bool, model: bytes = b"long") -> bytes:
    body = (
        b'{"model":"openai:%s","stream":%s,"max_tokens":10,'
        b'"messages":[{"role":"user","content":"hi"}]}' % (model, b"true" if stream else b"false")
    )
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n"
        + f"authorization: Bearer {KEY}\r\ncontent-type: application/json\r\n".encode()
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )


def _client(port: int, rcvbuf: int = 4096) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: the window
    sock.connect(("127.0.0.1", port))
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    """Read what is left: True when the server reset or closed the connection (the
    response never ended), False when it ended with its last chunk."""
    try:
        data = read_all(sock, HANG_GUARD)
    except ConnectionResetError:
        return True
    return not data.endswith(b"0\r\n\r\n")


def test_a_client_that_never_reads_is_disconnected_and_its_slot_freed(
    upstream: tuple[FakeProvider, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, base_url = upstream
    app = _app(base_url, max_concurrency=1, max_queue=4, send_timeout=TIMEOUT)
    caplog.set_level(logging.WARNING, logger="streamfn")
    with Server(app) as server:
        stalled = _client(server.port)
        try:
            stalled.sendall(_request(stream=True))
            sent = time.monotonic()
            wait_until(lambda: fake.open_connections == 1, HANG_GUARD)  # the upstream streams
            # the server gives up on the client: the upstream's connection closes (without
            # the bound it stays open, its answer held back by the client, until the guard)
            wait_until(lambda: fake.open_connections == 0, 8)
            assert time.monotonic() - sent >= TIMEOUT  # not before the client had its time
            assert _closed_by_server(stalled)
        finally:
            stalled.close()
        # the slot came back: with max_concurrency=1 the next request is served
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(_request(stream=False))
            answer = read_all(sock, HANG_GUARD)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    said = [r.getMessage() for r in caplog.records if "took no response bytes" in r.getMessage()]
    assert len(said) == 1, said
    assert "sk-k" not in said[0] and "word" not in said[0]


def test_a_slow_but_steady_reader_gets_the_whole_answer(
    upstream: tuple[FakeProvider, str],
) -> None:
    fake, _ = upstream
    short = fake.serve(WIRE_FORMATS["openai-chat"][0]([f" w{i}" for i in range(30_000)]))
    app = _app(short, send_timeout=TIMEOUT)
    with Server(app) as server, _client(server.port, 65536) as sock:
        sock.sendall(_request(stream=True))
        sock.settimeout(HANG_GUARD)
        data = bytearray()
        while True:  # a few KiB every tenth of the timeout, never a pause as long as it
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            time.sleep(TIMEOUT / 10)
    assert data.startswith(b"HTTP/1.1 200"), bytes(data[:200])
    assert data.endswith(b"0\r\n\r\n")  # the response ended, not cut
    assert b"data: [DONE]" in data
    assert b" w29999" in data


def _served(port: int) -> bool:
    """Whether a new connection is served now (not refused by the connection cap)."""
    with socket.create_connection(("127.0.0.1", port), HANG_GUARD) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        try:
            return read_all(sock, HANG_GUARD).startswith(b"HTTP/1.1 200")
        except ConnectionResetError:
            return False


def _admitted(port: int, fake: FakeProvider) -> socket.socket:
    """A non-reading client whose request is being served: until the start-up probe's
    connection has left the cap, an attempt is refused (a 503), so it tries again."""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        asked = len(fake.requests)
        sock = _client(port)
        sock.sendall(_request(stream=False))
        sock.setblocking(False)
        while time.monotonic() < deadline:
            if len(fake.requests) > asked:
                sock.setblocking(True)
                return sock
            with contextlib.suppress(BlockingIOError):
                if sock.recv(16, socket.MSG_PEEK).startswith(b"HTTP/1.1 503"):
                    break
            time.sleep(0.005)
        sock.close()
    raise AssertionError(f"not admitted within {HANG_GUARD} s")


def _cut_short(sock: socket.socket) -> bool:
    """True when the server reset the connection or closed it before its body was whole."""
    try:
        data = read_all(sock, HANG_GUARD)
    except ConnectionResetError:
        return True
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.lower().split(b"\r\n")
        if b"content-length" in line
    )
    return len(body) < length


def test_the_last_unread_bytes_of_an_answer_do_not_hold_the_connection(
    upstream: tuple[FakeProvider, str], caplog: pytest.LogCaptureFixture
) -> None:
    """An answer a little larger than the kernel takes, to a client that reads nothing:
    no write ever waits (asyncio buffers up to 64 KiB without waiting), yet the bytes
    left over must not hold the connection, or its place under the cap, at its close."""
    fake, _ = upstream
    # ~40 KB of JSON: more than the small buffers below take, less than 64 KiB
    url = fake.serve(WIRE_FORMATS["openai-chat"][0]([" " + "x" * 999] * 40))
    app = _app(url, send_timeout=TIMEOUT)
    caplog.set_level(logging.WARNING, logger="streamfn")
    server = Server(app, max_connections=1)
    # the accepted connection inherits a small send buffer: the kernel holds ~8 KiB
    server.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    with server:
        stalled = _admitted(server.port, fake)
        sent = time.monotonic()
        try:
            # its place comes back (without the bound: never; the guard fails the test)
            wait_until(lambda: _served(server.port), HANG_GUARD)
            assert time.monotonic() - sent >= TIMEOUT  # not before the client had its time
            assert _cut_short(stalled)  # the answer was held up, then cut: not sent whole
        finally:
            stalled.close()
    said = [r.getMessage() for r in caplog.records if "took no response bytes" in r.getMessage()]
    assert len(said) == 1, said


def _h2_request(
    conn: h2.connection.H2Connection, stream_id: int, stream: bool, model: bytes
) -> None:
    request = _request(stream, model)
    head, _, body = request.partition(b"\r\n\r\n")
    fields = [line.split(b": ", 1) for line in head.split(b"\r\n")[1:]]
    skip = {b"host", b"connection"}
    conn.send_headers(
        stream_id,
        [
            (b":method", b"POST"),
            (b":path", b"/v1/chat/completions"),
            (b":scheme", b"http"),
            (b":authority", b"127.0.0.1"),
            *((name, value) for name, value in fields if name not in skip),
        ],
    )
    conn.send_data(stream_id, body, end_stream=True)


def _h2_until(
    sock: socket.socket, conn: h2.connection.H2Connection, done: type[h2.events.Event]
) -> list[h2.events.Event]:
    """Read, answering what the protocol asks (SETTINGS and PING acknowledgements: the
    TCP connection keeps moving) but opening no window, until a ``done`` event."""
    seen: list[h2.events.Event] = []
    deadline = time.monotonic() + HANG_GUARD
    sock.settimeout(0.1)
    while not any(isinstance(e, done) for e in seen):
        assert time.monotonic() < deadline, f"no {done.__name__} within {HANG_GUARD} s"
        sock.sendall(conn.data_to_send())
        with contextlib.suppress(TimeoutError):
            data = sock.recv(65536)
            assert data, "the server closed the connection"
            seen += conn.receive_data(data)
    return seen


def test_an_h2_stream_whose_window_stays_shut_is_ended_and_its_slot_freed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A client that keeps its TCP connection moving (it acknowledges SETTINGS and
    PINGs) but never opens a stream's window: no TCP write waits, yet the stream is
    ended, its upstream call cancelled and its slot freed; other streams go on."""
    caplog.set_level(logging.WARNING, logger="streamfn")
    # the upstream sends half its answer, then waits far longer than the test may run
    with FakeProvider(stall=HANG_GUARD * 4) as fake:
        long = fake.serve(
            WIRE_FORMATS["openai-chat"][0]([f" word{i}" for i in range(30_000)]), fault="stall-mid"
        )
        short = fake.serve(WIRE_FORMATS["openai-chat"][0]([" short", " answer"]))
        app = _app(long, short, max_concurrency=1, max_queue=4, send_timeout=TIMEOUT)
        with (
            Server(app, allow_h2c=True) as server,
            socket.create_connection(("127.0.0.1", server.port)) as sock,
        ):
            conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            conn.initiate_connection()
            conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
            _h2_request(conn, 1, stream=True, model=b"long")
            sock.sendall(conn.data_to_send())
            sent = time.monotonic()
            wait_until(lambda: fake.open_connections == 1, HANG_GUARD)  # the upstream streams
            seen = _h2_until(sock, conn, h2.events.StreamReset)
            assert time.monotonic() - sent >= TIMEOUT  # not before the client had its time
            reset = next(e for e in seen if isinstance(e, h2.events.StreamReset))
            assert reset.stream_id == 1 and reset.error_code == h2.errors.ErrorCodes.CANCEL
            # the upstream call is cancelled (without the bound it waits out its stall)
            wait_until(lambda: app.active == 0, HANG_GUARD)
            # the slot came back: with max_concurrency=1 a normal h2c stream is served
            with socket.create_connection(("127.0.0.1", server.port)) as other:
                client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
                client.initiate_connection()
                _h2_request(client, 1, stream=False, model=b"short")
                answer = _h2_until(other, client, h2.events.StreamEnded)
    status = [
        dict(e.headers)[b":status"] for e in answer if isinstance(e, h2.events.ResponseReceived)
    ]
    assert status == [b"200"], status
    body = b"".join(e.data for e in answer if isinstance(e, h2.events.DataReceived))
    assert b"short answer" in body, body[:300]
    said = [r.getMessage() for r in caplog.records if "flow-control window" in r.getMessage()]
    assert len(said) == 1, said
    assert "sk-k" not in said[0] and "word" not in said[0]
