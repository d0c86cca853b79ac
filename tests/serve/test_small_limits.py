"""The smaller limits on what a client may ask the server to generate with.

Sampling knobs outside the range every upstream takes, a seed outside 64 bits, and a
stop list past its count or size were passed on and failed later (a 502 from the
upstream or the local model, or a slower local model for every request). They are a
400 in the dialect's own error shape now, naming the field as the client spelled it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from loopback_server import (
    HANG_GUARD,
    KEY,
    SLOW,
    STREAMS,
    Server,
    raw_post,
    read_all,
    serving,
    wait_until,
)

from streamfn.asgi import App, ServerConfig
from streamfn.core.dialects._request_fields import (
    MAX_COUNT,
    MAX_STOP_BYTES,
    MAX_STOP_SEQUENCES,
    MAX_TEMPERATURE,
    SEED_RANGE,
)
from streamfn.core.serve._routes import parse_request
from streamfn.core.serve._status import HTTPError
from streamfn.fuzz._events_backend import EventsBackend

CHAT, MESSAGES, NATIVE, AGENT = (
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/stream",
    "/v1/agent/stream",
)
#: (field as each dialect spells it, or None where the dialect has no such field)
SPELLING: dict[str, dict[str, str | None]] = {
    "temperature": {CHAT: "temperature", MESSAGES: "temperature", NATIVE: "temperature"},
    "top_p": {CHAT: "top_p", MESSAGES: "top_p", NATIVE: "top_p"},
    "top_k": {CHAT: "top_k", MESSAGES: "top_k", NATIVE: "top_k"},
    "seed": {CHAT: "seed", MESSAGES: None, NATIVE: "seed"},
    "max_tokens": {CHAT: "max_completion_tokens", MESSAGES: "max_tokens", NATIVE: "max_tokens"},
    "stop": {CHAT: "stop", MESSAGES: "stop_sequences", NATIVE: "stop"},
}

OUT_OF_RANGE: list[tuple[str, Any]] = [
    ("top_p", 0),
    ("top_p", -0.5),
    ("top_p", 1.01),
    ("top_k", 2**40),
    ("top_k", MAX_COUNT + 1),
    ("top_k", -1),
    ("temperature", -0.1),
    ("temperature", MAX_TEMPERATURE + 0.5),
    ("temperature", 1e300),
    ("seed", SEED_RANGE[1] + 1),
    ("seed", 2**64),
    ("seed", SEED_RANGE[0] - 1),
    ("max_tokens", 2**40),
    ("stop", ["x"] * (MAX_STOP_SEQUENCES + 1)),
    ("stop", ["s" * (MAX_STOP_BYTES // 2), "t" * (MAX_STOP_BYTES // 2 + 1)]),
    ("stop", ["é" * (MAX_STOP_BYTES // 2 + 1)]),  # counted in UTF-8 bytes, not characters
]
IN_RANGE: list[tuple[str, Any]] = [
    ("top_p", 1),
    ("top_p", 1e-9),
    ("top_k", 0),
    ("top_k", MAX_COUNT),
    ("temperature", 0),
    ("temperature", MAX_TEMPERATURE),
    ("seed", SEED_RANGE[0]),
    ("seed", SEED_RANGE[1]),
    ("max_tokens", 1),
    ("stop", ["x"] * MAX_STOP_SEQUENCES),
    ("stop", ["s" * (MAX_STOP_BYTES // 2), "t" * (MAX_STOP_BYTES // 2)]),
]


def _body(path: str, field: str, value: Any) -> bytes:
    name = SPELLING[field][path if path != AGENT else NATIVE]
    assert name is not None
    if path == CHAT:
        body: dict[str, Any] = {
            "model": "demo-text",
            "messages": [{"role": "user", "content": "hi"}],
        }
        body[name] = value
    elif path == MESSAGES:
        body = {
            "model": "demo-text",
            "max_tokens": 20,
            "messages": [{"role": "user", "content": "hi"}],
        }
        body[name] = value
    else:
        body = {
            "model": "demo-text",
            "context": {"messages": [{"type": "user", "content": "hi"}]},
            "options": {name: value},
        }
    return json.dumps(body).encode()


def _cases(values: list[tuple[str, Any]]) -> list[Any]:
    return [
        pytest.param(path, field, value, id=f"{path}-{field}-{str(value)[:12]}")
        for path in (CHAT, MESSAGES, NATIVE, AGENT)
        for field, value in values
        if SPELLING[field][path if path != AGENT else NATIVE] is not None
    ]


@pytest.mark.parametrize(("path", "field", "value"), _cases(OUT_OF_RANGE))
def test_out_of_range_knobs_are_a_400_naming_the_field(path: str, field: str, value: Any) -> None:
    with pytest.raises(HTTPError) as caught:
        parse_request(path, _body(path, field, value))
    assert caught.value.status == 400
    assert str(SPELLING[field][path if path != AGENT else NATIVE]) in str(caught.value)


@pytest.mark.parametrize(("path", "field", "value"), _cases(IN_RANGE))
def test_the_edges_of_each_range_are_accepted(path: str, field: str, value: Any) -> None:
    parse_request(path, _body(path, field, value))


# -- through the server: a 400 in each dialect's shape, never a 502 ------------------


@pytest.fixture(scope="module")
def server(shell: str) -> Iterator[Server]:
    with Server(App(EventsBackend(STREAMS), ServerConfig(api_key=KEY))) as running:
        yield running


@pytest.mark.parametrize(
    ("path", "field", "value"),
    [
        (CHAT, "top_p", 0),
        (CHAT, "seed", 2**64),
        (MESSAGES, "top_k", 2**40),
        (MESSAGES, "stop", ["x"] * 100_000),
        (NATIVE, "temperature", -1),
        (AGENT, "top_k", 2**40),
    ],
)
def test_the_server_answers_a_400_in_the_dialects_shape(
    server: Server, path: str, field: str, value: Any
) -> None:
    answer = httpx.post(
        server.url + path,
        content=_body(path, field, value),
        headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"},
        timeout=30,
    )
    assert answer.status_code == 400, answer.text
    body = answer.json()
    if path == MESSAGES:
        assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"


# -- the local model takes every value the server lets through ----------------------


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny random model (tests/tiny_model.py): what the checks below need of a model
    is CTranslate2's sampling, so no download and no prepared cache (CI has neither)."""
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


