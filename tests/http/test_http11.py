"""The sans-I/O HTTP/1.1 exchange, the CONNECT tunnel and proxy selection, without sockets."""

from __future__ import annotations

import gzip
import itertools
import zlib
from datetime import UTC, datetime

import h11
import pytest
from fake_provider import OPENAI_BODY
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import Context, Error, ErrorKind, Model, Options, replay
from streamfn.core._call import open_call
from streamfn.core._credentials import with_credentials
from streamfn.core.http._content_coding import PIECE_BYTES, decoder_for
from streamfn.core.http._driver import wire_headers
from streamfn.core.http._exchange import Exchange
from streamfn.core.http._proxy_env import Proxy, no_proxy_matches, proxy_for
from streamfn.core.http._target import MAX_HEADER_BYTES, parse_target
from streamfn.core.http._tunnel import ConnectTunnel, TunnelError
from streamfn.fuzz import chunkings

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
    later = dict((k.lower(), v) for k, v in wire_headers(call, when.replace(hour=13)))
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


# -- nothing unread is pooled; compression; Retry-After dates --------------------------


def _complete(ex: Exchange, extra: bytes = b"") -> list[object]:
    ex.bytes_to_send()
    return list(ex.receive_bytes(chunked_response(OPENAI_BODY) + extra))


