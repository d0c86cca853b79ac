"""`SocketExchange`, sans I/O, against the ``websockets`` library's own sans-I/O server.

The server side is an independent RFC 6455 implementation: it reads our upgrade, and
its bytes (101, text messages, pings, fragments) are fed back in any chunking; the
events must be those of the same JSON over SSE, whatever the cuts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chunking import split_at
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.frames import Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol

from streamfn.core import Context, Done, Error, ErrorKind, Event, Model, Options, open_call, replay
from streamfn.core.http import SocketExchange

MODEL = Model(id="gpt-5", provider="openai", api="openai-responses", base_url="http://h.test/v1")
OPTIONS = Options(api_key="sk-test", transport="websocket")
TRANSCRIPT = Path(__file__).parent.parent / "transcripts/openai-responses"
LINES = (TRANSCRIPT / "parallel-function-calls-interleaved.sse").read_text().splitlines()
#: the events, one JSON text each; the first pretty-printed (raw newlines as whitespace)
EVENTS = [line[6:] for line in LINES if line.startswith("data: ")]
EVENTS[0] = json.dumps(json.loads(EVENTS[0]), indent=2)


def _exchange(options: Options = OPTIONS) -> SocketExchange:
    call = open_call(MODEL, Context.of("hi"), options)
    return SocketExchange(call, MODEL, options)


def _server(exchange: SocketExchange) -> tuple[ServerProtocol, Request]:
    server = ServerProtocol()
    server.receive_data(exchange.bytes_to_send())
    [request] = server.events_received()
    assert isinstance(request, Request)
    return server, request


def _accepted(exchange: SocketExchange) -> ServerProtocol:
    server, request = _server(exchange)
    server.send_response(server.accept(request))
    return server


def _out(server: ServerProtocol) -> bytes:
    return b"".join(server.data_to_send())


def _expected() -> list[Event]:
    body = "".join(f"data: {json.dumps(json.loads(m))}\n\n" for m in EVENTS).encode()
    return replay("openai-responses", body, model=MODEL, options=OPTIONS)


def _feed(exchange: SocketExchange, pieces: list[bytes]) -> list[Event]:
    events: list[Event] = []
    for piece in pieces:
        if piece:
            events += exchange.receive_bytes(piece, eager=True)
    return events


def test_the_upgrade_carries_the_key_and_no_body_headers() -> None:
    _, request = _server(_exchange())
    assert request.path == "/v1/responses"
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert request.headers["Host"] == "h.test"
    assert "Content-Length" not in request.headers and "Accept" not in request.headers


def test_the_turn_is_sent_only_after_the_101() -> None:
    exchange = _exchange()
    server = _accepted(exchange)
    assert exchange.pending == b""  # RFC 6455: nothing before the upgrade is answered
    exchange.receive_bytes(_out(server))
    server.receive_data(exchange.pending)
    [frame] = server.events_received()
    create = json.loads(frame.data)
    assert create["type"] == "response.create" and "stream" not in create
    assert create["model"] == "gpt-5"


def _server_bytes(exchange: SocketExchange) -> bytes:
    server = _accepted(exchange)
    for number, message in enumerate(EVENTS):
        if number == 2:  # a fragmented message, a ping between its fragments
            data = message.encode()
            server.send_text(data[:5], fin=False)
            server.send_ping(b"are you there")
            server.send_continuation(data[5:], fin=True)
        else:
            server.send_text(message.encode())
    return _out(server)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_chunking_gives_the_events_of_the_same_json_over_sse(data: st.DataObject) -> None:
    exchange = _exchange()
    body = _server_bytes(exchange)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=24))
    events = _feed(exchange, split_at(body, cuts))
    assert events == _expected()
    assert exchange.finished and not exchange.reusable


def test_a_ping_is_answered_and_the_end_is_a_clean_close() -> None:
    exchange = _exchange()
    server = _accepted(exchange)
    exchange.receive_bytes(_out(server))
    server.receive_data(exchange.pending)
    server.events_received()
    exchange.pending = b""
    server.send_ping(b"p")
    for message in EVENTS:
        server.send_text(message.encode())
    events = exchange.receive_bytes(_out(server))
    assert isinstance(events[-1], Done)
    server.receive_data(exchange.pending)
    frames = server.events_received()
    assert [f.opcode for f in frames] == [Opcode.PONG, Opcode.CLOSE]
    assert server.close_rcvd is not None and server.close_rcvd.code == 1000


def test_an_eof_mid_stream_is_a_network_error_never_done() -> None:
    exchange = _exchange()
    body = _server_bytes(exchange)
    cut = body.index(EVENTS[-1].encode()[:20])  # inside the terminal event's frame
    events = _feed(exchange, [body[:cut]]) + exchange.receive_eof()
    assert not any(isinstance(e, Done) for e in events)
    assert isinstance(events[-1], Error) and events[-1].kind is ErrorKind.NETWORK
    assert "mid-stream" in events[-1].message


def test_an_eof_before_the_upgrade_is_answered_is_a_network_error() -> None:
    exchange = _exchange()
    [*_, error] = exchange.receive_eof()
    assert isinstance(error, Error) and error.kind is ErrorKind.NETWORK
    assert "before the WebSocket upgrade" in error.message


def test_an_oversized_fragmented_message_is_a_limit_error() -> None:
    options = Options(api_key="sk-test", transport="websocket", max_event_bytes=1000)
    exchange = _exchange(options)
    server = _accepted(exchange)
    server.send_text(b"x" * 100, fin=False)
    for _ in range(49):  # 50 fragments of 100 bytes, never finished
        server.send_continuation(b"x" * 100, fin=False)
    [*_, error] = exchange.receive_bytes(_out(server))
    assert isinstance(error, Error) and error.kind is ErrorKind.LIMIT
    assert "max_event_bytes=1000" in error.message


@pytest.mark.parametrize(("status", "kind"), [(401, ErrorKind.AUTH), (429, ErrorKind.THROTTLED)])
def test_a_refused_upgrade_is_classified_like_an_http_error(status: int, kind: ErrorKind) -> None:
    exchange = _exchange()
    server, _ = _server(exchange)
    body = json.dumps({"error": {"message": "no", "type": "x"}})
    response = server.reject(status, body)
    response.headers["Retry-After"] = "7"
    server.send_response(response)
    [*_, error] = _feed(exchange, [_out(server)])
    assert isinstance(error, Error) and error.kind is kind and error.status == status
    if status == 429:
        assert error.retry_after == 7


def test_a_server_that_answers_200_instead_of_101_is_a_protocol_error() -> None:
    exchange = _exchange()
    reply = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 0\r\n\r\n"
    [*_, error] = exchange.receive_bytes(reply)
    assert isinstance(error, Error) and error.kind is ErrorKind.PROTOCOL
    assert "not 101" in error.message


def test_a_message_that_is_not_utf8_is_a_malformed_frame_not_a_close_by_the_server() -> None:
    exchange = _exchange()
    server = _accepted(exchange)
    exchange.receive_bytes(_out(server))
    server.send_text(b'{"type": "response.created"\xff}')
    [*_, error] = exchange.receive_bytes(_out(server))
    assert isinstance(error, Error) and error.kind is ErrorKind.NETWORK
    assert error.message.startswith("malformed WebSocket frame from h.test: code 1007")
