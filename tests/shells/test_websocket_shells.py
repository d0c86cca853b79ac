"""Every shell streams OpenAI Responses over a WebSocket (``Options(transport="websocket")``).

The server is an independent implementation, the ``websockets`` library, serving
canned Responses events on loopback, one JSON text message each; the oracle is the
pure core: `replay` of an SSE body made from the same JSON must give exactly the
events the shell yields. Refusals, cuts, oversized messages and a server that never
answers the upgrade end as an HTTP stream's would.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trustme
from fake_provider import ConnectProxy
from loopback_server import wait_until
from shell_runner import FAST, KEY, SHELLS, blocking, client_class, collect, run
from websockets.sync.server import Server, ServerConnection, serve

from streamfn.core import (
    Context,
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Tool,
    UsageError,
    UserMessage,
    replay,
)

TRANSCRIPT = Path(__file__).parent.parent / "transcripts/openai-responses"
#: the shells' fast test options, over a WebSocket
WS = msgspec.structs.replace(FAST, transport="websocket")

def _messages(name: str) -> list[str]:
    """The JSON of each event of a recorded Responses stream."""
    text = (TRANSCRIPT / name).read_text(encoding="utf-8")
    return [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]


#: tool calls interleaved, then text-free completion with usage: every kind of event
EVENTS = _messages("parallel-function-calls-interleaved.sse")


#: the recording calls these two: declared, so the tool-call checks every stream goes
#: through (tools declared or not) pass its calls as they are, like `replay`
CONTEXT = Context(
    messages=[UserMessage(content="hi")],
    tools=[Tool(name="get_weather"), Tool(name="get_time")],
)


def _as_sse(messages: list[str]) -> bytes:
    return "".join(f"data: {m}\n\n" for m in messages).encode()


def _expected(messages: list[str]) -> list[Event]:
    model = Model(id="gpt-5", provider="openai", api="openai-responses", base_url="http://x")
    return replay("openai-responses", _as_sse(messages), model=model)


class Canned:
    """A WebSocket server that answers ``response.create`` with canned events; the path's
    first segment picks what it does (``ok``, ``refuse-401``, ``flaky-<n>-<status>``,
    ``cut``, ``huge``, ``fragmented``)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.scheme = "http" if tls is None else "https"
        self.creates: list[dict[str, Any]] = []
        self.handshakes: list[dict[str, str]] = []
        self.refused: dict[str, int] = {}
        #: per turn served in full: how many of its pings were answered
        self.pongs: list[int] = []
        #: per turn: the code of the client's Close frame (None: the socket just closed)
        self.closes: list[int | None] = []
        self.server: Server = serve(
            self.handle,
            "127.0.0.1",
            0,
            process_request=self.process_request,
            compression=None,
            ssl=tls,
        )
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def model(self, mode: str) -> Model:
        host = "127.0.0.1" if self.scheme == "http" else "localhost"
        url = f"{self.scheme}://{host}:{self.port}/{mode}/v1"
        return Model(id="gpt-5", provider="openai", api="openai-responses", base_url=url)

    def process_request(self, connection: ServerConnection, request: Any) -> Any:
        self.handshakes.append({k.lower(): v for k, v in request.headers.raw_items()})
        mode = request.path.split("/")[1]
        if mode.startswith("refuse-"):
            status = int(mode.split("-")[1])
            body = json.dumps({"error": {"message": "nope", "type": "invalid_request_error"}})
            return connection.respond(HTTPStatus(status), body)
        if mode.startswith("flaky-"):
            _, times, status = mode.split("-")
            seen = self.refused[mode] = self.refused.get(mode, 0) + 1
            if seen <= int(times):
                return connection.respond(HTTPStatus(int(status)), "try later\n")
        return None

    def handle(self, connection: ServerConnection) -> None:
        mode = connection.request.path.split("/")[1] if connection.request else ""
        create = json.loads(connection.recv())
        self.creates.append(create)
        if mode == "cut":
            for message in EVENTS[:3]:
                connection.send(message)
            connection.close(1011, "upstream went away")
            return
        if mode == "huge":
            connection.send(EVENTS[0])
            connection.send(json.dumps({"type": "response.output_text.delta", "delta": "x" * 9000}))
        elif mode == "fragmented":
            for message in EVENTS:
                connection.send(iter([message[:7], message[7:20], message[20:]]))
        else:
            pongs = []
            for message in EVENTS:
                pongs.append(connection.ping())
                connection.send(message)
            self.pongs.append(sum(pong.wait(5) for pong in pongs))
        try:  # the client closes after the terminal event: wait for its Close frame
            connection.recv(timeout=5)
        except Exception:
            received = connection.protocol.close_rcvd
            self.closes.append(None if received is None else received.code)

    def __enter__(self) -> Canned:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.thread.join(5)


@pytest.fixture(scope="module")
def canned() -> Iterator[Canned]:
    with Canned() as server:
        yield server


