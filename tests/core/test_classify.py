"""Error classification against real provider error bodies.

Each body below is the wire text a provider returned (as quoted in public bug
reports and SDK issues), with account ids shortened. The kind decides what a
caller does next (retry, shrink the prompt, fix the key), so every rule in
core/_classify.py is pinned by at least one real body here.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import ErrorKind
from streamfn.core._classify import (
    classify_http_error,
    classify_message,
    extract_error_message,
    parse_retry_after,
    retryable_status,
)

J = "application/json"

# (provider, status, headers, body, expected kind, retry_after)
CASES: list[tuple[str, int, list[tuple[str, str]], bytes, ErrorKind | None, float | None]] = [
    # -- OpenAI -------------------------------------------------------------
    (
        "openai",
        400,
        [],
        b'{"error":{"message":"This model\'s maximum context length is 128000 tokens. However, '
        b'your messages resulted in 204308 tokens. Please reduce the length of the messages.",'
        b'"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',
        ErrorKind.CONTEXT_OVERFLOW,
        None,
    ),
    (
        "openai",
        401,
        [],
        b'{"error":{"message":"Incorrect API key provided: sk-abc123. You can find your API key '
        b'at https://platform.openai.com/account/api-keys.","type":"invalid_request_error",'
        b'"param":null,"code":"invalid_api_key"}}',
        ErrorKind.AUTH,
        None,
    ),
    (
        "openai",
        429,
        [("retry-after", "20")],
        b'{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per '
        b"min (TPM): Limit 30000, Used 14567, Requested 24754. Please try again in 18.642s. Visit "
        b'https://platform.openai.com/account/rate-limits to learn more.","type":"tokens",'
        b'"param":null,"code":"rate_limit_exceeded"}}',
        ErrorKind.THROTTLED,
        20.0,
    ),
    (
        "openai",
        429,
        [("retry-after-ms", "1500"), ("retry-after", "2")],
        b'{"error":{"message":"Rate limit reached for gpt-4o-mini on requests per min (RPM): '
        b'Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}',
        ErrorKind.THROTTLED,
        1.5,  # the millisecond header wins: it is the more precise of the two
    ),
    (
        "openai",
        500,
        [],
        b'{"error":{"message":"The server had an error while processing your request. Sorry about '
        b'that!","type":"server_error","param":null,"code":null}}',
        ErrorKind.NETWORK,
        None,
    ),
    (
        "openai",
        503,
        [],
        b'{"error":{"message":"The engine is currently overloaded, please try again later",'
        b'"type":"server_error","param":null,"code":null}}',
        ErrorKind.NETWORK,
        None,
    ),
    # -- Anthropic ------------------------------------------------------------
    (
        "anthropic",
        400,
        [],
        b'{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: '
        b'211180 tokens > 200000 maximum"},"request_id":"req_011CbRHLp6ffMfsnsULngXLv"}',
        ErrorKind.CONTEXT_OVERFLOW,
        None,
    ),
    (
        "anthropic",
        401,
        [],
        b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
        ErrorKind.AUTH,
        None,
    ),
    (
        "anthropic",
        429,
        [("retry-after", "7")],
        b'{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed '
        b"your account's rate limit. Please try again later.\"}}",
        ErrorKind.THROTTLED,
        7.0,
    ),
    (
        "anthropic",
        529,
        [],
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},'
        b'"request_id":"req_011CZAau32QzxDkriovTaFCB"}',
        ErrorKind.NETWORK,
        None,
    ),
    # -- Google Gemini -------------------------------------------------------
    (
        "google",
        400,
        [],
        b'{"error":{"code":400,"message":"The input token count (3475108) exceeds the maximum '
        b'number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}',
        ErrorKind.CONTEXT_OVERFLOW,
        None,
    ),
    (
        "google",
        429,
        [],
        b'[{"error":{"code":429,"message":"Resource exhausted. Please try again later. Please refer '
        b'to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.",'
        b'"errors":[{"message":"Resource exhausted.","domain":"global","reason":"rateLimitExceeded"}],'
        b'"status":"RESOURCE_EXHAUSTED"}}]',
        ErrorKind.THROTTLED,
        None,
    ),
    (
        "google",
        403,
        [],
        b'{"error":{"code":403,"message":"Method doesn\'t allow unregistered callers (callers '
        b"without established identity). Please use API Key or other form of API consumer identity "
        b'to call this API.","status":"PERMISSION_DENIED"}}',
        ErrorKind.AUTH,
        None,
    ),
    (
        "google",
        400,
        [],
        b'{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.",'
        b'"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",'
        b'"reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}',
        ErrorKind.AUTH,  # a 400, but the key is what to fix
        None,
    ),
    (
        "google",
        503,
        [],
        b'{"error":{"code":503,"message":"The model is overloaded. Please try again later.",'
        b'"status":"UNAVAILABLE"}}',
        ErrorKind.NETWORK,
        None,
    ),
    # -- AWS Bedrock ----------------------------------------------------------
    (
        "bedrock",
        400,
        [("x-amzn-errortype", "ValidationException")],
        b'{"message":"Input is too long for requested model."}',
        ErrorKind.CONTEXT_OVERFLOW,
        None,
    ),
    (
        "bedrock",
        429,
        [("x-amzn-errortype", "ThrottlingException")],
        b'{"message":"Too many tokens, please wait before trying again."}',
        ErrorKind.THROTTLED,
        None,
    ),
    (
        "bedrock",
        403,
        [],
        b'{"Message":"User: arn:aws:iam::123456789012:user/dev is not authorized to perform: '
        b'bedrock:InvokeModelWithResponseStream"}',
        ErrorKind.AUTH,
        None,
    ),
    # -- Mistral --------------------------------------------------------------
    (
        "mistral",
        400,
        [],
        b'{"object":"error","message":"Prompt contains 40970 tokens and 0 draft tokens, too large '
        b'for model with 32768 maximum context length","type":"invalid_request_message_error",'
        b'"param":null,"code":null}',
        ErrorKind.CONTEXT_OVERFLOW,
        None,
    ),
    ("mistral", 429, [], b'{"message":"Requests rate limit exceeded"}', ErrorKind.THROTTLED, None),
    (
        "mistral",
        401,
        [],
        b'{"message":"Unauthorized","request_id":"0b4d2f1e"}',
        ErrorKind.AUTH,
        None,
    ),
    # -- Groq -----------------------------------------------------------------
    (
        "groq",
        429,
        [("retry-after", "7")],
        b'{"error":{"message":"Rate limit reached for model `llama-3.3-70b-versatile` in '
        b"organization `org_01` on tokens per minute (TPM): Limit 6000, Used 3513, Requested 3166. "
        b'Please try again in 6.780999999s.","type":"tokens","code":"rate_limit_exceeded"}}',
        ErrorKind.THROTTLED,
        7.0,
    ),
    (
        "groq",
        413,
        [],
        b'{"error":{"message":"Request too large for model `llama-3.1-70b-versatile` in organization '
        b"`org_01` on tokens per minute (TPM): Limit 6000, Requested 14368, please reduce your "
        b'message size and try again.","type":"tokens","code":"rate_limit_exceeded"}}',
        ErrorKind.CONTEXT_OVERFLOW,  # retrying the same request can never fit: shrink it
        None,
    ),
    # -- Ollama -----------------------------------------------------------------
    (
        "ollama",
        404,
        [],
        b'{"error":"model \'llama3\' not found, try pulling it first"}',
        ErrorKind.INVALID_REQUEST,
        None,
    ),
    (
        "ollama",
        500,
        [],
        b'{"error":"llama runner process has terminated: signal: killed"}',
        ErrorKind.NETWORK,
        None,
    ),
    # -- DeepSeek / OpenAI billing: retrying cannot help ------------------------
    (
        "openai",
        429,
        [],
        b'{"error":{"message":"You exceeded your current quota, please check your plan and billing '
        b'details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}',
        ErrorKind.AUTH,
        None,
    ),
    (
        "deepseek",
        402,
        [],
        b'{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,'
        b'"code":"invalid_request_error"}}',
        ErrorKind.AUTH,
        None,
    ),
]


@pytest.mark.parametrize(
    ("provider", "status", "headers", "body", "kind", "retry_after"),
    CASES,
    ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)],
)
def test_real_error_bodies(
    provider: str,
    status: int,
    headers: list[tuple[str, str]],
    body: bytes,
    kind: ErrorKind | None,
    retry_after: float | None,
) -> None:
    error = classify_http_error(status, [("content-type", J), *headers], body, provider=provider)
    assert error.kind == kind, error.message
    assert error.status == status
    assert error.retry_after == retry_after
    assert error.message.startswith(f"{provider} HTTP {status}: ")
    assert error.retryable == (kind in (ErrorKind.THROTTLED, ErrorKind.NETWORK))


def test_message_is_the_providers_own_words_with_its_code() -> None:
    body = (
        b'{"error":{"message":"Incorrect API key provided: sk-abc.","type":"invalid_request_error",'
        b'"param":null,"code":"invalid_api_key"}}'
    )
    assert (
        extract_error_message(body) == "invalid_request_error: Incorrect API key provided: sk-abc."
    )
    assert extract_error_message(b"<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>"
    assert extract_error_message(b"") == "(empty body)"


# In-stream errors carry no HTTP status of their own: the words decide.
IN_STREAM = [
    # Anthropic `event: error` inside a 200 stream
    ('{"type": "overloaded_error", "message": "Overloaded"}', None, ErrorKind.NETWORK),
    # Groq `event: error` after a tool call failed validation
    (
        "Tool call validation failed: parameters for tool get_something_by_name did not match schema",
        "tool_use_failed",
        ErrorKind.PROTOCOL,
    ),
    # Bedrock exception frames
    (
        "ThrottlingException: Too many requests, please wait before trying again.",
        None,
        ErrorKind.THROTTLED,
    ),
    (
        "ValidationException: Input is too long for requested model.",
        None,
        ErrorKind.CONTEXT_OVERFLOW,
    ),
    (
        "serviceUnavailableException: Bedrock is unable to process your request.",
        None,
        ErrorKind.NETWORK,
    ),
    # OpenAI's in-stream server error
    (
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        ErrorKind.NETWORK,
    ),
    # Azure content filter
    (
        "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
        "content_filter",
        ErrorKind.CONTENT_FILTER,
    ),
]


@pytest.mark.parametrize(("message", "code", "kind"), IN_STREAM)
def test_in_stream_messages(message: str, code: str | None, kind: ErrorKind) -> None:
    assert classify_message(message, code=code).kind == kind


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": "0.5"}, 0.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),  # no clock in the core
        ({"retry-after": "-1"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "999999999"}, None),  # absurd: ignored rather than obeyed
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_ollama_runner_crash_in_stream_is_retryable_network() -> None:
    # Ollama sends {"error": "..."} as an NDJSON line when its runner dies mid-generation.
    err = classify_message("an error was encountered while running the model: unexpected EOF")
    assert err.kind is ErrorKind.NETWORK and err.retryable


def test_proxy_upstream_reset_in_stream_is_retryable_network() -> None:
    # Envoy-fronted gateways report a dropped upstream with this wording.
    err = classify_message(
        "upstream connect error or disconnect/reset before headers. reset reason: connection termination"
    )
    assert err.kind is ErrorKind.NETWORK and err.retryable


# -- every status has a documented kind; redirects; Retry-After in all its forms ----------


def _kind_of_status(status: int) -> ErrorKind:
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 429:
        return ErrorKind.THROTTLED
    if retryable_status(status):
        return ErrorKind.NETWORK
    if 300 <= status < 500:
        return ErrorKind.INVALID_REQUEST
    return ErrorKind.PROTOCOL  # 1xx/2xx where an error was expected


@given(
    status=st.integers(100, 599),
    body=st.sampled_from([b"", b"{}", b'{"error": {"message": "nope"}}', b"<html>bad</html>"]),
    location=st.text(max_size=40),
)
def test_every_status_maps_to_a_documented_kind(status: int, body: bytes, location: str) -> None:
    """Without telling words in the body, the status alone decides, and always a kind."""
    headers = [("Location", location)] if location else []
    error = classify_http_error(status, headers, body, provider="p")
    assert error.kind == _kind_of_status(status), (status, error)
    assert error.status == status
    assert error.kind.retryable == retryable_status(status)
    if 300 <= status < 400:
        assert "does not follow redirects" in error.message


def test_a_redirect_names_its_location_without_secrets() -> None:
    error = classify_http_error(
        301, [("location", "https://api.example.com/v1?key=AIzaSECRET&alt=sse")], b"", provider="x"
    )
    assert error.kind == ErrorKind.INVALID_REQUEST and error.status == 301
    assert "redirect to https://api.example.com/v1?key=***&alt=sse" in error.message
    assert "SECRET" not in error.message


DATE = "Wed, 21 Oct 2015 07:28:00 GMT"


@pytest.mark.parametrize(
    ("headers", "now", "expected"),
    [
        # the three HTTP-date formats of RFC 9110 §5.6.7, against the response's Date
        ({"date": DATE, "retry-after": "Wed, 21 Oct 2015 07:28:03 GMT"}, None, 3.0),
        ({"date": DATE, "retry-after": "Wednesday, 21-Oct-15 07:28:05 GMT"}, None, 5.0),
        ({"date": DATE, "retry-after": "Wed Oct 21 07:28:07 2015"}, None, 7.0),
        # the Date header wins over the caller's clock (a skewed local clock)
        ({"date": DATE, "retry-after": "Wed, 21 Oct 2015 07:28:03 GMT"}, "2030-01-01", 3.0),
        # without a Date header: against the caller's now
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, "2015-10-21T07:28:00", 10.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, None, None),  # no reference at all
        ({"date": DATE, "retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, None, 0.0),  # past
        ({"date": DATE, "retry-after": "Thu, 21 Oct 2027 07:28:00 GMT"}, None, None),  # absurd
        ({"date": DATE, "retry-after": "soon"}, None, None),
        ({"retry-after-ms": "1500", "retry-after": "9"}, None, 1.5),
    ],
)
def test_retry_after_dates(
    headers: dict[str, str], now: str | None, expected: float | None
) -> None:
    when = datetime.fromisoformat(now).replace(tzinfo=UTC) if now else None
    assert parse_retry_after(headers, now=when) == expected


def test_unknown_wording_without_a_useful_status_is_protocol_not_none() -> None:
    for status in (None, 100, 200, 204, 600):
        assert classify_message("something odd", status=status).kind == ErrorKind.PROTOCOL
