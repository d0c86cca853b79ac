"""The gateway tells its clients what the provider told it: a request id on every answer
(the upstream's, or the server's own when there is none) under both SDKs' header
names, and the upstream's rate-limit state under OpenAI's ``x-ratelimit-*`` names
whatever the provider, on every route, streamed or whole, success or error."""

from __future__ import annotations

import json
import re
import socket
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import anthropic
import openai
import pytest
from loopback_server import KEY, Server, provider_backend

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import Model, RateLimits, Start
from streamfn.core._rate_limits import RateLimit
from streamfn.core.serve._upstream_headers import UpstreamIds, upstream_headers
from streamfn.fuzz._raw_http import ThreadedServer, head, read_request

pytestmark = pytest.mark.usefixtures("shell")

HI: Any = [{"role": "user", "content": "hi"}]

OPENAI_BODY = (
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)
#: the headers of a recorded api.anthropic.com answer (values shortened)
ANTHROPIC_HEADERS = {
    "request-id": "req_011CSLsW7mFqvHHnzrKdKjAE",
    "anthropic-ratelimit-requests-limit": "1000",
    "anthropic-ratelimit-requests-remaining": "999",
    "anthropic-ratelimit-requests-reset": "2050-08-21T12:40:59Z",  # far off: a bound, not a time
    "anthropic-ratelimit-input-tokens-remaining": "80000",
}
OPENAI_HEADERS = {
    "x-request-id": "req_upstream_openai",
    "x-ratelimit-limit-requests": "5000",
    "x-ratelimit-remaining-requests": "4999",
    "x-ratelimit-reset-requests": "12ms",
    "x-ratelimit-remaining-tokens": "159976",
    "x-ratelimit-reset-tokens": "6m0s",
}


