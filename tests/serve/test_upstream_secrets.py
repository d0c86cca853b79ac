"""No configured secret reaches a client, whatever the upstream says.

A loopback upstream that quotes every request header it got (as some
gateways and proxies do) in its error bodies: 400, 500, 401, and an error
event inside a 200 stream after some text. Every route, streaming or not,
is read as raw bytes, which must hold none of the server's keys nor its
configured header values. A connect error does not tell the client the
upstream's internal ``host:port``; the operator's log does.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator

import pytest
from loopback_server import KEY, Server, provider_backend, raw_post, read_all

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import ServedModel
from streamfn.core import Model, Options
from streamfn.core.catalogue._models import openai_compatible
from streamfn.fuzz._fake_bodies import sse
from streamfn.fuzz._raw_http import Request, ThreadedServer, read_request

# every test here runs on both shells (tests/serve/conftest.py)
pytestmark = pytest.mark.usefixtures("shell")

TEAM_KEY = "sk-team-PLANTED-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-PLANTED-fedcba9876543210"
HEADER_SECRET = "tenant-PLANTED-header-value-42"
OTHER_KEY = ANTHROPIC_KEY  # a key the server holds that a team request does not send
SECRETS = (TEAM_KEY, ANTHROPIC_KEY, HEADER_SECRET)


class EchoUpstream(ThreadedServer):
    """Answers ``/<behaviour>/...`` by quoting the request's headers back."""

    def handle(self, sock: socket.socket) -> None:
        buffer = bytearray()
        request = read_request(sock, buffer)
        if request is None:
            return
        quoted = "; ".join(f"{k}: {v}" for k, v in request.headers.items())
        behaviour = request.path.strip("/").split("/")[0]
        if behaviour.startswith("quote-"):
            body = json.dumps({"error": {"message": _quoting(request, behaviour)}}).encode()
            head = "HTTP/1.1 400 Echo\r\ncontent-type: application/json\r\nconnection: close\r\n"
        elif behaviour == "stream":
            choice = {"index": 0, "delta": {"content": "partial "}, "finish_reason": None}
            body = sse({"id": "c", "choices": [choice]}) + sse(
                {"error": {"message": f"upstream broke; request headers: {quoted}"}}
            )
            head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
        else:
            status = int(behaviour)
            body = json.dumps(
                {"error": {"message": f"refused; you sent {quoted}", "type": "echo"}}
            ).encode()
            head = (
                f"HTTP/1.1 {status} Echo\r\ncontent-type: application/json\r\nconnection: close\r\n"
            )
        sock.sendall(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)


def _quoting(request: Request, behaviour: str) -> str:
    """The refusal of an upstream that quotes the prompt, then a key: the request's own
    (``quote-own``: its Authorization) or one the server holds for another upstream."""
    content = json.loads(request.body)["messages"][-1]["content"]
    prompt = content if isinstance(content, str) else content[-1]["text"]
    key = request.headers["authorization"] if behaviour == "quote-own" else f"Bearer {OTHER_KEY}"
    return f"{prompt} {key} and the rest of what the upstream said"


@pytest.fixture(scope="module")
def echo() -> Iterator[EchoUpstream]:
    with EchoUpstream() as upstream:
        yield upstream


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


CLOSED_PORT = _closed_port()
BEHAVIOURS = ("400", "500", "401", "stream", "quote-own", "quote-other")


