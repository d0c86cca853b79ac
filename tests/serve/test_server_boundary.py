"""`streamfn serve`'s trust boundary, tried as an attacker and as a sloppy client would.

The server holds a planted provider key; a loopback "attacker" server counts
every connection it gets. No route lets a client send that key anywhere but
the configured upstream, every bad body is a 4xx in the client's own shape
(official SDKs raise their usual exceptions), and web pages cannot reach a
loopback server.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from fake_provider import FakeProvider
from loopback_server import (
    HANG_GUARD,
    KEY,
    SLOW,
    USER,
    Server,
    provider_backend,
    raw_post,
    read_all,
    serving,
    wait_until,
)

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import Model
from streamfn.core._events import Done, Error, Start, TextDelta, TextEnd, TextStart
from streamfn.core.catalogue._models import openai_compatible
from streamfn.core.serve._routes import parsing_cost
from streamfn.fuzz._events_backend import EventsBackend
from streamfn.io_asyncio._serve import serve

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

PLANTED = "sk-planted-server-key"


@pytest.fixture(scope="module")
def attacker() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream: FakeProvider) -> Iterator[Server]:
    model = Model(
        id="gpt-fake",
        provider="openai",
        api="openai-chat",
        base_url=upstream.base_url("ok", "openai-chat", "legit"),
        max_output=1000,
    )
    backend = provider_backend(environ={"OPENAI_API_KEY": PLANTED}, models=[model], registry=False)
    with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
        yield server


def _status_and_body(data: bytes) -> tuple[int, Any]:
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        body = body.split(b"\r\n", 1)[1].rsplit(b"\r\n0\r\n", 1)[0]
    return status, json.loads(body) if body.startswith(b"{") else body


def _request(port: int, path: str, body: bytes, **headers: str) -> tuple[int, Any, bytes]:
    fields = {
        "host": "127.0.0.1",
        "connection": "close",
        "authorization": f"Bearer {KEY}",
        "content-type": "application/json",
        "content-length": str(len(body)),
    }
    fields.update({k.replace("_", "-"): v for k, v in headers.items()})
    head = "".join(f"{k}: {v}\r\n" for k, v in fields.items() if v)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode() + body)
        data = read_all(sock)
    status, parsed = _status_and_body(data)
    return status, parsed, data


def _native(options: dict[str, Any], model: str = "openai:gpt-fake") -> bytes:
    context = {"messages": [{"type": "user", "content": "hi"}]}
    return json.dumps({"model": model, "context": context, "options": options}).encode()


# -- 1. the planted key never reaches a client-chosen URL -----------------------------

ROUTING_OPTIONS = {
    "base_url": "ATTACKER",
    "headers": {"x-forwarded-host": "attacker"},
    "api_key": "sk-client",
    "extra_body": {"base_url": "ATTACKER"},
    "max_attempts": 25,
    "connect_timeout": 0.001,
    "max_response_bytes": 1,
    "first_byte_timeout": 99999,
}


@pytest.mark.parametrize("field", sorted(ROUTING_OPTIONS))
def test_native_route_refuses_routing_options_by_name(
    gateway: Server, attacker: FakeProvider, field: str
) -> None:
    value = ROUTING_OPTIONS[field]
    if value == "ATTACKER" or field == "extra_body":
        value = json.loads(json.dumps(value).replace("ATTACKER", attacker.url + "/v1"))
    status, body, _ = _request(gateway.port, "/v1/stream", _native({field: value}))
    assert status == 400
    assert f"options.{field}" in body["error"]["message"]
    assert attacker.connections == 0 and attacker.requests == []


def test_openai_and_anthropic_sdks_cannot_smuggle_a_base_url(
    gateway: Server, attacker: FakeProvider
) -> None:
    evil = {"base_url": attacker.url + "/v1", "api_base": attacker.url, "max_retries": 25}
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client:
        for field, value in evil.items():
            with pytest.raises(openai.BadRequestError) as oa_info:
                client.chat.completions.create(
                    model="openai:gpt-fake",
                    messages=USER,  # type: ignore[arg-type]
                    extra_body={field: value},
                )
            assert f"request.{field}" in str(oa_info.value)
    with anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as aclient:
        for field, value in evil.items():
            with pytest.raises(anthropic.BadRequestError) as an_info:
                aclient.messages.create(
                    model="openai:gpt-fake",
                    max_tokens=10,
                    messages=USER,  # type: ignore[arg-type]
                    extra_body={field: value},
                )
            assert an_info.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
            assert f"request.{field}" in str(an_info.value)
    assert attacker.connections == 0 and attacker.requests == []


def test_the_key_goes_only_to_the_configured_upstream_once_per_request(
    gateway: Server, upstream: FakeProvider, attacker: FakeProvider
) -> None:
    before = upstream.hits("legit")
    with openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client:
        reply = client.chat.completions.create(model="openai:gpt-fake", messages=USER)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "Hello, world — café 🙂!"
    status, _, data = _request(gateway.port, "/v1/stream", _native({"temperature": 0.5}))
    assert status == 200 and b"event: done" in data
    assert upstream.hits("legit") == before + 2  # the bill: one upstream call per request
    sent = [r for r in upstream.requests if "/legit/" in r.path]
    assert all(r.headers["authorization"] == f"Bearer {PLANTED}" for r in sent)
    assert json.loads(sent[-1].body)["temperature"] == 0.5
    assert attacker.connections == 0


def test_max_tokens_is_bounded_by_the_models_limit(gateway: Server) -> None:
    with (
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=KEY, max_retries=0) as client,
        pytest.raises(openai.BadRequestError) as info,
    ):
        client.chat.completions.create(
            model="openai:gpt-fake",
            messages=USER,  # type: ignore[arg-type]
            max_tokens=1001,
        )
    assert "max_tokens" in str(info.value) and "1000" in str(info.value)
    status, body, _ = _request(gateway.port, "/v1/stream", _native({"max_tokens": 5000}))
    assert status == 400 and "options.max_tokens" in body["error"]["message"]


# -- 2. browsers and the network -----------------------------------------------------

ROUTES = ["/v1/chat/completions", "/v1/messages", "/v1/stream"]
OPENAI_BODY = b'{"model":"demo-text","messages":[{"role":"user","content":"hi"}]}'
ANTHROPIC_BODY = b'{"model":"demo-text","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}'
NATIVE_BODY = b'{"model":"demo-text","context":{"messages":[{"type":"user","content":"hi"}]}}'
VALID = dict(zip(ROUTES, [OPENAI_BODY, ANTHROPIC_BODY, NATIVE_BODY], strict=True))


@pytest.fixture(scope="module")
def demo() -> Iterator[Server]:
    with serving(max_output=100) as (server, _):
        yield server


def _error_type(path: str, body: Any) -> str:
    if path == "/v1/messages":
        assert body["type"] == "error"
    return str(body["error"]["type"])


@pytest.mark.parametrize("path", ROUTES)
def test_json_routes_need_application_json(demo: Server, path: str) -> None:
    for ctype in ("text/plain", "application/x-www-form-urlencoded", ""):
        status, body, _ = _request(demo.port, path, VALID[path], content_type=ctype)
        assert status == 415
        assert _error_type(path, body) == "invalid_request_error"
    status, _, _ = _request(
        demo.port, path, VALID[path], content_type="application/json; charset=utf-8"
    )
    assert status == 200


@pytest.mark.parametrize("host", ["evil.example", "attacker.com:8000", "127.0.0.1.nip.io", ""])
def test_a_loopback_server_answers_only_to_loopback_hosts(demo: Server, host: str) -> None:
    status, body, _ = _request(demo.port, "/v1/chat/completions", OPENAI_BODY, host=host)
    assert status == 400
    if host:  # without a Host at all, HTTP/1.1 itself (h11) refuses the request
        assert "--allowed-host" in body["error"]["message"]


def test_allowed_host_and_cors_origin_are_opt_in() -> None:
    page = "https://app.example"
    with serving(allowed_hosts=("127.0.0.1", "gateway.internal")) as (server, _):
        status, _, _ = _request(server.port, "/v1/stream", NATIVE_BODY, host="gateway.internal:80")
        assert status == 200
        status, _, data = _request(server.port, "/v1/stream", NATIVE_BODY, origin=page)
        assert status == 403 and b"access-control" not in data.lower()
    with serving(cors_origins=(page,)) as (server, _):
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(
                b"OPTIONS /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                b"origin: https://app.example\r\naccess-control-request-method: POST\r\n"
                b"access-control-request-headers: authorization, content-type\r\n"
                b"connection: close\r\n\r\n"
            )
            preflight = read_all(sock).lower()
        assert preflight.startswith(b"http/1.1 204")
        assert b"access-control-allow-origin: https://app.example" in preflight
        status, _, data = _request(server.port, "/v1/stream", NATIVE_BODY, origin=page)
        assert status == 200 and b"access-control-allow-origin: https://app.example" in data.lower()
        status, _, data = _request(server.port, "/v1/stream", NATIVE_BODY, origin="https://evil")
        assert status == 403 and b"access-control" not in data.lower()


# -- 3. every bad body is a 4xx in the client's dialect -------------------------------

BAD_BODIES = {
    "invalid UTF-8": b'{"model":"demo-text","a":"\xff"}',
    "deep nesting": b'{"model":"demo-text","messages":' + b"[" * 1000 + b"]" * 1000 + b"}",
    "not an object": b"[1, 2]",
    "not JSON": b"{model: demo}",
    "wrong type": b'{"model": 5, "messages": "hi"}',
}


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_bad_bodies_are_400s_in_the_clients_shape(demo: Server, path: str, case: str) -> None:
    status, body, _ = _request(demo.port, path, BAD_BODIES[case])
    assert status == 400, body
    assert _error_type(path, body) == "invalid_request_error"


def test_nesting_within_the_documented_depth_is_served(demo: Server) -> None:
    from streamfn.core.serve._inbound import MAX_DEPTH

    def nested(depth: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(depth):
            schema = {"type": "object", "properties": {"a": schema}}
        return schema

    def tool_body(levels: int) -> bytes:
        # body -> tools -> [0] -> input_schema -> levels x (object, properties)
        schema = nested(levels)
        body = json.loads(ANTHROPIC_BODY)
        body["tools"] = [{"name": "t", "input_schema": schema}]
        return json.dumps(body).encode()

    fits = (MAX_DEPTH - 4) // 2
    assert _request(demo.port, "/v1/messages", tool_body(fits))[0] == 200
    status, body, _ = _request(demo.port, "/v1/messages", tool_body(fits + 2))
    assert status == 400 and f"deeper than {MAX_DEPTH}" in body["error"]["message"]


@pytest.mark.parametrize(
    ("path", "patch", "field"),
    [
        ("/v1/chat/completions", {"max_tokens": 0}, "max_tokens"),
        ("/v1/chat/completions", {"max_completion_tokens": -5}, "max_completion_tokens"),
        ("/v1/chat/completions", {"stream": "false"}, "stream"),
        ("/v1/chat/completions", {"temperature": "hot"}, "temperature"),
        ("/v1/chat/completions", {"top_p": 7}, "top_p"),
        ("/v1/messages", {"max_tokens": -5}, "max_tokens"),
        ("/v1/messages", {"stream": 1}, "stream"),
        ("/v1/messages", {"max_tokens": True}, "max_tokens"),
        ("/v1/stream", {"options": {"max_tokens": 0}}, "max_tokens"),
        ("/v1/stream", {"options": {"temperature": "x"}}, "temperature"),
    ],
)
def test_out_of_range_values_are_400s_naming_the_field(
    demo: Server, path: str, patch: dict[str, Any], field: str
) -> None:
    body = json.loads(VALID[path]) | patch
    status, reply, _ = _request(demo.port, path, json.dumps(body).encode())
    assert status == 400 and field in reply["error"]["message"]


def test_wrong_method_is_405_with_allow(demo: Server) -> None:
    with socket.create_connection(("127.0.0.1", demo.port)) as sock:
        sock.sendall(
            b"GET /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
        )
        data = read_all(sock).lower()
    assert data.startswith(b"http/1.1 405") and b"\r\nallow: post\r\n" in data
    with socket.create_connection(("127.0.0.1", demo.port)) as sock:
        sock.sendall(b"DELETE /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        data = read_all(sock).lower()
    assert data.startswith(b"http/1.1 405") and b"\r\nallow: get\r\n" in data


# -- 4. request-side timeouts and limits ----------------------------------------------


def test_a_slow_body_times_out_with_408_and_counts_against_the_limit() -> None:
    with serving(body_timeout=0.5, max_concurrency=1, max_queue=1) as (server, _):
        slow = []
        for _ in range(2):
            sock = socket.create_connection(("127.0.0.1", server.port))
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                + f"authorization: Bearer {KEY}\r\n".encode()
                + b"content-type: application/json\r\ncontent-length: 100\r\n\r\n{"
            )
            slow.append(sock)
        wait_until(lambda: server.app.buffered == 2, HANG_GUARD)  # both bodies begun
        status, body, _ = _request(server.port, "/v1/chat/completions", OPENAI_BODY)
        assert status == 429 and "requests open" in body["error"]["message"]
        for sock in slow:
            with sock:
                data = read_all(sock, HANG_GUARD)  # without the timeout: never
            # the configured timer ended it, no other one: its message names it
            assert data.startswith(b"HTTP/1.1 408"), data
            assert b"did not arrive within 0.5 s" in data, data
        assert _request(server.port, "/v1/chat/completions", OPENAI_BODY)[0] == 200


def test_a_slow_request_head_is_cut_after_the_head_timeout() -> None:
    """Cut after the configured 0.3 s, not the serving default: a third of the
    default is a bound no machine comes near while the configured timer works."""
    default = inspect.signature(serve).parameters["head_timeout"].default
    assert default >= 10
    with (
        serving(head_timeout=0.3) as (server, _),
        socket.create_connection(("127.0.0.1", server.port)) as sock,
    ):
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        read_all(sock, default / 3)  # returns when the server closes the connection


def test_open_connections_are_capped() -> None:
    # a connection the client closed gives its place back at once, not at the head timeout
    with serving(max_connections=2, head_timeout=SLOW) as (server, _):
        # of four idle connections at most two are held (more are refused while the
        # server's start-up probe still holds its place): the others read a 503 at once
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(4)]
        try:
            refused = 0
            while refused < 2:  # without the cap: none is refused and this times out
                ready, _, _ = select.select(idle, [], [], HANG_GUARD)
                assert ready, "no connection past the cap was refused"
                for sock in ready:
                    idle.remove(sock)
                    with sock:
                        data = read_all(sock)
                    assert data.startswith(b"HTTP/1.1 503"), data
                    assert b"too many open connections" in data
                    refused += 1
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + 5
        status = 0
        while time.monotonic() < deadline:  # the places come back when connections close
            try:
                status = _request(server.port, "/v1/stream", NATIVE_BODY)[0]
            except ConnectionResetError:  # refused while our request was in flight
                status = 0
            if status == 200:
                break
            time.sleep(0.05)
        assert status == 200


def test_streaming_and_whole_requests_alike_are_cancelled_on_disconnect() -> None:
    whole = OPENAI_BODY
    streaming = OPENAI_BODY.replace(b'"messages"', b'"stream":true,"messages"')
    # nothing happens on its own before SLOW s: no event, no header, no keep-alive
    # (a write to the closed socket would reveal the disconnect without the watch)
    with serving(delay=SLOW, head_wait=SLOW, keepalive_interval=SLOW) as (server, backend):
        for n, body in enumerate((whole, streaming), start=1):
            sock = raw_post(server.port, "/v1/chat/completions", body)
            wait_until(lambda n=n: len(backend.opened) == n, HANG_GUARD)
            sock.close()
            # the cancel arrives long before anything but the disconnect could end the wait
            wait_until(lambda n=n: backend.cancelled == n, SLOW / 3)


# -- 5. shutdown: terminal errors in each dialect, 503 for the queue --------------------


def _open(port: int, path: str, body: bytes) -> socket.socket:
    sock = raw_post(port, path, body)
    sock.settimeout(5)
    return sock


def test_shutdown_ends_each_stream_in_its_dialect_and_turns_the_queue_away() -> None:
    streaming = {
        "/v1/chat/completions": OPENAI_BODY.replace(b'"messages"', b'"stream":true,"messages"'),
        "/v1/messages": ANTHROPIC_BODY.replace(b'"messages"', b'"stream":true,"messages"'),
        "/v1/stream": NATIVE_BODY,
    }
    with serving(delay=SLOW, shutdown_grace=0.3, max_concurrency=3, head_wait=0.05) as (server, _):
        running = {path: _open(server.port, path, body) for path, body in streaming.items()}
        for sock in running.values():
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        queued_whole = _open(server.port, "/v1/messages", ANTHROPIC_BODY)
        queued_stream = _open(
            server.port, "/v1/chat/completions", streaming["/v1/chat/completions"]
        )
        time.sleep(0.2)  # both wait for a slot; the streaming one has its headers already
        server.stop()  # what SIGTERM does
        ended = {}
        for path, sock in running.items():
            with sock:  # the grace, then the end: the streams alone would run 5 * SLOW s
                ended[path] = read_all(sock, SLOW / 3)
        with queued_whole:
            whole = read_all(queued_whole)
        with queued_stream:
            stream = read_all(queued_stream)
    for data in (*ended.values(), stream):
        assert data.endswith(b"0\r\n\r\n")  # every chunked body properly terminated
    assert b'"error":{"message":"server is shutting down' in ended["/v1/chat/completions"]
    assert ended["/v1/chat/completions"].endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
    assert (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"'
        in (ended["/v1/messages"])
    )
    assert (
        b'event: error\ndata: {"type":"error","message":"server is shutting down'
        in (ended["/v1/stream"])
    )
    status, body = _status_and_body(whole)
    assert status == 503 and b"\r\nretry-after: 1\r\n" in whole.lower()
    assert body["type"] == "error" and "shutting down" in body["error"]["message"]
    assert b": streamfn: waiting for the model" in stream and b"shutting down" in stream
    assert stream.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")


def test_sdks_see_an_api_error_not_a_broken_connection_at_shutdown() -> None:
    with serving(delay=0.3, shutdown_grace=0.1) as (server, _):
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        with client, pytest.raises(openai.APIError) as info:
            for n, _chunk in enumerate(
                client.chat.completions.create(
                    model="demo-text",
                    messages=USER,  # type: ignore[arg-type]
                    stream=True,
                )
            ):
                if n == 1:
                    server.stop()
    assert "shutting down" in str(info.value)
    assert not isinstance(info.value, openai.APIConnectionError)


# -- 8. bytes before the first output -------------------------------------------------


def test_a_slow_model_gets_headers_a_comment_and_keep_alives_at_once() -> None:
    body = OPENAI_BODY.replace(b'"messages"', b'"stream":true,"messages"')
    # the model's first output comes after SLOW s: all that arrives before is the server's
    with serving(first_delay=SLOW, head_wait=0.05, keepalive_interval=0.1) as (server, backend):
        with _open(server.port, "/v1/chat/completions", body) as sock:
            sock.settimeout(SLOW / 3)
            first = b""
            while first.count(b": keep-alive") < 2:
                chunk = sock.recv(4096)
                assert chunk, first
                first += chunk
        assert first.startswith(b"HTTP/1.1 200")
        assert b": streamfn: waiting for the model" in first
        assert b"data:" not in first  # the comment and the pings came before any output
        # real clients ignore the comments and pings and read the whole answer
        backend.first_delay = 0.5
        with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as oclient:
            chunks = oclient.chat.completions.create(
                model="demo-text",
                messages=USER,  # type: ignore[arg-type]
                stream=True,
            )
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Hello, wörld 🌍"
        with (
            anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as aclient,
            aclient.messages.stream(model="demo-text", max_tokens=5, messages=USER) as s,  # type: ignore[arg-type]
        ):
            assert "".join(s.text_stream) == "Hello, wörld 🌍"


# -- 7. a disconnect closes the upstream call too ---------------------------------------


def _stalling_upstream(listener: socket.socket, got_request: Any, hung_up: list[bool]) -> None:
    """Answers each request with headers and one SSE event, then waits (SLOW s at most)
    for the gateway to hang up; ``hung_up`` says for each request whether it did."""
    from fake_provider import read_request

    for _ in range(2):
        conn, _ = listener.accept()
        with conn:
            read_request(conn, bytearray())
            first = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
                + f"{len(first):x}\r\n".encode()
                + first
                + b"\r\n"
            )
            got_request.set()
            conn.settimeout(SLOW)
            try:
                while conn.recv(4096):
                    pass
            except TimeoutError:
                hung_up.append(False)
            except OSError:  # reset by the gateway
                hung_up.append(True)
            else:
                hung_up.append(True)


def test_a_client_disconnect_closes_the_upstream_connection_at_once() -> None:
    """Nothing but the disconnect could end the upstream call before SLOW s: the
    upstream stalls, the server writes nothing (no head, no keep-alive) to the
    client before then, and the gateway's idle timeout for the upstream is minutes."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        got_request = threading.Event()
        hung_up: list[bool] = []
        thread = threading.Thread(
            target=_stalling_upstream, args=(listener, got_request, hung_up), daemon=True
        )
        thread.start()
        slow = openai_compatible("slow", f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
        backend = provider_backend(environ={}, models=[slow], registry=False)
        body = json.loads(OPENAI_BODY) | {"model": slow.key}
        config = ServerConfig(api_key=KEY, head_wait=SLOW, keepalive_interval=SLOW)
        with Server(App(RouterBackend(None, backend), config)) as server:
            for n, stream in enumerate((False, True), start=1):
                got_request.clear()
                sock = raw_post(
                    server.port,
                    "/v1/chat/completions",
                    json.dumps(body | {"stream": stream}).encode(),
                )
                assert got_request.wait(HANG_GUARD)
                sock.close()
                wait_until(lambda n=n: len(hung_up) == n, SLOW / 3)
                assert hung_up[-1], stream
        thread.join(HANG_GUARD)


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        (b"127.0.0.1:8000", True),
        (b"localhost", True),
        (b"LOCALHOST:1", True),
        (b"[::1]:8000", True),
        (b"app.localhost:3000", True),
        (b"[::1]x", False),
        (b"127.0.0.1:80:80", False),
        (b"127.0.0.2", False),
        (b"evil.example", False),
        (b"localhost.evil.example", False),
        (b"\xff", False),
    ],
)
def test_host_names_a_loopback_server_answers_to(value: bytes, allowed: bool) -> None:
    from streamfn.core.serve._guard import LOOPBACK_HOSTS, host_allowed

    assert host_allowed([(b"host", value)], LOOPBACK_HOSTS) is allowed
    assert host_allowed([(b"host", value)], None)  # a network bind without --allowed-host