@pytest.fixture(params=SHELLS)
def shell(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("mode", ["ok", "fragmented"])
def test_the_events_are_those_of_the_same_json_over_sse(
    shell: str, canned: Canned, mode: str
) -> None:
    before, closes = len(canned.creates), len(canned.closes)
    events = run(shell, collect, canned.model(mode), WS, CONTEXT)
    assert events == _expected(EVENTS)
    assert isinstance(events[-1], Done)
    wait_until(lambda: len(canned.closes) > closes, 5)
    assert canned.closes[-1] == 1000  # a clean Close at the end
    if mode == "ok":  # and every ping answered
        assert canned.pongs[-1] == len(EVENTS)
    [create] = canned.creates[before:]
    # the turn is the Responses request body as a response.create message, without "stream"
    assert create["type"] == "response.create" and "stream" not in create
    assert create["model"] == "gpt-5" and create["input"]
    handshake = canned.handshakes[-1]
    assert handshake["authorization"] == f"Bearer {KEY}"
    assert "content-length" not in handshake and "content-type" not in handshake


def test_a_refused_key_is_an_auth_error_and_is_not_retried(shell: str, canned: Canned) -> None:
    before = len(canned.handshakes)
    [*_, error] = run(shell, collect, canned.model("refuse-401"), WS, CONTEXT)
    assert isinstance(error, Error) and error.kind is ErrorKind.AUTH and error.status == 401
    assert len(canned.handshakes) - before == 1


@pytest.mark.parametrize("status", [429, 503])
def test_a_refusal_before_output_is_retried_like_http(
    shell: str, canned: Canned, status: int
) -> None:
    mode = f"flaky-2-{status}"
    canned.refused.pop(mode, None)
    events = run(shell, collect, canned.model(mode), WS, CONTEXT)
    assert events == _expected(EVENTS)
    assert canned.refused[mode] == 3  # two refusals, then the stream


def test_a_close_mid_stream_is_a_network_error_never_done(shell: str, canned: Canned) -> None:
    events = run(shell, collect, canned.model("cut"), WS, CONTEXT)
    assert not any(isinstance(e, Done) for e in events)
    error = events[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.NETWORK
    assert "1011" in error.message and "upstream went away" in error.message


def test_an_oversized_message_is_a_limit_error(shell: str, canned: Canned) -> None:
    options = msgspec.structs.replace(WS, max_event_bytes=4096)
    error = run(shell, collect, canned.model("huge"), options, CONTEXT)[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.LIMIT
    assert "max_event_bytes=4096" in error.message


def test_a_server_that_never_answers_the_upgrade_hits_the_first_byte_timeout(
    shell: str,
) -> None:
    with socket.socket() as silent:  # listening, never accepting: the upgrade goes unanswered
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        model = Model(
            id="gpt-5",
            provider="openai",
            api="openai-responses",
            base_url=f"http://127.0.0.1:{port}/v1",
        )
        options = msgspec.structs.replace(WS, max_attempts=1)
        error = run(shell, collect, model, options, CONTEXT)[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.NETWORK
    assert "first-byte timeout" in error.message


@pytest.mark.parametrize("api", ["openai-chat", "local"])
def test_only_the_responses_wire_format_goes_over_a_websocket(shell: str, api: str) -> None:
    model = Model(id="gpt-5", provider="openai", api=api, base_url="http://127.0.0.1:9")
    with pytest.raises(UsageError, match='transport="websocket" is for api="openai-responses"'):
        run(shell, collect, model, WS, CONTEXT)


def test_resuming_over_http_is_refused_with_a_websocket() -> None:
    with pytest.raises(UsageError, match="leave recover at None"):
        msgspec.structs.replace(WS, recover="resume")


def test_continue_is_off_for_a_responses_model_over_a_websocket_too(
    shell: str, canned: Canned, caplog: pytest.LogCaptureFixture
) -> None:
    """The advice the refusal gives holds: "continue" is no recovery for a Responses model
    (it takes no prefill), over a WebSocket as over HTTP; a cut is the `Error`, said once."""
    options = msgspec.structs.replace(WS, recover="continue")
    before = len(canned.creates)
    with caplog.at_level("WARNING", logger="streamfn"):
        events = run(shell, collect, canned.model("cut"), options)
    assert isinstance(events[-1], Error) and events[-1].kind is ErrorKind.NETWORK
    assert len(canned.creates) == before + 1  # one turn: nothing continued it
    assert "recover='continue' is off" in caplog.text


def test_tls_through_an_https_proxy_tunnel(shell: str) -> None:
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server_ctx)
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    with Canned(tls=server_ctx) as tls, ConnectProxy() as proxy:
        environ = {"HTTPS_PROXY": f"http://127.0.0.1:{proxy.port}"}

        async def main() -> list[Event]:
            async with client_class(shell)(ssl_context=client_ctx, environ=environ) as client:
                result: list[Event] = await collect(client, tls.model("ok"), WS, CONTEXT)
                return result

        if shell == "sync":
            events = blocking(main(), 10.0)
        else:
            events = trio.run(main) if shell == "trio" else asyncio.run(main())
    assert events == _expected(EVENTS)
    assert [c.path for c in proxy.connects] == [f"localhost:{tls.port}"]
