"""Every request a gateway serves is one flight its observers see open and close,
with what it used and how it ended: the feed of usage records, metrics and the
dashboard. Driven by the official openai SDK and raw sockets on both shells."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import openai
import pytest
from loopback_server import KEY, SLOW, USER, Server, raw_post, serving, wait_until

from streamfn.asgi._observe import Flight

pytestmark = pytest.mark.usefixtures("shell")


class Recorder:
    """Keeps what it is told, and what was running when each request closed."""

    def __init__(self) -> None:
        self.opens: list[Flight] = []
        self.closes: list[Flight] = []
        self.lock = threading.Lock()

    def opened(self, flight: Flight) -> None:
        with self.lock:
            self.opens.append(flight)

    def closed(self, flight: Flight) -> None:
        with self.lock:
            self.closes.append(flight)


class Broken:
    """An observer that fails: the client must never notice."""

    def opened(self, flight: Flight) -> None:
        raise RuntimeError("observer bug")

    def closed(self, flight: Flight) -> None:
        raise RuntimeError("observer bug")


@pytest.fixture(scope="module")
def served(shell: str) -> Iterator[tuple[Server, Recorder]]:
    recorder = Recorder()
    with serving(observers=[Broken(), recorder]) as (server, _):
        yield server, recorder


def _client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0, timeout=10)


def _last(recorder: Recorder, count: int) -> Flight:
    wait_until(lambda: len(recorder.closes) >= count, 10)
    return recorder.closes[count - 1]


def test_a_streamed_answer_is_one_flight_with_its_usage(served: tuple[Server, Recorder]) -> None:
    server, recorder = served
    before = len(recorder.closes)
    with _client(server) as client:
        chunks = list(
            client.chat.completions.create(model="demo-text", messages=USER, stream=True)  # type: ignore[arg-type]
        )
    assert chunks
    flight = _last(recorder, before + 1)
    assert flight.outcome == "ok" and flight.route == "/v1/chat/completions"
    assert flight.model == "demo-text" and flight.stream
    assert flight.usage is not None and (flight.usage.input, flight.usage.output) == (12, 4)
    assert flight.id.startswith("req_") and flight in recorder.opens
    assert flight.latency is not None and flight.time_to_first_output is not None
    assert 0 <= flight.time_to_first_output <= flight.latency
    assert flight.id not in server.app.flights.running


def test_whole_answers_errors_and_cut_answers_say_how_they_ended(
    served: tuple[Server, Recorder],
) -> None:
    server, recorder = served
    before = len(recorder.closes)
    with _client(server) as client:
        client.chat.completions.create(model="demo-tool", messages=USER)  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="demo-overflow", messages=USER, stream=True)  # type: ignore[arg-type]
        with pytest.raises(openai.APIError):
            for _ in client.chat.completions.create(
                model="demo-midstream", messages=USER, stream=True  # type: ignore[arg-type]
            ):
                pass
        with pytest.raises(openai.NotFoundError):  # refused before admission: no flight
            client.chat.completions.create(model="no-such-model", messages=USER)  # type: ignore[arg-type]
    wait_until(lambda: len(recorder.closes) >= before + 3, 10)
    ended = {f.model: f for f in recorder.closes[before:]}
    assert set(ended) == {"demo-tool", "demo-overflow", "demo-midstream"}
    assert ended["demo-tool"].outcome == "ok" and not ended["demo-tool"].stream
    assert ended["demo-overflow"].outcome == "error:context_overflow"
    assert ended["demo-overflow"].first_output is None
    assert ended["demo-midstream"].outcome == "cut"
    assert "dropped" in (ended["demo-midstream"].error or "")


def test_a_client_that_goes_away_is_a_disconnected_flight() -> None:
    recorder = Recorder()
    body = b'{"model":"demo-text","stream":true,"messages":[{"role":"user","content":"hi"}]}'
    with serving(delay=SLOW, head_wait=0.05, keepalive_interval=SLOW, observers=[recorder]) as (
        server,
        _,
    ):
        sock = raw_post(server.port, "/v1/chat/completions", body)
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        wait_until(lambda: len(server.app.flights.running) == 1, 10)
        running = next(iter(server.app.flights.running.values()))
        assert running.outcome is None and running.latency is None
        sock.close()
        wait_until(lambda: len(recorder.closes) == 1, SLOW / 3)
    assert recorder.closes[0].outcome == "disconnected"
    assert server.app.flights.running == {}
