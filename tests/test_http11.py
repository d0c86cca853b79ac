"""The sans-I/O HTTP/1.1 exchange, the CONNECT tunnel and proxy selection, without sockets."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import h11
import pytest
from fake_provider import OPENAI_BODY
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import Context, Error, ErrorKind, Model, Options, replay
from streamfn.core.call import open_call
from streamfn.core.http11 import (
    MAX_HEADER_BYTES,
    ConnectTunnel,
    Exchange,
    TunnelError,
    parse_target,
    wire_headers,
    with_credentials,
)
from streamfn.core.proxy_env import Proxy, no_proxy_matches, proxy_for

MODEL = Model(id="replay", provider="openai", api="openai-chat", base_url="http://h.test:8080/v1")
OPTIONS = Options(api_key="sk-x", first_byte_timeout=5.0, idle_timeout=2.0)


def exchange(options: Options = OPTIONS, **kwargs: object) -> Exchange:
    return Exchange(open_call(MODEL, Context.of("hi"), options), MODEL, options, **kwargs)  # type: ignore[arg-type]


def chunked_response(body: bytes) -> bytes:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    return head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


EXPECTED = replay(
    "openai-chat", OPENAI_BODY, provider="openai", headers=[("content-type", "text/event-stream")]
)


@given(cuts=st.lists(st.integers(0, len(chunked_response(OPENAI_BODY))), max_size=12))
def test_any_split_of_the_http_bytes_gives_the_replayed_events(cuts: list[int]) -> None:
    wire = chunked_response(OPENAI_BODY)
    ex = exchange()
    ex.bytes_to_send()
    events = []
    points = [0, *sorted(cuts), len(wire)]
    for a, b in itertools.pairwise(points):
        events += ex.receive_bytes(wire[a:b])
    assert events == EXPECTED
    assert ex.finished and ex.reusable


def test_request_is_framed_with_host_and_content_length() -> None:
    ex = exchange()
    server = h11.Connection(h11.SERVER)
    server.receive_data(ex.bytes_to_send())
    request = server.next_event()
    assert isinstance(request, h11.Request)
    headers = dict(request.headers)
    assert request.method == b"POST" and request.target == b"/v1/chat/completions"
    assert headers[b"host"] == b"h.test:8080"
    body = server.next_event()
    assert isinstance(body, h11.Data) and int(headers[b"content-length"]) == len(body.data)
    assert headers[b"authorization"] == b"Bearer sk-x"


def test_body_over_the_cap_is_a_limit_error_and_the_socket_is_not_reused() -> None:
    ex = exchange(Options(api_key="k", max_response_bytes=100))
    ex.bytes_to_send()
    events = ex.receive_bytes(chunked_response(OPENAI_BODY))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.LIMIT
    assert ex.finished and not ex.reusable


def test_endless_headers_hit_the_header_cap() -> None:
    ex = exchange()
    ex.bytes_to_send()
    events = ex.receive_bytes(b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"a" * (MAX_HEADER_BYTES + 10))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.LIMIT


def test_truncated_chunked_body_is_a_network_error() -> None:
    ex = exchange()
    ex.bytes_to_send()
    wire = chunked_response(OPENAI_BODY)
    events = ex.receive_bytes(wire[: len(wire) // 2]) + ex.receive_eof()
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.NETWORK
    assert "mid-body" in events[-1].message and not ex.reusable


def test_terminal_event_before_the_last_chunk_needs_the_tail_to_be_reusable() -> None:
    ex = exchange()
    ex.bytes_to_send()
    wire = chunked_response(OPENAI_BODY)
    events = ex.receive_bytes(wire[:-5])
    assert events == EXPECTED and ex.finished and ex.needs_tail and not ex.reusable
    assert ex.receive_bytes(wire[-5:]) == []
    assert ex.reusable and not ex.needs_tail
    # the next request on the same connection
    again = exchange(reuse=ex)
    assert again.reused and not ex.reusable
    again.bytes_to_send()
    assert again.receive_bytes(wire) == EXPECTED


def test_timers_first_byte_then_idle_then_total() -> None:
    ex = exchange(deadline=100.0)
    assert ex.timer(10.0)[0] == 15.0
    assert "first-byte timeout" in ex.timer(12.0)[1].message  # header bytes do not reset it
    ex.bytes_to_send()
    ex.receive_bytes(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    assert ex.timer(13.0)[0] == 15.0
    ex.receive_bytes(b"3\r\n: x\r\n")
    deadline, error = ex.timer(14.0)
    assert deadline == 16.0 and error.message == "idle timeout: no data for 2.0 s"
    assert ex.timer(15.0)[0] == 16.0  # no new bytes: same reference
    ex.receive_bytes(b"1\r\n\n\r\n")
    assert ex.timer(99.0)[0] == 100.0
    assert ex.timer(99.0)[1].message.startswith("total timeout")


def test_parse_target() -> None:
    t = parse_target("https://api.example.com/v1/x?key=1")
    assert (t.scheme, t.host, t.port, t.target, t.authority) == (
        "https",
        "api.example.com",
        443,
        "/v1/x?key=1",
        "api.example.com",
    )
    with pytest.raises(ValueError) as info:
        parse_target("ftp://x/?key=SECRET")
    assert "SECRET" not in str(info.value)


def test_connect_tunnel() -> None:
    target = parse_target("https://api.example.com/v1")
    tunnel = ConnectTunnel(target, Proxy(host="p", port=3128, authorization="Basic c2VjcmV0"))
    server = h11.Connection(h11.SERVER)
    server.receive_data(tunnel.bytes_to_send())
    request = server.next_event()
    assert isinstance(request, h11.Request) and request.method == b"CONNECT"
    assert request.target == b"api.example.com:443"
    assert dict(request.headers)[b"proxy-authorization"] == b"Basic c2VjcmV0"
    assert tunnel.receive_bytes(b"HTTP/1.1 200 Connection established\r\n\r\n")
    refused = ConnectTunnel(target, Proxy(host="p", port=3128, authorization="Basic c2VjcmV0"))
    refused.bytes_to_send()
    with pytest.raises(TunnelError, match="407") as info:
        refused.receive_bytes(
            b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n"
        )
    assert "c2VjcmV0" not in str(info.value)


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "direct"),
    [
        ("api.openai.com", 443, "", False),
        ("api.openai.com", 443, "*", True),
        ("api.openai.com", 443, "openai.com", True),
        ("api.openai.com", 443, ".openai.com", True),
        ("notopenai.com", 443, "openai.com", False),
        ("api.openai.com", 443, "api.openai.com:8443", False),
        ("api.openai.com", 8443, "api.openai.com:8443", True),
        ("10.1.2.3", 443, "10.0.0.0/8", True),
        ("11.1.2.3", 443, "10.0.0.0/8", False),
        ("::1", 443, "[::1]", True),
        ("localhost", 443, " example.com , LOCALHOST ", True),
    ],
)
def test_no_proxy_matching(host: str, port: int, no_proxy: str, direct: bool) -> None:
    assert no_proxy_matches(host, port, no_proxy) is direct


def test_proxy_for_reads_https_proxy_only_for_https() -> None:
    env = {"https_proxy": "http://u%40x:pw@proxy.local:3128", "NO_PROXY": "internal"}
    proxy = proxy_for("https", "api.openai.com", 443, env)
    assert proxy is not None and (proxy.host, proxy.port) == ("proxy.local", 3128)
    assert proxy.authorization == "Basic dUB4OnB3"
    assert "pw" not in repr(proxy)
    assert proxy_for("http", "localhost", 8000, env) is None
    assert proxy_for("https", "svc.internal", 443, env) is None
    with pytest.raises(ValueError):
        proxy_for("https", "a.com", 443, {"HTTPS_PROXY": "socks5://p:1"})


def test_bedrock_requests_are_signed_at_send_time() -> None:
    model = Model(
        id="m",
        provider="bedrock",
        api="bedrock",
        base_url="https://bedrock-runtime.eu-west-1.amazonaws.com",
    )
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}
    call = open_call(model, Context.of("hi"), with_credentials(model, Options(), env))
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    headers = dict((k.lower(), v) for k, v in wire_headers(call, when))
    assert headers["authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240501/eu-west-1/bedrock/"
    )
    assert headers["x-amz-date"] == "20240501T120000Z"
    later = dict(
        (k.lower(), v) for k, v in wire_headers(call, when.replace(hour=13))
    )
    assert later["authorization"] != headers["authorization"]


def test_aws_region_picks_the_bedrock_endpoint_and_the_signing_region() -> None:
    model = Model(
        id="anthropic.claude-3-5-sonnet-20240620-v1:0",
        provider="bedrock",
        api="bedrock",
        base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
    )
    env = {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_REGION": "eu-central-1",
    }
    call = open_call(model, Context.of("hi"), with_credentials(model, Options(), env))
    assert call.request.url.startswith("https://bedrock-runtime.eu-central-1.amazonaws.com/")
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    auth = dict((k.lower(), v) for k, v in wire_headers(call, when))["authorization"]
    assert "/eu-central-1/bedrock/" in auth
    # a caller's base URL or the model's own region wins over the environment
    pinned = with_credentials(model, Options(base_url="https://vpce.example/bedrock"), env)
    assert pinned.base_url == "https://vpce.example/bedrock"
