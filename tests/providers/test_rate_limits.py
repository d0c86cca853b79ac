"""`Start` carries the provider's request id and its rate-limit state, read by one parser
from the response headers of every wire format.

The recordings in ../shared/corpus keep bodies, not headers, so each real recording is
replayed with the headers the providers' documentation shows (OpenAI's rate-limits
guide, Anthropic's rate-limits page and a recorded Anthropic response, botocore's
request-id header), and the parser is checked on its own against hostile values.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from corpus_support import body, corpus_entries, require_corpus

from streamfn.core import Done, Error, RateLimits, Start, replay
from streamfn.core._events import decode_event_json, encode_event_json
from streamfn.core._rate_limits import (
    RateLimit,
    parse_duration,
    read_rate_limits,
    read_request_id,
)

#: OpenAI's headers, as its rate-limits guide and a recorded response show them
OPENAI_HEADERS = [
    ("x-request-id", "req_8f1c2e"),
    ("x-ratelimit-limit-requests", "5000"),
    ("x-ratelimit-limit-tokens", "160000"),
    ("x-ratelimit-remaining-requests", "4999"),
    ("x-ratelimit-remaining-tokens", "159976"),
    ("x-ratelimit-reset-requests", "12ms"),
    ("x-ratelimit-reset-tokens", "6m0s"),
]
OPENAI_LIMITS = RateLimits(
    requests=RateLimit(limit=5000, remaining=4999, reset_after=0.012),
    tokens=RateLimit(limit=160_000, remaining=159_976, reset_after=360.0),
)

#: Anthropic's headers, as a recorded response of api.anthropic.com carries them
ANTHROPIC_HEADERS = [
    ("request-id", "req_011CSLsW7mFqvHHnzrKdKjAE"),
    ("anthropic-ratelimit-input-tokens-limit", "80000"),
    ("anthropic-ratelimit-input-tokens-remaining", "80000"),
    ("anthropic-ratelimit-input-tokens-reset", "2025-08-21T12:40:59Z"),
    ("anthropic-ratelimit-output-tokens-limit", "16000"),
    ("anthropic-ratelimit-output-tokens-remaining", "16000"),
    ("anthropic-ratelimit-output-tokens-reset", "2025-08-21T12:41:00Z"),
    ("anthropic-ratelimit-requests-limit", "1000"),
    ("anthropic-ratelimit-requests-remaining", "999"),
    ("anthropic-ratelimit-requests-reset", "2025-08-21T12:40:59Z"),
    ("anthropic-ratelimit-tokens-limit", "96000"),
    ("anthropic-ratelimit-tokens-remaining", "96000"),
    ("anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:59Z"),
]
_AT = datetime(2025, 8, 21, 12, 40, 59, tzinfo=UTC)
ANTHROPIC_LIMITS = RateLimits(
    requests=RateLimit(limit=1000, remaining=999, reset_at=_AT),
    tokens=RateLimit(limit=96_000, remaining=96_000, reset_at=_AT),
    input_tokens=RateLimit(limit=80_000, remaining=80_000, reset_at=_AT),
    output_tokens=RateLimit(
        limit=16_000, remaining=16_000, reset_at=datetime(2025, 8, 21, 12, 41, tzinfo=UTC)
    ),
)

#: Bedrock sends a request id only (botocore reads ``x-amzn-requestid``)
BEDROCK_HEADERS = [("x-amzn-RequestId", "a976e3fc-0e45-4241-9954-b9bdd80ab407")]

#: per wire format: the API name, its content type, the headers, the state they give
WIRES: dict[str, tuple[str, str, list[tuple[str, str]], str, RateLimits | None]] = {
    "openai-chat": (
        "openai-chat",
        "text/event-stream",
        OPENAI_HEADERS,
        "req_8f1c2e",
        OPENAI_LIMITS,
    ),
    "openai-responses": (
        "openai-responses",
        "text/event-stream",
        OPENAI_HEADERS,
        "req_8f1c2e",
        OPENAI_LIMITS,
    ),
    "anthropic": (
        "anthropic",
        "text/event-stream",
        ANTHROPIC_HEADERS,
        "req_011CSLsW7mFqvHHnzrKdKjAE",
        ANTHROPIC_LIMITS,
    ),
    "bedrock-eventstream": (
        "bedrock",
        "application/vnd.amazon.eventstream",
        BEDROCK_HEADERS,
        "a976e3fc-0e45-4241-9954-b9bdd80ab407",
        None,
    ),
    "gemini": ("gemini", "text/event-stream", OPENAI_HEADERS, "req_8f1c2e", OPENAI_LIMITS),
    "ollama": ("ollama", "application/x-ndjson", OPENAI_HEADERS, "req_8f1c2e", OPENAI_LIMITS),
}


def _first_recordings() -> list[Any]:
    """One real recording per wire format (its own framing, not a synthetic one)."""
    chosen: dict[str, Any] = {}
    for param in corpus_entries(*WIRES):
        entry = param.values[0]
        if entry is None:
            return [param]
        if entry["file"].endswith((".sse", ".bin", ".ndjson")) and entry.get("http"):
            chosen.setdefault(entry["protocol"], param)
    assert set(chosen) == set(WIRES), sorted(chosen)
    return list(chosen.values())


@pytest.mark.parametrize("entry", _first_recordings())
def test_every_wire_format_s_start_carries_the_request_id_and_limits(
    entry: dict[str, Any] | None,
) -> None:
    entry = require_corpus(entry)
    api, ctype, headers, request_id, limits = WIRES[entry["protocol"]]
    events = replay(api, body(entry), headers=[("content-type", ctype), *headers])
    start = events[0]
    assert isinstance(start, Start)
    assert start.request_id == request_id
    assert start.rate_limits == limits
    assert isinstance(events[-1], Done | Error)
    assert decode_event_json(encode_event_json(start)) == start  # the proxy wire keeps them


def test_a_throttled_answer_says_its_request_id_and_limits_too() -> None:
    headers = [
        ("content-type", "application/json"),
        ("retry-after", "3"),
        ("x-request-id", "req_429"),
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", "2.5s"),
    ]
    error_body = b'{"error":{"message":"Rate limit reached","type":"requests"}}'
    start, error = replay("openai-chat", error_body, status=429, headers=headers)
    assert isinstance(start, Start) and start.request_id == "req_429"
    assert start.rate_limits == RateLimits(requests=RateLimit(remaining=0, reset_after=2.5))
    assert isinstance(error, Error) and error.status == 429


def test_a_response_without_those_headers_encodes_start_as_before() -> None:
    data = b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    start = replay("openai-chat", data + b"data: [DONE]\n\n", provider="openai")[0]
    assert isinstance(start, Start) and start.request_id is None and start.rate_limits is None
    encoded = json.loads(encode_event_json(start))
    assert "request_id" not in encoded and "rate_limits" not in encoded
    # an older encoder's Start (nulls included) still decodes
    old = b'{"type":"start","api":"a","provider":"p","model":"m","response_id":null}'
    assert decode_event_json(old) == Start(api="a", provider="p", model="m")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6m0s", 360.0),
        ("1s", 1.0),
        ("20ms", 0.02),
        ("2m59.56s", 179.56),
        ("1h2m3s", 3723.0),
        ("7.66s", 7.66),
        ("60", 60.0),  # a bare number of seconds (Azure)
        ("0", 0.0),
        ("", None),
        ("soon", None),
        ("6m0", None),  # a number without its unit
        ("s", None),
        ("-5s", None),
        ("1" * 100 + "s", None),  # longer than any duration
        ("nan", None),
        ("inf", None),
    ],
)
def test_durations_parse_as_providers_write_them(text: str, seconds: float | None) -> None:
    got = parse_duration(text)
    assert got == (pytest.approx(seconds) if seconds is not None else None)


def test_hostile_values_are_left_out_never_guessed() -> None:
    headers = [
        ("x-request-id", "req\r\nset-cookie: a=b"),  # would split a forwarded header
        ("request-id", "x" * 201),  # no id is that long
        ("x-amzn-requestid", "ok-id"),
        ("x-ratelimit-limit-requests", "9" * 40),  # no limit is that large
        ("x-ratelimit-remaining-requests", "-1"),  # Azure's "unknown"
        ("x-ratelimit-reset-requests", "tomorrow"),
        ("anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:59"),  # no zone: not RFC 3339
        ("anthropic-ratelimit-tokens-remaining", " 12 "),
    ]
    assert read_request_id(headers) == "ok-id"
    assert read_rate_limits(headers) == RateLimits(tokens=RateLimit(remaining=12))
    assert read_request_id([]) is None and read_rate_limits([]) is None


def test_a_reset_becomes_seconds_on_the_caller_s_clock() -> None:
    now = datetime(2025, 8, 21, 12, 40, 49, tzinfo=UTC)
    assert RateLimit(reset_at=_AT).reset_in(now) == 10.0
    assert RateLimit(reset_at=_AT).reset_in(datetime(2030, 1, 1, tzinfo=UTC)) == 0.0
    assert RateLimit(reset_after=0.5).reset_in(now) == 0.5
    assert RateLimit(limit=3).reset_in(now) is None