@pytest.fixture(scope="module")
def gateway(echo: EchoUpstream) -> Iterator[Server]:
    served = [
        ServedModel(
            name=f"team-{behaviour}",
            model=Model(
                **{
                    **_fields(openai_compatible("m", f"http://127.0.0.1:{echo.port}/{behaviour}")),
                    "headers": {"x-tenant": HEADER_SECRET},
                }
            ),
            api_key_env="TEAM_KEY",
            defaults=Options(max_attempts=1),
        )
        for behaviour in BEHAVIOURS
    ]
    served += [
        ServedModel(
            name=f"claude-{behaviour}",
            model=Model(
                id="claude-x",
                provider="anthropic",
                api="anthropic",
                base_url=f"http://127.0.0.1:{echo.port}/{behaviour}",
            ),
        )
        for behaviour in ("400", "500", "401")
    ]
    served.append(
        ServedModel(
            name="unreachable", model=openai_compatible("m", f"http://127.0.0.1:{CLOSED_PORT}/v1")
        )
    )
    environ = {"TEAM_KEY": TEAM_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    backend = provider_backend(environ, served=served, registry=False)
    with Server(App(backend, ServerConfig(api_key=KEY))) as server:
        yield server


def _fields(model: Model) -> dict[str, object]:
    return {f: getattr(model, f) for f in model.__struct_fields__}


def _ask(server: Server, path: str, model: str, stream: bool) -> bytes:
    messages = [{"role": "user", "content": "hi"}]
    if path == "/v1/chat/completions":
        body: dict[str, object] = {"model": model, "messages": messages, "stream": stream}
    elif path == "/v1/messages":
        body = {"model": model, "messages": messages, "max_tokens": 10, "stream": stream}
    elif path == "/v1/messages/count_tokens":
        body = {"model": model, "messages": messages}
    elif path == "/v1/responses":
        body = {"model": model, "input": "hi", "stream": stream}
    elif path == "/v1/responses/input_tokens":
        body = {"model": model, "input": "hi"}
    else:
        body = {"model": model, "context": {"messages": [{"type": "user", "content": "hi"}]}}
    with raw_post(server.port, path, json.dumps(body).encode()) as sock:
        return read_all(sock, 30)


ROUTES = [
    ("/v1/chat/completions", False),
    ("/v1/chat/completions", True),
    ("/v1/messages", False),
    ("/v1/messages", True),
    ("/v1/stream", True),
    ("/v1/agent/stream", True),
    ("/v1/responses", False),
    ("/v1/responses", True),
]


@pytest.mark.parametrize(("path", "stream"), ROUTES)
@pytest.mark.parametrize(
    "model", [f"team-{b}" for b in BEHAVIOURS] + ["claude-400", "claude-500", "claude-401"]
)
def test_an_upstream_quoting_the_request_never_shows_a_client_a_configured_secret(
    gateway: Server, path: str, stream: bool, model: str
) -> None:
    raw = _ask(gateway, path, model, stream)
    assert raw.startswith(b"HTTP/1.1 ")
    for secret in SECRETS:
        assert secret.encode() not in raw, (secret, raw[:600])
    if not model.endswith("401"):  # an auth refusal is replaced whole; others are scrubbed
        assert b"***" in raw, raw[:600]


@pytest.mark.parametrize("path", ["/v1/messages/count_tokens", "/v1/responses/input_tokens"])
@pytest.mark.parametrize("model", ["claude-400", "claude-500", "claude-401"])
def test_a_count_route_never_shows_a_client_a_configured_secret(
    gateway: Server, path: str, model: str
) -> None:
    # a count asks the upstream's counting endpoint with the server's key, like a
    # completion; its refusals are scrubbed the same way
    raw = _ask(gateway, path, model, False)
    assert raw.startswith(b"HTTP/1.1 4") or raw.startswith(b"HTTP/1.1 5"), raw[:300]
    for secret in SECRETS:
        assert secret.encode() not in raw, (secret, raw[:600])
    if not model.endswith("401"):
        assert b"***" in raw, raw[:600]


@pytest.mark.parametrize(("path", "stream"), ROUTES)
def test_a_connect_error_does_not_name_the_internal_address(
    gateway: Server, path: str, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="streamfn")
    raw = _ask(gateway, path, "unreachable", stream)
    assert str(CLOSED_PORT).encode() not in raw, raw[:600]
    assert b"the upstream" in raw, raw[:600]
    assert f"127.0.0.1:{CLOSED_PORT}" in caplog.text  # the operator's log has it


def test_proxy_credentials_and_resolved_addresses_are_scrubbed_too() -> None:
    from streamfn.asgi._upstream_text import UpstreamText
    from streamfn.core import Error

    model = openai_compatible("m", "https://vllm.internal:8443/v1")
    environ = {"HTTPS_PROXY": "http://bob:s3cret-proxy-pass@proxy.corp:3128"}
    text = UpstreamText(model, Options(), environ, frozenset())
    said = text.event(
        Error.network(
            "connect to vllm.internal:8443 failed via proxy.corp:3128 "
            "(Proxy-Authorization: Basic Ym9iOnMzY3JldC1wcm94eS1wYXNz, s3cret-proxy-pass): "
            "[Errno 111] Connect call failed ('10.1.2.3', 8443)"
        )
    )
    assert isinstance(said, Error)
    for leak in ("vllm.internal", "proxy.corp", "10.1.2.3", "8443", "3128", "Ym9i", "s3cret"):
        assert leak not in said.message, said.message


#: how much of an upstream's error text a client is shown (`streamfn.core._classify`)
SHOWN_CHARS = 2000


def _runs(secret: str, length: int = 8) -> list[bytes]:
    return [secret[i : i + length].encode() for i in range(len(secret) - length + 1)]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/ui/chat"])
@pytest.mark.parametrize(
    ("behaviour", "secret"), [("quote-own", TEAM_KEY), ("quote-other", OTHER_KEY)]
)
def test_a_key_at_the_cut_of_a_long_error_text_shows_no_part_of_itself(
    gateway: Server, path: str, behaviour: str, secret: str
) -> None:
    """The client pads its prompt so the quoted key falls across the point where a long
    error text is shortened, at every offset: no 8 characters of it reach the client."""
    before = len(" Bearer ")  # between the prompt and the key in the upstream's words
    for start in range(SHOWN_CHARS - len(secret) - 1, SHOWN_CHARS + 2):
        prompt = "p" * (start - before)
        raw = _ask_with(gateway, path, f"team-{behaviour}", prompt)
        assert raw.startswith(b"HTTP/1.1 "), raw[:300]
        assert b"Bearer" in raw, raw[-400:]  # the upstream's words did arrive
        leaked = [run for run in _runs(secret) if run in raw]
        assert not leaked, (start, leaked, raw[-400:])


def _ask_with(server: Server, path: str, model: str, prompt: str) -> bytes:
    if path == "/v1/ui/chat":
        parts = [{"type": "text", "text": prompt}]
        body: dict[str, object] = {
            "id": "c",
            "model": model,
            "messages": [{"role": "user", "parts": parts}],
        }
    else:
        body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    with raw_post(server.port, path, json.dumps(body).encode()) as sock:
        return read_all(sock, 30)