def test_unimplemented_openai_fields_pass_only_at_their_do_nothing_value(demo: Server) -> None:
    neutral = {"frequency_penalty": 0, "presence_penalty": 0.0, "logprobs": False, "user": "u1"}
    body = json.loads(OPENAI_BODY) | neutral
    assert _request(demo.port, "/v1/chat/completions", json.dumps(body).encode())[0] == 200
    for field, value in (("frequency_penalty", 0.5), ("response_format", {"type": "json_object"})):
        body = json.loads(OPENAI_BODY) | {field: value}
        status, reply, _ = _request(demo.port, "/v1/chat/completions", json.dumps(body).encode())
        assert status == 400 and f"request.{field}" in reply["error"]["message"]


def test_an_upstream_refusing_the_servers_key_never_quotes_it_to_the_client() -> None:
    """OpenAI's 401 quotes the key's tail; the client sees only that the upstream refused."""
    leak = "Incorrect API key provided: sk-planted-...-abcd. You can find your API key at..."
    events = [Start(), Error.auth(f"openai HTTP 401: {leak}", status=401)]
    with Server(App(EventsBackend({"m": events}), ServerConfig(api_key=KEY))) as server:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        _, _, raw = _request(server.port, "/v1/chat/completions", body.encode())
    assert b"sk-planted" not in raw and b"the upstream refused its credentials" in raw
    assert b"misconfigured" in raw


