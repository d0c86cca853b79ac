"""`streamfn serve` tested with clients nobody here wrote: the official openai and
anthropic SDKs, raw sockets and curl, against a real hypercorn on loopback."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator

import anthropic
import openai
import pytest
from loopback_server import (
    KEY,
    SLOW,
    STREAMS,
    USER,
    Server,
    raw_post,
    read_all,
    serving,
    wait_until,
)
from missing import missing

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")


@pytest.fixture(scope="module")
def server(shell: str) -> Iterator[Server]:
    with serving() as (srv, _):
        yield srv


_CLIENTS: list[openai.OpenAI | anthropic.Anthropic] = []


def oa(server: Server, key: str = KEY) -> openai.OpenAI:
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0, timeout=10)
    _CLIENTS.append(client)
    return client


def an(server: Server, key: str = KEY) -> anthropic.Anthropic:
    client = anthropic.Anthropic(base_url=server.url, api_key=key, max_retries=0, timeout=10)
    _CLIENTS.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def test_openai_sdk_streams_text_and_its_final_completion_matches_ours(server: Server) -> None:
    with oa(server).chat.completions.stream(
        model="demo-text",
        messages=USER,
        stream_options={"include_usage": True},  # type: ignore[arg-type]
    ) as stream:
        # OpenAI's first chunk carries role and an empty content, so drop empties
        deltas = [e.delta for e in stream if e.type == "content.delta" and e.delta]
        final = stream.get_final_completion()
    assert deltas == ["Hello", ", wörld 🌍"]
    assert final.choices[0].message.content == "Hello, wörld 🌍"
    assert final.choices[0].finish_reason == "stop"
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (15, 4)


def test_openai_sdk_streams_a_tool_call_with_arguments(server: Server) -> None:
    with oa(server).chat.completions.stream(model="demo-tool", messages=USER) as stream:  # type: ignore[arg-type]
        for _ in stream:
            pass
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == "Checking."
    assert final.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    call = message.tool_calls[0]
    assert (call.id, call.function.name) == ("call_abc123", "get_weather")
    assert call.function.arguments == '{"city": "Paris", "units": "c"}'


def test_anthropic_sdk_streams_thinking_and_text(server: Server) -> None:
    with an(server).messages.stream(model="demo-thinking", max_tokens=100, messages=USER) as s:  # type: ignore[arg-type]
        texts = list(s.text_stream)
        final = s.get_final_message()
    assert texts == ["Hi there!"]
    kinds = [b.type for b in final.content]
    assert kinds == ["thinking", "text"]
    thinking = final.content[0]
    assert thinking.type == "thinking"
    assert thinking.thinking == "The user greets me. I should greet back."
    assert thinking.signature == "c2lnbmF0dXJl"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 15


def test_anthropic_sdk_streams_a_tool_call(server: Server) -> None:
    with an(server).messages.stream(model="demo-tool", max_tokens=100, messages=USER) as s:  # type: ignore[arg-type]
        final = s.get_final_message()
    assert final.stop_reason == "tool_use"
    tool = final.content[1]
    assert tool.type == "tool_use"
    assert (tool.id, tool.name, tool.input) == (
        "call_abc123",
        "get_weather",
        {"city": "Paris", "units": "c"},
    )


def test_non_streaming_openai_and_anthropic(server: Server) -> None:
    completion = oa(server).chat.completions.create(model="demo-tool", messages=USER)  # type: ignore[arg-type]
    assert completion.choices[0].message.tool_calls is not None
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    message = an(server).messages.create(model="demo-text", max_tokens=10, messages=USER)  # type: ignore[arg-type]
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello, wörld 🌍"


def test_wrong_key_is_401_in_each_clients_shape(server: Server) -> None:
    with pytest.raises(openai.AuthenticationError):
        oa(server, "wrong").chat.completions.create(model="demo-text", messages=USER)  # type: ignore[arg-type]
    with pytest.raises(anthropic.AuthenticationError) as info:
        an(server, "wrong").messages.create(model="demo-text", max_tokens=5, messages=USER)  # type: ignore[arg-type]
    assert info.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]


def test_malformed_request_is_a_400_naming_the_field(server: Server) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        an(server).messages.create(model="demo-text", max_tokens=5, messages=[])
    assert "messages" in str(info.value)
    with pytest.raises(openai.BadRequestError):
        oa(server).chat.completions.create(
            model="demo-text",
            messages=[{"role": "wizard", "content": "x"}],  # type: ignore[list-item]
        )


def test_unknown_model_is_404(server: Server) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        oa(server).chat.completions.create(model="nope", messages=USER)  # type: ignore[arg-type]
    assert "demo-text" in str(info.value)


def test_error_before_output_is_an_http_error_clients_understand(server: Server) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oa(server).chat.completions.create(model="demo-overflow", messages=USER, stream=True)  # type: ignore[arg-type]
    assert "prompt is too long" in str(info.value)


def test_error_after_output_arrives_in_stream(server: Server) -> None:
    got: list[str] = []
    with pytest.raises(openai.APIError):
        for chunk in oa(server).chat.completions.create(
            model="demo-midstream",
            messages=USER,
            stream=True,  # type: ignore[arg-type]
        ):
            if chunk.choices and chunk.choices[0].delta.content:
                got.append(chunk.choices[0].delta.content)
    assert got == ["partial"]
    with pytest.raises(anthropic.APIStatusError):  # noqa: SIM117
        with an(server).messages.stream(model="demo-midstream", max_tokens=5, messages=USER) as s:  # type: ignore[arg-type]
            for _ in s:
                pass


def test_models_and_health(server: Server) -> None:
    ids = [m.id for m in oa(server).models.list()]
    assert ids == sorted(STREAMS)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        data = read_all(sock)
    assert b" 200 " in data.split(b"\r\n", 1)[0] and b'"status":"ok"' in data


STREAM_BODY = b'{"model":"demo-text","stream":true,"messages":[{"role":"user","content":"hi"}]}'


def test_keep_alive_comments_while_the_model_is_silent() -> None:
    with serving(keepalive_interval=0.05, delay=0.3) as (server, _):
        sock = raw_post(server.port, "/v1/chat/completions", STREAM_BODY)
        with sock:
            data = read_all(sock)
    assert b": keep-alive" in data
    assert b"data: [DONE]\n\n" in data


def test_client_disconnect_cancels_generation_at_once() -> None:
    # after the head, nothing happens on its own before SLOW s: no event, no keep-alive
    # (a write to the closed socket would reveal the disconnect without the watch)
    with serving(delay=SLOW, head_wait=0.05, keepalive_interval=SLOW) as (server, backend):
        sock = raw_post(server.port, "/v1/chat/completions", STREAM_BODY)
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.close()
        wait_until(lambda: backend.cancelled == 1, SLOW / 3)
        assert server.app.active == 0


def test_overload_is_429_with_retry_after() -> None:
    with serving(max_concurrency=1, max_queue=0, delay=0.3) as (server, _):
        first = raw_post(server.port, "/v1/chat/completions", STREAM_BODY)
        first.settimeout(5)
        assert first.recv(4096).startswith(b"HTTP/1.1 200")
        with pytest.raises(openai.RateLimitError) as info:
            oa(server).chat.completions.create(model="demo-text", messages=USER)  # type: ignore[arg-type]
        assert info.value.response.headers["retry-after"] == "1"
        first.close()
        _CLIENTS.pop().close()


def test_request_body_cap_is_413() -> None:
    with serving(max_body_bytes=1000) as (server, _):
        with pytest.raises(anthropic.APIStatusError) as info:
            an(server).messages.create(
                model="demo-text", max_tokens=5, messages=[{"role": "user", "content": "x" * 5000}]
            )
        assert info.value.status_code == 413


def test_native_proxy_stream_is_our_events_as_sse(server: Server) -> None:
    body = (
        b'{"model":"demo-tool","context":{"messages":[{"type":"user","content":"hi"}]},'
        b'"options":{}}'
    )
    with raw_post(server.port, "/v1/stream", body) as sock:
        data = read_all(sock)
    assert b"event: toolcall_delta\n" in data
    assert b'data: {"type":"done"' in data


def test_curl_smoke(server: Server) -> None:
    if shutil.which("curl") is None:
        missing("the program curl", "apt-get install curl")
    out = subprocess.run(
        [
            "curl",
            "-sN",
            server.url + "/v1/chat/completions",
            "-H",
            f"Authorization: Bearer {KEY}",
            "-H",
            "Content-Type: application/json",
            "-d",
            STREAM_BODY.decode(),
        ],
        capture_output=True,
        timeout=20,
        check=True,
    ).stdout
    assert b'"content":"Hello"' in out and out.rstrip().endswith(b"data: [DONE]")


def test_graceful_shutdown_ends_open_streams_cleanly_and_refuses_new_ones() -> None:
    with serving(delay=0.2, shutdown_grace=0.3) as (server, _):
        sock = raw_post(server.port, "/v1/chat/completions", STREAM_BODY)
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        finished = threading.Thread(target=server.call, args=(server.app.shutdown,))
        finished.start()
        with sock:
            data = read_all(sock)
        finished.join(5)
        # the open stream got an in-stream error in OpenAI's shape, then a proper end
        assert b'"error":' in data and b"server is shutting down" in data
        assert data.endswith(b"0\r\n\r\n")  # the chunked body was terminated
        assert server.app.active == 0
        with pytest.raises(openai.InternalServerError) as info:
            oa(server).chat.completions.create(model="demo-text", messages=USER)  # type: ignore[arg-type]
        assert info.value.status_code == 503
