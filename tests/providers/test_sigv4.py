"""SigV4: one test per signing rule, AWS's published vectors, and botocore as
an oracle (random requests signed by both must carry identical headers).

botocore is a test-only dependency; the core never imports it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from unittest import mock
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from streamfn.core.dialects.bedrock._sigv4 import _canonical_uri, encode_path_segment, sign_request

EXAMPLES = max(200, settings().max_examples)
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

WHEN = datetime(2015, 8, 30, 12, 36, tzinfo=UTC)
SUITE_KEY = "AKIDEXAMPLE"
SUITE_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
CONVERSE_URL = (
    "https://bedrock-runtime.us-east-1.amazonaws.com"
    "/model/anthropic.claude-3-5-sonnet-20240620-v1:0/converse-stream"
)


def _sign(**overrides: Any) -> dict[str, str]:
    args: dict[str, Any] = {
        "method": "GET",
        "url": "https://example.amazonaws.com/",
        "headers": {},
        "body": b"",
        "region": "us-east-1",
        "service": "service",
        "access_key": SUITE_KEY,
        "secret_key": SUITE_SECRET,
        "timestamp": WHEN,
    }
    args.update(overrides)
    return sign_request(**args)


def _signed_names(headers: Mapping[str, str]) -> list[str]:
    return headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")


# --- botocore as the oracle ------------------------------------------------


@contextmanager
def _frozen_botocore(when: datetime) -> Iterator[Any]:
    auth = pytest.importorskip("botocore.auth")
    # botocore 1.3x-1.44 read the clock through get_current_datetime (older
    # versions called datetime.utcnow() directly); both return naive UTC.
    frozen = when.astimezone(UTC).replace(tzinfo=None)
    if hasattr(auth, "get_current_datetime"):
        with mock.patch.object(auth, "get_current_datetime", return_value=frozen):
            yield auth
    else:  # pragma: no cover - old botocore
        fake = mock.Mock(wraps=auth.datetime)
        fake.datetime.utcnow.return_value = frozen
        with mock.patch.object(auth, "datetime", fake):
            yield auth


def _botocore_sign(
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    region: str,
    service: str,
    access_key: str,
    secret_key: str,
    session_token: str | None,
    timestamp: datetime,
) -> tuple[list[tuple[str, str]], str]:
    """botocore's headers after signing, and its canonical request."""
    awsrequest = pytest.importorskip("botocore.awsrequest")
    credentials = pytest.importorskip("botocore.credentials")
    request = awsrequest.AWSRequest(method=method, url=url, data=body)
    for name, value in headers.items():  # HTTPHeaders keeps case-variant repeats
        request.headers[name] = value
    with _frozen_botocore(timestamp) as auth:
        signer = auth.SigV4Auth(
            credentials.Credentials(access_key, secret_key, session_token), service, region
        )
        signer.add_auth(request)
        canonical = signer.canonical_request(request)
    return list(request.headers.items()), canonical


def _compare_with_botocore(**args: Any) -> dict[str, str]:
    ours = sign_request(**args)
    theirs, _ = _botocore_sign(**args)
    assert ours["Authorization"] == dict(theirs)["Authorization"]
    # botocore leaves Host to the HTTP client; we return it.
    lowered = {name.lower() for name in args["headers"]}
    ours_items = [(k, v) for k, v in ours.items() if not (k == "host" and "host" not in lowered)]
    assert sorted(ours_items) == sorted(theirs)
    return ours


def test_bedrock_converse_stream_url_matches_botocore() -> None:
    body = b'{"messages":[{"role":"user","content":[{"text":"hi"}]}]}'
    for url in (CONVERSE_URL, CONVERSE_URL.replace("v1:0", "v1%3A0")):
        for token in (None, "FwoGZXIvYXdzEXAMPLE"):
            _compare_with_botocore(
                method="POST",
                url=url,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                body=body,
                region="us-east-1",
                service="bedrock",
                access_key=SUITE_KEY,
                secret_key=SUITE_SECRET,
                session_token=token,
                timestamp=datetime(2024, 6, 20, 23, 59, 59, tzinfo=UTC),
            )


def test_bedrock_model_id_colon_is_double_encoded_in_canonical_uri() -> None:
    # The model id goes into the URL percent-encoded once ("%3A"), and the
    # canonical URI encodes that wire path again ("%253A").
    model = "anthropic.claude-3-5-sonnet-20240620-v1:0"
    path = f"/model/{encode_path_segment(model)}/converse-stream"
    assert path == "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream"
    expected = "/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse-stream"
    assert _canonical_uri(path) == expected
    _, canonical = _botocore_sign(
        method="POST",
        url="https://bedrock-runtime.us-east-1.amazonaws.com" + path,
        headers={},
        body=b"{}",
        region="us-east-1",
        service="bedrock",
        access_key="AK",
        secret_key="SK",
        session_token=None,
        timestamp=WHEN,
    )
    assert canonical.splitlines()[1] == expected