def test_a_backend_failure_after_output_sends_no_second_start_and_no_internals() -> None:
    class Failing:
        def max_output(self, model: str) -> int | None:
            return None

        def models(self) -> list[str]:
            return ["m"]

        @contextlib.asynccontextmanager
        async def stream(self, model: str, context: Any, options: Any) -> Any:
            async def events() -> Any:
                yield Start()
                yield TextStart(0)
                yield TextDelta(0, "partial")
                raise RuntimeError("secret internal path /srv/keys.toml")

            yield events()

    with Server(App(Failing(), ServerConfig(api_key=KEY))) as server:  # type: ignore[arg-type]
        body = {"model": "m", "context": {"messages": [{"type": "user", "content": "hi"}]}}
        _, _, raw = _request(server.port, "/v1/stream", json.dumps(body).encode())
    assert raw.count(b"event: start") == 1
    assert b"/srv/keys.toml" not in raw and b"event: error" in raw


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("127.attacker.example", False),
        ("app.localhost", False),  # a name: binding it trusts DNS
        ("0.0.0.0", False),
        ("10.0.0.5", False),
    ],
)
def test_only_loopback_literals_bind_without_a_key(host: str, loopback: bool) -> None:
    from streamfn.core.serve._guard import is_loopback

    assert is_loopback(host) is loopback