def test_bytes_after_a_complete_response_make_the_socket_unusable() -> None:
    """A second response in the same packet is h11's trailing data: never pooled."""
    clean = exchange()
    assert _complete(clean) == EXPECTED and clean.reusable
    for extra in (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi", b"H", b"\r\n"):
        ex = exchange()
        assert _complete(ex, extra) == EXPECTED
        assert ex.finished and not ex.reusable
        assert not exchange(reuse=ex).reused  # nor handed to the next request


def test_connection_close_or_a_seen_eof_is_never_reused() -> None:
    ex = exchange()
    ex.bytes_to_send()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
    wire = head + b"content-length: %d\r\n\r\n%s" % (len(OPENAI_BODY), OPENAI_BODY)
    assert ex.receive_bytes(wire) == EXPECTED and not ex.reusable
    ex = exchange()
    assert _complete(ex) == EXPECTED
    ex.receive_eof()
    assert not ex.reusable


def test_a_limit_error_closes_instead_of_draining_the_tail() -> None:
    options = Options(api_key="k", max_line_bytes=1024)
    ex = exchange(options)
    ex.bytes_to_send()
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    line = b"data: " + b"x" * 4096
    events = ex.receive_bytes(head + b"%x\r\n%s\r\n" % (len(line), line))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.LIMIT
    assert ex.finished and not ex.needs_tail and not ex.reusable


def test_a_long_tail_is_not_drained() -> None:
    ex = exchange()
    ex.bytes_to_send()
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    assert ex.receive_bytes(head + b"%x\r\n%s\r\n" % (len(OPENAI_BODY), OPENAI_BODY)) == EXPECTED
    assert ex.needs_tail
    comment = b": " + b"x" * (96 << 10) + b"\n"
    ex.receive_bytes(b"%x\r\n%s\r\n" % (len(comment), comment))
    assert not ex.needs_tail and not ex.reusable


def test_identity_is_asked_for_unless_the_caller_chose_an_encoding() -> None:
    def sent_headers(ex: Exchange) -> dict[bytes, bytes]:
        server = h11.Connection(h11.SERVER)
        server.receive_data(ex.bytes_to_send())
        request = server.next_event()
        assert isinstance(request, h11.Request)
        return dict(request.headers)

    assert sent_headers(exchange())[b"accept-encoding"] == b"identity"
    own = exchange(headers=[("Host", "h.test:8080"), ("Accept-Encoding", "gzip")])
    assert sent_headers(own)[b"accept-encoding"] == b"gzip"


def _encoded_response(body: bytes, coding: str, status: int = 200, ctype: bytes = b"") -> bytes:
    ctype = ctype or b"text/event-stream"
    head = b"HTTP/1.1 %d X\r\ncontent-type: %s\r\ncontent-encoding: %s\r\n" % (
        status,
        ctype,
        coding.encode(),
    )
    return head + b"content-length: %d\r\n\r\n%s" % (len(body), body)


@given(cuts=st.lists(st.integers(0, len(gzip.compress(OPENAI_BODY))), max_size=8))
def test_a_gzipped_body_in_any_split_gives_the_replayed_events(cuts: list[int]) -> None:
    wire = _encoded_response(gzip.compress(OPENAI_BODY), "gzip")
    ex = exchange()
    ex.bytes_to_send()
    head = len(wire) - len(gzip.compress(OPENAI_BODY))
    points = [0, head, *sorted(head + c for c in cuts), len(wire)]
    events = []
    for a, b in itertools.pairwise(points):
        events += ex.receive_bytes(wire[a:b])
    assert events == EXPECTED and ex.reusable
    assert ex.decoded_bytes == len(OPENAI_BODY) and ex.body_bytes < ex.decoded_bytes


def test_a_gzip_bomb_meets_the_response_cap_in_bounded_pieces() -> None:
    bomb = gzip.compress(b":" + b" " * (32 << 20) + b"\n")
    ex = exchange(Options(api_key="k", max_response_bytes=1 << 20))
    ex.bytes_to_send()
    events = ex.receive_bytes(_encoded_response(bomb, "gzip"))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.LIMIT
    assert ex.decoded_bytes <= (1 << 20) + PIECE_BYTES and not ex.reusable


@pytest.mark.parametrize(
    ("coding", "body", "words"),
    [
        ("gzip", OPENAI_BODY, "corrupt gzip body"),
        ("gzip", gzip.compress(OPENAI_BODY)[:-30], "ended before its compressed stream"),
        ("br", OPENAI_BODY, "unsupported Content-Encoding 'br'"),
        ("gzip, gzip", OPENAI_BODY, "unsupported Content-Encoding 'gzip, gzip'"),
    ],
)
def test_an_undecodable_body_is_a_protocol_error(coding: str, body: bytes, words: str) -> None:
    ex = exchange()
    ex.bytes_to_send()
    events = ex.receive_bytes(_encoded_response(body, coding))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.PROTOCOL
    assert words in events[-1].message and not events[-1].kind.retryable


def test_a_compressed_error_body_is_read_and_an_unknown_one_keeps_its_status() -> None:
    payload = b'{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}'
    for coding, body in (("gzip", gzip.compress(payload)), ("br", b"\x8b\x01\x80junk")):
        ex = exchange()
        ex.bytes_to_send()
        events = ex.receive_bytes(_encoded_response(body, coding, 429, b"application/json"))
        assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.THROTTLED
        assert ("Rate limit reached" in events[-1].message) == (coding == "gzip")


def test_content_codings_streamfn_decodes() -> None:
    text = b"data: x\n\n" * 5000
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    cases = {
        "gzip": gzip.compress(text[:100]) + gzip.compress(text[100:]),  # two members
        "x-gzip": gzip.compress(text),
        "deflate": zlib.compress(text),
        "deflate ": raw.compress(text) + raw.flush(),  # raw deflate, as IIS sends it
    }
    for coding, data in cases.items():
        decoder = decoder_for([("Content-Encoding", coding)])
        assert decoder is not None
        pieces = [p for i in range(0, len(data), 7) for p in decoder.feed(data[i : i + 7])]
        pieces += list(decoder.finish())
        assert b"".join(pieces) == text, coding
        assert max(map(len, pieces)) <= PIECE_BYTES
    assert decoder_for([("content-encoding", "identity")]) is None
    assert decoder_for([]) is None


def test_retry_after_http_date_without_a_date_header_uses_the_send_time() -> None:
    sent = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    ex = exchange(sent_at=sent)
    ex.bytes_to_send()
    wire = (
        b"HTTP/1.1 429 Too Many\r\ncontent-type: application/json\r\n"
        b"retry-after: Fri, 02 Jan 2026 03:04:12 GMT\r\ncontent-length: 2\r\n\r\n{}"
    )
    events = ex.receive_bytes(wire)
    assert isinstance(events[-1], Error) and events[-1].retry_after == 7.0


def test_no_struct_that_can_hold_a_secret_shows_it_in_its_repr() -> None:
    secret = "sk-PLANTED-0123456789"
    model = Model(
        id="m", provider="p", api="openai-chat", base_url="http://x", headers={"X-Key": secret}
    )
    options = Options(
        api_key=secret,
        headers={"Authorization": f"Bearer {secret}"},
        extra_body={"auth": {"token": secret}},
        temperature=0.5,
    )
    for text in (repr(model), repr(options), repr([model, options]), f"{options}"):
        assert secret not in text and secret[-10:] not in text
    assert "X-Key" in repr(model) and "extra_body={'auth': '***'}" in repr(options)
    assert "temperature=0.5" in repr(options) and repr(Options()) == "Options()"


@given(st.binary(max_size=2000), st.sampled_from(["gzip", "deflate", "deflate-raw"]), st.data())
def test_a_compressed_body_decodes_the_same_under_any_chunking(
    plain: bytes, coding: str, data: st.DataObject
) -> None:
    """The framing of deflate (zlib-wrapped or raw) is read from two bytes whatever the cuts."""
    if coding == "gzip":
        body = gzip.compress(plain)
    else:
        wbits = zlib.MAX_WBITS if coding == "deflate" else -zlib.MAX_WBITS
        packer = zlib.compressobj(wbits=wbits)
        body = packer.compress(plain) + packer.flush()
    decoder = decoder_for([("content-encoding", coding.removesuffix("-raw"))])
    assert decoder is not None
    out = b""
    for chunk in data.draw(chunkings(body)):
        out += b"".join(decoder.feed(chunk))
    out += b"".join(decoder.finish())
    assert out == plain


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",  # close-delimited
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n"
        b"transfer-encoding: chunked\r\n\r\n",
        b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
    ],
)
def test_no_tail_is_awaited_when_the_socket_cannot_be_reused(head: bytes) -> None:
    """The terminal event waits for the end of the body only where that buys a reusable
    socket: a close-delimited or Connection: close response never does."""
    ex = exchange()
    ex.bytes_to_send()
    body = (
        OPENAI_BODY
        if b"chunked" not in head
        else chunked_response(OPENAI_BODY).split(b"\r\n\r\n", 1)[1][:-5]
    )
    events = ex.receive_bytes(head + body)
    assert events == EXPECTED and ex.finished and not ex.needs_tail and not ex.reusable