def test_bedrock_client_request_signs_identically() -> None:
    """The request botocore's own bedrock-runtime client builds and signs for
    ConverseStream (serializer included) gets the same Authorization from us."""
    session_mod = pytest.importorskip("botocore.session")
    when = datetime(2024, 11, 5, 8, 30, 1, tzinfo=UTC)
    captured: dict[str, Any] = {}

    class Sent(Exception):
        pass

    def before_send(request: Any, **_: Any) -> None:
        captured["request"] = request
        raise Sent

    client = session_mod.get_session().create_client(
        "bedrock-runtime",
        region_name="us-west-2",
        aws_access_key_id=SUITE_KEY,
        aws_secret_access_key=SUITE_SECRET,
        aws_session_token="session-token-example",
    )
    assert client.meta.service_model.signing_name == "bedrock"
    client.meta.events.register("before-send.bedrock-runtime.ConverseStream", before_send)
    with _frozen_botocore(when), pytest.raises(Sent):
        client.converse_stream(
            modelId="us.anthropic.claude-3-5-sonnet-20240620-v1:0",
            messages=[{"role": "user", "content": [{"text": "hello"}]}],
        )
    request = captured["request"]
    assert "/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream" in request.url

    def text(value: str | bytes) -> str:
        return value.decode() if isinstance(value, bytes) else value

    sent = {k: text(v) for k, v in request.headers.items()}
    signed = _signed_names(sent)
    given_headers = {
        k: v
        for k, v in sent.items()
        if k.lower() in signed and k.lower() not in ("x-amz-date", "x-amz-security-token")
    }
    ours = sign_request(
        method=request.method,
        url=request.url,
        headers=given_headers,
        body=request.body,
        region="us-west-2",
        service="bedrock",
        access_key=SUITE_KEY,
        secret_key=SUITE_SECRET,
        session_token="session-token-example",
        timestamp=when,
    )
    assert ours["Authorization"] == sent["Authorization"]
    assert ours["X-Amz-Date"] == sent["X-Amz-Date"]
    assert ours["X-Amz-Security-Token"] == sent["X-Amz-Security-Token"]


# Random requests ----------------------------------------------------------

_segment_text = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cc"], exclude_characters="/?#%\\"),
    max_size=12,
)
_segments = st.one_of(
    _segment_text,
    st.sampled_from(
        [".", "..", "", "model", "anthropic.claude-3-5-sonnet-20240620-v1:0", "a b", "ü", "~x"]
    ),
)


@st.composite
def _paths(draw: st.DrawFn) -> str:
    segments = draw(st.lists(_segments, max_size=6))
    encode = draw(st.booleans())
    raw = [encode_path_segment(s) if encode else s for s in segments]
    if not encode:
        # Unencoded, the wire form may only use characters a URL can carry.
        assume(all(c not in " \x7f" and c.isprintable() for s in raw for c in s))
    return "/" + "/".join(raw) + draw(st.sampled_from(["", "/"]))


_query_text = st.text(st.characters(codec="utf-8"), max_size=8)


@st.composite
def _queries(draw: st.DrawFn) -> str:
    pairs = draw(st.lists(st.tuples(_query_text.filter(bool), _query_text), max_size=5))
    if not pairs:
        return ""
    parts = [f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in pairs]
    return "?" + "&".join(parts)


_header_names = st.one_of(
    st.sampled_from(
        [
            "Content-Type",
            "content-type",
            "Accept",
            "User-Agent",
            "X-Amz-Target",
            "x-amz-date",
            "Date",
            "Authorization",
            "X-Amz-Security-Token",
            "X-Amz-Content-SHA256",
            "Host",
            "Connection",
            "Expect",
            "X-Amzn-Trace-Id",
            "amz-sdk-invocation-id",
        ]
    ),
    st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=1),
)
_header_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.just("\t"))
_hosts = st.sampled_from(
    [
        "bedrock-runtime.us-east-1.amazonaws.com",
        "bedrock.eu-central-1.amazonaws.com",
        "Bedrock-Runtime.AP-Southeast-2.amazonaws.com",
        "localhost:8080",
        "127.0.0.1:443",
        "example.com:80",
        "[::1]:9000",
    ]
)
_timestamps = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2099, 12, 31),
    timezones=st.sampled_from(
        [UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=5, minutes=30))]
    ),
)
_keys = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=20)
_secrets = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/+", min_size=1)


