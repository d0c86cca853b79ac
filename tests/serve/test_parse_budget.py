"""Parsing a request costs time linear in its size and at most `MAX_JSON_VALUES` values.

A body of millions of ``[]`` in a field the server ignores used to cost seconds of
CPU (mostly in a Python walk checking the nesting depth) while a plain string of the
same size cost a fraction of a second. The values are now counted on the raw bytes
before anything is decoded, and a body over the cap is a 413 in the dialect's error
shape on every route.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from loopback_server import KEY, STREAMS, Server
from scaling import assert_linear

from streamfn.asgi import App, ServerConfig
from streamfn.core.serve import _request_fields as request_fields
from streamfn.core.serve._request_fields import (
    MAX_DEPTH,
    MAX_JSON_VALUES,
    BadRequest,
    TooLarge,
    count_json_values,
    decode_body,
)
from streamfn.core.serve._routes import parse_request
from streamfn.core.serve._status import HTTPError
from streamfn.fuzz._events_backend import EventsBackend


def _oracle_count(value: Any) -> int:
    """Values counted by walking what the standard library decoded."""
    if isinstance(value, dict):
        return 1 + sum(_oracle_count(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_oracle_count(v) for v in value)
    return 1


DOCUMENTS: list[Any] = [
    {},
    [],
    "a string with , [ { } ] : inside",
    {"a": [1, 2, {"b": [], "c": {}, "d": 'x,y[{"'}], "e": [[]], "f": {"g": [1.5e3, None]}},
    [[[[]]], {"k": '\\"[,]\\'}, True, False, None, -0.0, "\u00e9\U0001f30d"],
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}] * 3}]},
    # long enough that the count goes a stretch of strings at a time: none is split
    ["a,[{", 'q"\\', {"k,": [1, "]"]}] * 5000,
]


@pytest.mark.parametrize("document", DOCUMENTS)
@pytest.mark.parametrize("indent", [None, 2])
def test_the_count_on_raw_bytes_equals_a_walk_of_the_decoded_value(
    document: Any, indent: int | None
) -> None:
    body = json.dumps({"x": document}, indent=indent, ensure_ascii=False).encode()
    assert count_json_values(body) == _oracle_count(json.loads(body))


@pytest.mark.parametrize("unit", [b'\\"', b'"\\', b'"a",', b"[],", b'"\\\\",'])
def test_counting_costs_one_pass_whatever_the_quotes_and_escapes(unit: bytes) -> None:
    # an opening quote without its closing one must not rescan to the end. 16 KiB and
    # 128 KiB bodies: a quadratic rescan shows at once (64x), and both stay in a CPU's
    # caches; a pair that straddles a cache size (256 KiB against 2 MiB measured 13-16x
    # here while 2 against 8 MiB measured 3.9x) times the memory hierarchy, not the count
    assert_linear(lambda n: lambda: count_json_values(unit * (n // len(unit))), 1 << 14)


def _empty_lists(n: int) -> bytes:
    """A chat request whose ignored ``metadata`` holds ``n`` empty lists."""
    filler = b",".join([b"[]"] * n)
    return b'{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":[' + filler + b"]}"


def test_parsing_time_grows_linearly_with_the_number_of_values() -> None:
    size = MAX_JSON_VALUES // 16  # 8x that is still under the cap: fully parsed
    assert_linear(
        lambda n: (lambda body: lambda: parse_request("/v1/chat/completions", body))(
            _empty_lists(n)
        ),
        size,
    )


def test_a_body_over_the_cap_is_refused_before_it_is_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("decoded a body over the value cap")

    monkeypatch.setattr(request_fields.msgspec.json, "decode", never)
    with pytest.raises(TooLarge, match=str(MAX_JSON_VALUES)):
        decode_body(_empty_lists(4 * MAX_JSON_VALUES))


def test_nesting_is_still_measured_exactly() -> None:
    def nested(levels: int) -> bytes:  # the root object is level 1
        return b'{"a":' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"

    assert decode_body(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    with pytest.raises(BadRequest, match=f"deeper than {MAX_DEPTH}"):
        decode_body(nested(MAX_DEPTH + 1))
    mixed = b'{"a":' + b'[{"b":' * 40 + b"1" + b"}]" * 40 + b"}"  # 81 levels
    with pytest.raises(BadRequest, match="deeper"):
        decode_body(mixed)


# -- through the server, each dialect -----------------------------------------------


def _body(path: str, filler: list[Any]) -> dict[str, Any]:
    """A valid request for ``path`` carrying ``filler`` where the route accepts any JSON."""
    if path == "/v1/chat/completions":
        return {
            "model": "demo-text",
            "messages": [{"role": "user", "content": "hi"}],
            "metadata": filler,
        }
    if path == "/v1/messages":
        return {
            "model": "demo-text",
            "max_tokens": 20,
            "messages": [{"role": "user", "content": "hi"}],
            "metadata": filler,
        }
    tool = {
        "name": "t",
        "description": "d",
        "parameters": {"type": "object", "properties": {}, "examples": filler},
    }
    return {
        "model": "demo-text",
        "context": {"messages": [{"type": "user", "content": "hi"}], "tools": [tool]},
    }


def _at_the_cap(path: str, extra: int) -> bytes:
    """A body of exactly ``MAX_JSON_VALUES + extra`` values (counted by the oracle)."""
    base = _oracle_count(_body(path, []))
    body = _body(path, [0] * (MAX_JSON_VALUES - base + extra))
    assert _oracle_count(body) == MAX_JSON_VALUES + extra
    return msgspec.json.encode(body)


@pytest.fixture(scope="module")
def server(shell: str) -> Iterator[Server]:
    app = App(EventsBackend(STREAMS), ServerConfig(api_key=KEY))
    with Server(app) as running:
        yield running


@pytest.mark.parametrize(
    ("path", "error_type"),
    [
        ("/v1/chat/completions", "invalid_request_error"),
        ("/v1/messages", "request_too_large"),
        ("/v1/stream", "invalid_request_error"),
        ("/v1/agent/stream", "invalid_request_error"),
    ],
)
def test_each_route_serves_a_body_at_the_cap_and_refuses_one_value_more(
    server: Server, path: str, error_type: str
) -> None:
    import httpx

    def post(body: bytes) -> httpx.Response:
        return httpx.post(
            server.url + path,
            content=body,
            headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"},
            timeout=60,
        )

    assert post(_at_the_cap(path, 0)).status_code == 200
    refused = post(_at_the_cap(path, 1))
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert str(MAX_JSON_VALUES) in error["message"]
    assert error["type"] == error_type


def test_the_codec_maps_the_cap_to_a_413() -> None:
    with pytest.raises(HTTPError) as caught:
        parse_request("/v1/messages", _empty_lists(MAX_JSON_VALUES + 1))
    assert caught.value.status == 413