def _anthropic_body() -> bytes:
    frames = [
        {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
    return b"".join(f"event: {f['type']}\ndata: {json.dumps(f)}\n\n".encode() for f in frames)


class HeaderedUpstream(ThreadedServer):
    """An upstream whose answers carry a provider's headers (the first path segment picks
    which): the SSE answer, or a 429 under ``/throttled``."""

    def handle(self, sock: socket.socket) -> None:
        buffer = bytearray()
        while (request := read_request(sock, buffer)) is not None:
            kind = request.path.strip("/").split("/")[0]
            extra = {"anthropic": ANTHROPIC_HEADERS, "bare": {}}.get(kind, OPENAI_HEADERS)
            if request.path.endswith("/count_tokens"):  # a count is asked like a call
                data = b'{"input_tokens": 7}'
                answer = head(200, "application/json", extra, Content_Length=str(len(data)))
            elif kind == "throttled":
                data = b'{"error":{"message":"Rate limit reached","type":"requests"}}'
                answer = head(429, "application/json", extra, Content_Length=str(len(data)))
            else:
                data = _anthropic_body() if kind == "anthropic" else OPENAI_BODY
                answer = head(200, "text/event-stream", extra, Content_Length=str(len(data)))
            sock.sendall(answer + data)


@pytest.fixture(scope="module")
def gateway() -> Iterator[Server]:
    with HeaderedUpstream() as upstream:
        url = f"http://127.0.0.1:{upstream.port}"
        models = [
            Model(id="gpt-4o-mini", provider="openai", api="openai-chat", base_url=f"{url}/openai"),
            Model(id="gpt-4o", provider="openai", api="openai-chat", base_url=f"{url}/throttled"),
            Model(
                id="claude-sonnet-4-5",
                provider="anthropic",
                api="anthropic",
                base_url=f"{url}/anthropic",
            ),
            Model(id="box", provider="vllm", api="openai-chat", base_url=f"{url}/bare"),
        ]
        environ = {"OPENAI_API_KEY": "sk-up-123456789", "ANTHROPIC_API_KEY": "sk-ant-123456789"}
        backend = provider_backend(environ=environ, models=models, registry=False)
        with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
            yield server


def _openai(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_an_openai_client_sees_the_upstream_s_request_id_and_limits(
    gateway: Server, stream: bool
) -> None:
    with _openai(gateway) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="openai:gpt-4o-mini", messages=HI, stream=stream
        )
        if stream:
            list(raw.parse())
    assert raw.request_id == "req_upstream_openai"  # what the SDK shows users
    headers = raw.headers
    assert headers["x-ratelimit-limit-requests"] == "5000"
    assert headers["x-ratelimit-remaining-requests"] == "4999"
    assert headers["x-ratelimit-reset-requests"] == "0.012s"
    assert headers["x-ratelimit-remaining-tokens"] == "159976"
    assert headers["x-ratelimit-reset-tokens"] == "360s"


@pytest.mark.parametrize("stream", [False, True])
def test_an_anthropic_client_sees_anthropic_s_limits_under_the_common_names(
    gateway: Server, stream: bool
) -> None:
    with anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as client:
        raw = client.messages.with_raw_response.create(
            model="anthropic:claude-sonnet-4-5", max_tokens=10, messages=HI, stream=stream
        )
        if stream:
            list(raw.parse())
    assert raw.request_id == "req_011CSLsW7mFqvHHnzrKdKjAE"
    headers = raw.headers
    assert headers["x-ratelimit-limit-requests"] == "1000"
    assert headers["x-ratelimit-remaining-requests"] == "999"
    assert headers["x-ratelimit-remaining-input-tokens"] == "80000"
    reset = headers["x-ratelimit-reset-requests"]  # an absolute time, as seconds from now
    assert re.fullmatch(r"\d+(\.\d+)?s", reset) and float(reset[:-1]) > 365 * 86400


def test_a_count_carries_the_upstream_s_id_and_limits(gateway: Server) -> None:
    """A count is a request the provider answers and bills against the same limits: its
    answer says what the provider said, as a completion's does."""
    with anthropic.Anthropic(base_url=gateway.url, api_key=KEY, max_retries=0) as client:
        raw = client.messages.with_raw_response.count_tokens(
            model="anthropic:claude-sonnet-4-5", messages=HI
        )
    assert raw.parse().input_tokens == 7
    assert raw.request_id == "req_011CSLsW7mFqvHHnzrKdKjAE"
    assert raw.headers["x-ratelimit-remaining-requests"] == "999"


def test_a_throttled_answer_carries_the_upstream_s_id_and_limits(gateway: Server) -> None:
    with _openai(gateway) as client, pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="openai:gpt-4o", messages=HI)
    assert caught.value.request_id == "req_upstream_openai"
    assert caught.value.response.headers["x-ratelimit-remaining-requests"] == "4999"


def _own_id(headers: Any) -> str:
    request_id = headers["x-request-id"]
    assert re.fullmatch(r"req_[0-9a-f]{24}", request_id), request_id
    assert headers["request-id"] == request_id
    return str(request_id)


def test_without_an_upstream_id_the_server_gives_its_own_on_every_route(
    gateway: Server,
) -> None:
    with _openai(gateway) as client:
        bare = client.chat.completions.with_raw_response.create(model="vllm:box", messages=HI)
        models = client.models.with_raw_response.list()
        with pytest.raises(openai.NotFoundError) as missing:
            client.chat.completions.create(model="no-such-model", messages=HI)
    assert not any(name.startswith("x-ratelimit") for name in bare.headers)
    ids = {_own_id(bare.headers), _own_id(models.headers), _own_id(missing.value.response.headers)}
    with urllib.request.urlopen(gateway.url + "/health") as health:
        ids.add(_own_id(health.headers))
    assert len(ids) == 4  # one per answer


def test_the_headers_a_start_becomes() -> None:
    ids = UpstreamIds(own="req_own")
    now = datetime(2025, 8, 21, 12, 40, 49, tzinfo=UTC)
    assert upstream_headers(ids, now) == [
        (b"x-request-id", b"req_own"),
        (b"request-id", b"req_own"),
    ]
    ids.start = Start(
        request_id="up\r\nset-cookie: x",  # from a remote streamfn: checked again
        rate_limits=RateLimits(
            requests=RateLimit(
                limit=-1, remaining=3, reset_at=datetime(2025, 8, 21, 12, 40, 59, tzinfo=UTC)
            ),
            tokens=RateLimit(remaining=10**30, reset_after=float("nan")),
        ),
    )
    assert upstream_headers(ids, now) == [
        (b"x-request-id", b"req_own"),
        (b"request-id", b"req_own"),
        (b"x-ratelimit-remaining-requests", b"3"),
        (b"x-ratelimit-reset-requests", b"10s"),
    ]