@PROPERTY
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "post"]),
    scheme=st.sampled_from(["https", "http"]),
    host=_hosts,
    path=_paths(),
    query=_queries(),
    headers=st.dictionaries(_header_names, _header_values, max_size=8),
    body=st.binary(max_size=256),
    region=st.sampled_from(["us-east-1", "us-west-2", "eu-central-1", "ap-northeast-1"]),
    service=st.sampled_from(["bedrock", "bedrock-runtime"]),
    access_key=_keys,
    secret_key=_secrets,
    session_token=st.none() | st.just("") | _secrets,
    timestamp=_timestamps,
)
def test_random_requests_sign_like_botocore(
    method: str,
    scheme: str,
    host: str,
    path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
    region: str,
    service: str,
    access_key: str,
    secret_key: str,
    session_token: str | None,
    timestamp: datetime,
) -> None:
    _compare_with_botocore(
        method=method,
        url=f"{scheme}://{host}{path}{query}",
        headers=headers,
        body=body,
        region=region,
        service=service,
        access_key=access_key,
        secret_key=secret_key,
        session_token=session_token,
        timestamp=timestamp,
    )


# --- AWS's published test-suite vectors -------------------------------------


def test_aws_suite_get_vanilla() -> None:
    headers = _sign(headers={"Host": "example.amazonaws.com"})
    assert headers == {
        "Host": "example.amazonaws.com",
        "X-Amz-Date": "20150830T123600Z",
        "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
        "aws4_request, SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    }


def test_aws_suite_get_vanilla_query_order_key_case() -> None:
    headers = _sign(url="https://example.amazonaws.com/?Param2=value2&Param1=value1")
    assert headers["Authorization"].endswith(
        "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
    )


# --- one test per rule -------------------------------------------------------


def test_canonical_uri_encodes_each_segment_of_the_wire_path_again() -> None:
    assert _canonical_uri("/a%20b/c:d/é/~t") == "/a%2520b/c%3Ad/%C3%A9/~t"
    assert _canonical_uri("") == "/"


def test_dot_segments_and_empty_segments_removed_from_path() -> None:
    assert _canonical_uri("/a//b/./c/../d/") == "/a/b/d/"
    assert _canonical_uri("/../..") == "/"
    assert _canonical_uri("/a/.") == "/a"


def test_encode_path_segment_escapes_reserved_characters() -> None:
    assert encode_path_segment("a/b:c d~e") == "a%2Fb%3Ac%20d~e"


def test_canonical_query_string_sorted_by_key_then_value() -> None:
    a = _sign(url="https://example.amazonaws.com/?b=2&a=2&a=1&c")
    b = _sign(url="https://example.amazonaws.com/?a=1&a=2&b=2&c=")
    assert a["Authorization"] == b["Authorization"]


def test_canonical_query_string_encoding_normalised() -> None:
    # Raw reserved characters and lowercase escapes sign like their proper
    # encoding, which is what the server reconstructs; raw bytes survive.
    proper = _sign(url="https://example.amazonaws.com/?k=a%3Ab%2F%FF%20")
    for sloppy in ("k=a:b/%ff%20", "k=a%3ab%2f%Ff%20", "%6B=a:b%2F%FF%20"):
        assert _sign(url=f"https://example.amazonaws.com/?{sloppy}") == proper
    plus = _sign(url="https://example.amazonaws.com/?k=a+b")
    assert (
        plus["Authorization"]
        == _sign(url="https://example.amazonaws.com/?k=a%2Bb")["Authorization"]
    )


def test_header_names_lowercased_values_trimmed_and_collapsed() -> None:
    messy = _sign(headers={"X-Custom": "  a   b \t c  ", "Host": "example.amazonaws.com"})
    clean = _sign(headers={"x-custom": "a b c", "host": "example.amazonaws.com"})
    assert messy["Authorization"] == clean["Authorization"]
    assert messy["X-Custom"] == "  a   b \t c  "  # sent as given, signed canonically


def test_repeated_header_names_joined_in_order() -> None:
    a = _sign(headers={"X-Multi": "1", "x-multi": "2"})
    b = _sign(headers={"X-Multi": "1,2"})
    c = _sign(headers={"X-Multi": "2,1"})
    assert a["Authorization"] == b["Authorization"] != c["Authorization"]


def test_signed_headers_sorted_and_hop_by_hop_excluded() -> None:
    headers = _sign(
        headers={
            "Zeta": "z",
            "User-Agent": "ua",
            "Connection": "keep-alive",
            "Alpha": "a",
            "X-Amzn-Trace-Id": "t",
        },
        session_token="tok",
    )
    assert _signed_names(headers) == ["alpha", "host", "x-amz-date", "x-amz-security-token", "zeta"]
    assert headers["User-Agent"] == "ua"  # still sent


def test_host_header_derived_from_url() -> None:
    cases = {
        "https://Example.COM/": "example.com",
        "https://example.com:443/": "example.com",
        "http://example.com:80/": "example.com",
        "https://example.com:8443/": "example.com:8443",
        "http://example.com:443/": "example.com:443",
        "https://user:pw@example.com/": "example.com",
        "http://[::1]:9000/": "[::1]:9000",
    }
    for url, host in cases.items():
        assert _sign(url=url)["host"] == host
    given_host = _sign(url="https://example.com/", headers={"Host": "proxy.internal"})
    assert given_host["Host"] == "proxy.internal"
    assert "host" not in given_host


def test_x_amz_date_added_and_stale_auth_replaced() -> None:
    headers = _sign(headers={"Authorization": "old", "X-AMZ-DATE": "19990101T000000Z"})
    assert headers["X-Amz-Date"] == "20150830T123600Z"
    assert "X-AMZ-DATE" not in headers
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/")


def test_date_header_rewritten_to_signing_time() -> None:
    headers = _sign(headers={"date": "yesterday", "X-Amz-Date": "x"})
    assert headers["Date"] == "Sun, 30 Aug 2015 12:36:00 -0000"
    assert "X-Amz-Date" not in headers
    assert "date" in _signed_names(headers)
    assert "x-amz-date" not in _signed_names(headers)


def test_session_token_sent_and_signed() -> None:
    headers = _sign(session_token="TOKEN", headers={"x-amz-security-token": "stale"})
    assert headers["X-Amz-Security-Token"] == "TOKEN"
    assert "x-amz-security-token" not in headers
    assert "x-amz-security-token" in _signed_names(headers)
    assert "X-Amz-Security-Token" not in _sign(session_token=None)
    assert "X-Amz-Security-Token" not in _sign(session_token="")


def test_payload_hash_is_sha256_of_body_or_the_given_header() -> None:
    body = b'{"hello": "world"}'
    plain = _sign(method="POST", body=body)
    assert "X-Amz-Content-SHA256" not in plain  # botocore does not send it for bedrock
    explicit = _sign(
        method="POST",
        body=b"other",
        headers={"X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest()},
    )
    with_flag = _sign(method="POST", body=body, add_content_sha256=True)
    assert with_flag["X-Amz-Content-SHA256"] == hashlib.sha256(body).hexdigest()
    assert explicit["Authorization"] == with_flag["Authorization"]
    unsigned = _sign(method="POST", body=body, headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    assert unsigned["Authorization"] != plain["Authorization"]


def test_method_uppercased() -> None:
    assert _sign(method="post")["Authorization"] == _sign(method="POST")["Authorization"]


def test_timestamp_must_be_aware_and_is_converted_to_utc() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        _sign(timestamp=datetime(2015, 8, 30, 12, 36))
    pacific = WHEN.astimezone(timezone(timedelta(hours=-7)))
    assert _sign(timestamp=pacific) == _sign()


def test_pure_same_inputs_same_output_and_inputs_untouched() -> None:
    given_headers = {"Content-Type": "application/json"}
    first = _sign(headers=given_headers, method="POST", body=b"{}")
    second = _sign(headers=given_headers, method="POST", body=b"{}")
    assert first == second
    assert given_headers == {"Content-Type": "application/json"}


def test_invalid_headers_and_urls_rejected_without_leaking_secrets() -> None:
    secret = "SUPERSECRETVALUE"
    bad_calls: list[dict[str, Any]] = [
        {"headers": {"X-Evil": f"{secret}\r\nX-Injected: 1"}},
        {"headers": {f"Bad Name {secret}"[:8]: "v"}},
        {"url": f"https://user:{secret}@/path"},
        {"url": f"https://user:{secret}@example.com:99999/"},
        {"url": f"/relative/{secret}"},
    ]
    for overrides in bad_calls:
        with pytest.raises(ValueError) as info:
            _sign(secret_key=secret, session_token=secret, **overrides)
        assert secret not in str(info.value)
        assert SUITE_KEY not in str(info.value)