def test_bodies_held_at_once_are_bounded_whatever_their_number() -> None:
    """Many large or slow bodies cannot add up past the server's memory budget: the
    request that would is a 503 with Retry-After, and the budget comes back after."""
    events = [Start(), TextStart(0), TextDelta(0, "ok"), TextEnd(0), Done()]
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]}
    ).encode()
    # room for this request alone (its body and its parse), not beside 20 KB more
    budget = len(body) + parsing_cost(body) + 10000
    config = ServerConfig(api_key=KEY, max_buffered_bytes=budget, body_timeout=5)
    with Server(App(EventsBackend({"m": events}), config)) as server:
        # a body sent halfway holds its first 20 KB...
        slow = socket.create_connection(("127.0.0.1", server.port))
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            f"authorization: Bearer {KEY}\r\ncontent-type: application/json\r\n"
            "content-length: 40000\r\n\r\n"
        )
        slow.sendall(head.encode() + b" " * 20000)
        deadline = time.monotonic() + 5
        while server.app.buffered < 20000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.app.buffered == 20000
        # ...so another request does not fit beside it
        status, _, raw = _request(server.port, "/v1/chat/completions", body)
        assert status == 503 and b"retry-after: 1" in raw.lower()
        slow.close()
        deadline = time.monotonic() + 5
        while server.app.buffered and time.monotonic() < deadline:
            time.sleep(0.02)
        status, _, _ = _request(server.port, "/v1/chat/completions", body)
        assert status == 200


def test_a_client_cannot_send_provider_native_blocks_through_the_server() -> None:
    """An opaque block would act with the server's credentials (a gs:// file, a file_id
    of the operator's organisation, a paid cache TTL): a 400 naming it, on both routes."""
    from streamfn.core.serve._inbound import BadRequest, parse_native_request

    block = {
        "type": "opaque",
        "index": 0,
        "provider": "gemini",
        "block_type": "fileData",
        "json": '{"fileData": {"fileUri": "gs://victim-bucket/secret.pdf"}}',
    }
    context = {
        "messages": [
            {"type": "user", "content": "hi"},
            {"type": "assistant", "content": [block]},
            {"type": "user", "content": "go on"},
        ]
    }
    body = json.dumps({"model": "m", "context": context}).encode()
    with pytest.raises(BadRequest, match=r"opaque 'fileData' blocks are not accepted"):
        parse_native_request(body)