def _local_model(model_dir: Path) -> Any:
    from streamfn.local._model import LocalModel

    return LocalModel(model_dir)


def test_the_local_model_samples_with_the_largest_top_k_and_any_64_bit_seed(
    tiny_model_dir: Path,
) -> None:
    from streamfn.core import Context, Done, Options

    with _local_model(tiny_model_dir) as model:
        for options in (
            Options(max_tokens=3, temperature=1.0, top_k=MAX_COUNT),
            Options(max_tokens=3, temperature=1.0, seed=SEED_RANGE[1]),
            Options(max_tokens=3, temperature=1.0, seed=SEED_RANGE[0]),
        ):
            events = list(model.stream_sync(Context.of("hi"), options))
            assert isinstance(events[-1], Done), (options, events[-1])


def test_a_seed_reproduces_its_text_after_folding_into_32_bits(tiny_model_dir: Path) -> None:
    from streamfn.core import Context, Options, TextDelta

    def text(seed: int) -> str:
        options = Options(max_tokens=12, temperature=1.0, seed=seed)
        events = model.stream_sync(Context.of("Tell me a word."), options)
        return "".join(e.delta for e in events if isinstance(e, TextDelta))

    with _local_model(tiny_model_dir) as model:
        big = 2**40 + 7
        first = text(big)
        assert first  # an error yields no text: the seed must reach the generator
        assert text(big) == first


# -- shutdown on the agent route: a 503 like every other route ----------------------

AGENT_BODY = json.dumps(
    {"model": "demo-text", "context": {"messages": [{"type": "user", "content": "hi"}]}}
).encode()


def test_a_queued_agent_request_at_shutdown_is_a_503_with_retry_after(shell: str) -> None:
    # head_wait long: no response has started when the server is told to stop
    with serving(delay=SLOW, shutdown_grace=0.3, max_concurrency=1, head_wait=SLOW) as (
        server,
        _,
    ):
        running = raw_post(server.port, AGENT, AGENT_BODY)
        wait_until(lambda: server.app.active == 1, HANG_GUARD)
        queued = raw_post(server.port, AGENT, AGENT_BODY)
        wait_until(lambda: server.app.admitted == 2, HANG_GUARD)
        server.stop()  # what SIGTERM does
        with queued:
            answer = read_all(queued, HANG_GUARD)
        with running:
            read_all(running, HANG_GUARD)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503"), answer[:200]
    assert b"\r\nretry-after: 1" in head.lower()
    assert b"shutting down" in body


