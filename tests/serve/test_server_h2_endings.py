"""However an HTTP/2 stream ends, its admission slot and its upstream call are released.

One cleartext HTTP/2 connection opens as many streams as the server admits
(``max_concurrency`` running, ``max_queue`` waiting) to an answer far larger
than every buffer between the upstream and the client, then the streams end
one way or another: the client resets them, the server's send timeout resets
them, the connection closes (cleanly or by a reset), the client sends a
GOAWAY, the client leaves while still sending its request bodies, or the
answers simply end. The client reads nothing before the end, so the server's
writes wait on it (on TCP, or on the client's HTTP/2 windows) when the
stream ends. After each, the server must be as it was: nothing
admitted (the server's own ``/health`` says so), no upstream connection left
open, the connection's place under ``--max-connections`` back (the cap is one),
and a later request served (a leaked slot makes it a 429). Bounds are
hang guards (`HANG_GUARD`), never a timing claim; each ending runs on both
shells.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any, Final, NamedTuple

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

RUNNING, WAITING = 2, 2
STREAMS = RUNNING + WAITING

#: the send timeout where the server's writes wait on a client that reads nothing
#: (short, so the test is quick)
TIMEOUT = 0.5

#: the send timeout where the client's HTTP/2 windows stay shut: long enough for an
#: upstream answer to be read to its end if a shut window did not hold it back (the
#: upstream connection would then be pooled, not closed, and the test fails)
SHUT_FOR = 2.0

#: how soon the streams' slots must come back: a hang guard, well short of the send
#: timeout of the endings that are not the send timeout's
RELEASED = HANG_GUARD / 3

#: ~25 MB in OpenAI's streaming format: the upstream is still writing when a stream ends
LONG = WIRE_FORMATS["openai-chat"][0]([f" word{i}" for i in range(150_000)])
SHORT = WIRE_FORMATS["openai-chat"][0]([" short", " answer"])


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[FakeProvider, str, str]]:
    with FakeProvider() as fake:
        yield fake, fake.serve(LONG), fake.serve(SHORT)


def _app(long: str, short: str, send_timeout: float) -> App:
    models = [
        Model(id=name, provider="openai", api="openai-chat", base_url=url)
        for name, url in {"long": long, "short": short}.items()
    ]
    backend = provider_backend(environ={"OPENAI_API_KEY": "sk-k"}, models=models, registry=False)
    config = ServerConfig(
        api_key=KEY, max_concurrency=RUNNING, max_queue=WAITING, send_timeout=send_timeout
    )
    return App(RouterBackend(None, backend), config)  # type: ignore[arg-type]


def _body(model: str) -> bytes:
    return (
        b'{"model":"openai:%s","stream":true,"max_tokens":10,'
        b'"messages":[{"role":"user","content":"hi"}]}' % model.encode()
    )


class Client:
    """A raw HTTP/2 client on one socket (the `h2` library, as a browser speaks it)."""

    def __init__(self, port: int, window: int | None = None, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket()
        if rcvbuf is not None:  # before connect: the TCP window
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", port))
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
            if window > 65535:
                self.conn.increment_flow_control_window(window - 65535)
        self.events: list[h2.events.Event] = []
        self.flush()

    def flush(self) -> None:
        self.sock.sendall(self.conn.data_to_send())

    def say(self) -> None:
        """Send what the client has to say, unless the server has ended the connection
        already (its send timeout, when the client read nothing for that long)."""
        with contextlib.suppress(ConnectionError):
            self.flush()

    def post(self, model: str, *, whole: bool = True) -> int:
        """Open a stream for a streaming chat completion; ``whole=False`` sends only
        half of its body (the request is still arriving)."""
        stream_id = self.conn.get_next_available_stream_id()
        body = _body(model)
        self.conn.send_headers(
            stream_id,
            [
                (b":method", b"POST"),
                (b":path", b"/v1/chat/completions"),
                (b":scheme", b"http"),
                (b":authority", b"127.0.0.1"),
                (b"authorization", f"Bearer {KEY}".encode()),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        )
        if whole:
            self.conn.send_data(stream_id, body, end_stream=True)
        else:
            self.conn.send_data(stream_id, body[: len(body) // 2])
        self.flush()
        return stream_id

    def pump(self, until: Callable[[], bool], *, read: bool) -> None:
        """Answer what the protocol asks (SETTINGS, PINGs) until ``until()``; with
        ``read`` the client also takes the data (it opens the windows again)."""
        deadline = time.monotonic() + HANG_GUARD
        self.sock.settimeout(0.05)
        while not until():
            assert time.monotonic() < deadline, f"not within {HANG_GUARD} s"
            with contextlib.suppress(TimeoutError):
                data = self.sock.recv(1 << 16)
                assert data, "the server closed the connection"
                for event in self.conn.receive_data(data):
                    self.events.append(event)
                    if read and isinstance(event, h2.events.DataReceived):
                        self.conn.acknowledge_received_data(
                            event.flow_controlled_length, event.stream_id
                        )
            self.flush()

    def ended(self, kind: type[h2.events.Event]) -> set[int]:
        return {e.stream_id for e in self.events if isinstance(e, kind)}

    def close(self, *, reset: bool = False) -> None:
        if reset:  # an RST instead of a FIN
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def _client_reset(client: Client, ids: list[int]) -> None:
    for stream_id in ids:
        client.conn.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
    client.say()


def _goaway(client: Client, ids: list[int]) -> None:
    client.conn.close_connection()
    client.say()


def _close(client: Client, ids: list[int]) -> None:
    client.close()


def _close_by_reset(client: Client, ids: list[int]) -> None:
    client.close(reset=True)


def _send_timeout(client: Client, ids: list[int]) -> None:
    """The client's windows stay shut: the server resets each stream after the send
    timeout (the waiting ones once they run)."""
    client.pump(lambda: client.ended(h2.events.StreamReset) >= set(ids), read=False)


def _send_timeout_on_the_connection(client: Client, ids: list[int]) -> None:
    """The client reads nothing more: the server's writes wait until its send timeout
    ends the connection."""


#: the window a client opens to take the answers without acknowledging a byte: the
#: server's writes then wait on TCP (the client reads nothing), not on HTTP/2
OPEN = 2**31 - 1


class Ending(NamedTuple):
    end: Callable[[Client, list[int]], None]
    #: the streams' request bodies were sent whole (else half: the request is arriving)
    whole: bool = True
    #: the client's HTTP/2 window for each stream: `OPEN`, the client's TCP window
    #: holds the answers (the server's writes wait); 0, its HTTP/2 windows do
    window: int = OPEN
    #: the server's send timeout: short where the server's writes wait on TCP (it is
    #: what ends a connection whose client reads nothing), else beyond the bound
    #: below, so that a stream the ending itself failed to release stays held
    send_timeout: float = TIMEOUT


#: endings the server brings about by itself (the test only waits for them)
SERVER_ENDS: Final = (_send_timeout, _send_timeout_on_the_connection)

SHUT: Final[dict[str, Any]] = {"window": 0, "send_timeout": HANG_GUARD}

ENDINGS: dict[str, Ending] = {
    "client RST_STREAM": Ending(_client_reset),
    "client RST_STREAM, window shut": Ending(_client_reset, **SHUT),
    "server send-timeout stream reset": Ending(_send_timeout, window=0, send_timeout=SHUT_FOR),
    "server send-timeout on the connection": Ending(_send_timeout_on_the_connection),
    "connection closed": Ending(_close),
    "connection closed, window shut": Ending(_close, **SHUT),
    "connection reset": Ending(_close_by_reset),
    "client GOAWAY": Ending(_goaway),
    "client GOAWAY, window shut": Ending(_goaway, **SHUT),
    "client RST_STREAM mid-body": Ending(_client_reset, whole=False, **SHUT),
    "connection closed mid-body": Ending(_close, whole=False, **SHUT),
}


def _writes_wait(app: App) -> bool:
    """Every running answer waits on its client: its unsent events fill their mailbox
    (the waiting requests' mailboxes stay empty)."""
    return sum(mailbox.full() for mailbox in app._mailboxes) == RUNNING


def _connected(port: int, **options: Any) -> Client:
    """A `Client` the server admits: under a cap of one connection, an attempt made
    while the last connection is still being let go reads the cap's 503; try again."""
    deadline = time.monotonic() + HANG_GUARD
    while True:
        with contextlib.suppress(ConnectionError):
            client = Client(port, **options)
            client.sock.settimeout(HANG_GUARD)
            if not client.sock.recv(16, socket.MSG_PEEK).startswith(b"HTTP/1.1 503"):
                return client
            client.close()
        assert time.monotonic() < deadline, f"no connection admitted within {HANG_GUARD} s"
        time.sleep(0.01)


def _health(port: int) -> dict[str, object]:
    """``/health`` once a connection is admitted (see `_connected`)."""
    deadline = time.monotonic() + HANG_GUARD
    while True:
        answer = b""
        with (
            socket.create_connection(("127.0.0.1", port)) as sock,
            contextlib.suppress(ConnectionError),  # refused: its 503 may come as a reset
        ):
            sock.sendall(b"GET /health HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n")
            answer = read_all(sock, HANG_GUARD)
        if answer and not answer.startswith(b"HTTP/1.1 503"):
            break
        assert time.monotonic() < deadline, f"no connection admitted within {HANG_GUARD} s"
        time.sleep(0.01)
    assert answer.split(b" ", 2)[1] == b"200", answer[:200]
    status: dict[str, object] = json.loads(answer.partition(b"\r\n\r\n")[2])
    return status


def _served(port: int) -> None:
    """A later request, on a new connection, is answered whole (a leaked slot: a 429)."""
    client = _connected(port)
    try:
        stream_id = client.post("short")
        client.pump(lambda: stream_id in client.ended(h2.events.StreamEnded), read=True)
    finally:
        client.close()
    status = [
        dict(e.headers)[b":status"]
        for e in client.events
        if isinstance(e, h2.events.ResponseReceived)
    ]
    assert status == [b"200"], status
    body = b"".join(e.data for e in client.events if isinstance(e, h2.events.DataReceived))
    assert b'" short"' in body and b'" answer"' in body and b"[DONE]" in body, body[:300]


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_every_way_an_h2_stream_ends_releases_its_slot_and_upstream_call(
    upstream: tuple[FakeProvider, str, str], ending: str
) -> None:
    fake, long, short = upstream
    end, whole, window, send_timeout = ENDINGS[ending]
    app = _app(long, short, send_timeout)
    # one connection at a time: each check below needs the streams' connection gone
    server = Server(app, allow_h2c=True, max_connections=1)
    # the accepted connection inherits a small send buffer: the TCP window fills soon
    server.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    with server:
        client = _connected(server.port, window=window, rcvbuf=4096)
        try:
            ids = [client.post("long", whole=whole) for _ in range(STREAMS)]
            wait_until(lambda: app.admitted == STREAMS, HANG_GUARD)
            if whole and end not in SERVER_ENDS:  # two answers stream, two requests wait
                wait_until(lambda: fake.open_connections == RUNNING, HANG_GUARD)
                # the client takes nothing: each answer's writes wait, its events pile up
                # (unless the send timeout came first: then the server ended the streams)
                wait_until(lambda: _writes_wait(app) or app.admitted < STREAMS, HANG_GUARD)
            end(client, ids)
            wait_until(lambda: app.admitted == 0, RELEASED)
            wait_until(lambda: fake.open_connections == 0, HANG_GUARD)
        finally:
            client.close()
        assert _health(server.port)["admitted"] == 0
        assert app.active == 0
        _served(server.port)


def test_h2_streams_that_end_normally_release_their_slots(
    upstream: tuple[FakeProvider, str, str],
) -> None:
    """The answers end (the client reads them whole): every slot comes back."""
    _, long, short = upstream
    app = _app(long, short, TIMEOUT)
    with Server(app, allow_h2c=True, max_connections=1) as server:
        client = _connected(server.port)
        try:
            ids = [client.post("short") for _ in range(STREAMS)]
            client.pump(lambda: client.ended(h2.events.StreamEnded) >= set(ids), read=True)
        finally:
            client.close()
        wait_until(lambda: app.admitted == 0, RELEASED)
        assert _health(server.port)["admitted"] == 0
        assert app.active == 0
        _served(server.port)