def test_a_running_agent_stream_ends_with_a_503_problem_at_shutdown(shell: str) -> None:
    with serving(delay=SLOW, shutdown_grace=0.3, head_wait=0.05) as (server, _):
        sock = raw_post(server.port, AGENT, AGENT_BODY)
        with sock:
            sock.settimeout(HANG_GUARD)
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            server.stop()
            data = read_all(sock, HANG_GUARD)
    frames = [line[6:] for line in data.split(b"\n") if line.startswith(b"data: {")]
    problem = json.loads(frames[-1])
    assert problem["status"] == 503 and "shutting down" in problem["detail"]
    assert problem["retry_after"] == 1


# -- log lines: a client's strings cannot forge a line or drive the terminal ---------

FORGED = "no-such\r\n2026-01-01 INFO served /v1/stream model=admin\x1b[2J\u202egnp.exe"


def test_client_strings_are_escaped_in_log_lines() -> None:
    from streamfn.core.serve._log_text import loggable

    line = loggable(FORGED)
    assert line.isprintable() and FORGED not in line
    assert "\\r\\n2026" in line and "\\x1b[2J" in line and "\\u202e" in line
    assert loggable("C:\\x0a") == "C:\\\\x0a"  # an escape cannot be forged with a backslash
    assert loggable("ok-model") == "ok-model"
    assert loggable("x" * 1000).endswith("(800 more characters)")


def test_the_server_logs_a_forged_model_name_on_one_line(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    body = {"model": FORGED, "messages": [{"role": "user", "content": "hi"}]}
    with caplog.at_level("INFO", logger="streamfn"):
        answer = httpx.post(
            server.url + CHAT,
            json=body,
            headers={"authorization": f"Bearer {KEY}"},
            timeout=30,
        )
        assert answer.status_code == 404
        wait_until(lambda: any("served" in r.getMessage() for r in caplog.records), HANG_GUARD)
    (served,) = [r.getMessage() for r in caplog.records if "served" in r.getMessage()]
    assert served.isprintable(), served
    assert "no-such\\r\\n2026" in served


# -- request framing: Content-Length with Transfer-Encoding (RFC 9112 section 6.1) ---


def test_content_length_with_transfer_encoding_is_a_400_and_the_connection_closes(
    server: Server,
) -> None:
    import socket

    body = json.dumps({"model": "demo-text", "messages": [{"role": "user", "content": "hi"}]})
    chunked = f"{len(body):x}\r\n{body}\r\n0\r\n\r\n".encode()
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"authorization: Bearer {KEY}\r\ncontent-type: application/json\r\n"
    )
    smuggled = (head + "content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(smuggled + chunked)
        data = read_all(sock, HANG_GUARD)  # returns once the server closes
    answer_head, _, rest = data.partition(b"\r\n\r\n")
    assert answer_head.startswith(b"HTTP/1.1 400"), data[:300]
    assert b"\r\nconnection: close" in answer_head.lower()
    assert b"Content-Length and Transfer-Encoding" in rest
    # a well-framed request pipelined behind it is never served: the connection is
    # closed (hypercorn on trio may even close it before the 400 is out)
    follow = (head + f"content-length: {len(body)}\r\n\r\n{body}").encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(smuggled + chunked + follow)
        data = read_all(sock, HANG_GUARD)
    assert data.count(b"HTTP/1.1 ") <= 1 and b"HTTP/1.1 200" not in data, data[:300]


# -- SIGTERM while a body is still arriving ---------------------------------------


def test_a_body_still_uploading_at_shutdown_gets_a_503_and_no_traceback(
    shell: str, caplog: pytest.LogCaptureFixture
) -> None:
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"authorization: Bearer {KEY}\r\ncontent-type: application/json\r\n"
        "content-length: 1000\r\n\r\n"
    )
    with caplog.at_level("DEBUG"), serving(shutdown_grace=SLOW) as (server, _):
        import socket

        sock = socket.create_connection(("127.0.0.1", server.port))
        with sock:
            sock.sendall(head.encode() + b'{"model":')  # 9 of the 1000 bytes promised
            wait_until(lambda: server.app.admitted == 1, HANG_GUARD)
            server.stop()  # what SIGTERM does
            data = read_all(sock, SLOW / 3)  # not after the grace: at once
    answer_head, _, rest = data.partition(b"\r\n\r\n")
    assert answer_head.startswith(b"HTTP/1.1 503"), data[:300]
    assert b"\r\nretry-after: 1" in answer_head.lower()
    assert b"\r\nconnection: close" in answer_head.lower()
    assert b"shutting down" in rest
    noisy = [r for r in caplog.records if r.exc_info or r.levelno >= 40]
    assert not noisy, [r.getMessage() for r in noisy]
