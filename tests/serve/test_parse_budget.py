"""Parsing a request costs time linear in its size and at most `MAX_JSON_VALUES` values.

A body of millions of ``[]`` in a field the server ignores used to cost seconds of
CPU (mostly in a Python walk checking the nesting depth) while a plain string of the
same size cost a fraction of a second. The values are now counted on the raw bytes
before anything is decoded, and a body over the cap is a 413 in the dialect's error
shape on every route.
"""

from __future__ import annotations

import gc
import json
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from loopback_server import KEY, STREAMS, Server

from streamfn.asgi import App, ServerConfig
from streamfn.core.dialects import _request_fields as request_fields
from streamfn.core.dialects._request_fields import (
    MAX_DEPTH,
    MAX_JSON_VALUES,
    BadRequest,
    TooLarge,
    count_json_values,
    decode_body,
)
from streamfn.core.json import _json_shape as json_shape
from streamfn.core.serve._routes import parse_request
from streamfn.core.serve._status import HTTPError
from streamfn.fuzz._events_backend import EventsBackend
from streamfn.fuzz._json_properties import json_values


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


#: text made of what the count must see through: quotes, escapes, brackets, separators
TRICKY_TEXT = st.text(alphabet=st.sampled_from('[]{},:"\\ a\u00e9\U0001f30d\n\t/'), max_size=12)
#: documents: the fuzz kit's JSON values, and beside them strings and keys made of the
#: tricky characters, in lists and objects
TRICKY = st.lists(TRICKY_TEXT, max_size=4) | st.dictionaries(TRICKY_TEXT, json_values, max_size=4)
JSON_VALUES = st.tuples(json_values, TRICKY).map(list)


#: what JSON allows between tokens
WHITESPACE = ["", "", " ", "  ", "\t", "\n", "\r\n", "\n  \t"]


def _dumps(value: Any, space: Callable[[], str], ascii: bool) -> str:
    """``value`` as JSON with ``space()`` wherever JSON allows whitespace (inside empty
    containers too): shapes ``json.dumps`` never writes, but a client may."""
    if isinstance(value, dict):
        inner = ",".join(
            f"{space()}{json.dumps(k, ensure_ascii=ascii)}{space()}:{space()}"
            f"{_dumps(v, space, ascii)}{space()}"
            for k, v in value.items()
        )
        return "{" + (inner or space()) + "}"
    if isinstance(value, list):
        inner = ",".join(f"{space()}{_dumps(v, space, ascii)}{space()}" for v in value)
        return "[" + (inner or space()) + "]"
    return json.dumps(value, ensure_ascii=ascii)


@example(document=DOCUMENTS[0], rnd=random.Random(0), ascii=False)
@example(document=DOCUMENTS[3], rnd=random.Random(1), ascii=False)
@example(document=DOCUMENTS[4], rnd=random.Random(2), ascii=True)
@example(document=DOCUMENTS[5], rnd=random.Random(3), ascii=False)
@given(document=JSON_VALUES, rnd=st.randoms(use_true_random=False), ascii=st.booleans())
def test_the_count_on_raw_bytes_equals_a_walk_of_the_decoded_value(
    document: Any, rnd: random.Random, ascii: bool
) -> None:
    body = _dumps({"x": document}, lambda: rnd.choice(WHITESPACE), ascii).encode()
    assert count_json_values(body) == _oracle_count(json.loads(body))


@example(body=b'"' * 3)
@example(body=b'\\"' * 8 + b'"a')
@example(body=b'{"a": "b\\"c", "d": "')
@given(body=st.binary(max_size=64) | TRICKY_TEXT.map(str.encode))
def test_counting_costs_one_pass_whatever_the_quotes_and_escapes(body: bytes) -> None:
    """The string pattern matches at every quote, up to a closing quote or to the end
    without one, so a scan resumes where the last match ended and reads no byte twice:
    an opening quote without its closing one cannot send it back to rescan (quadratic)
    from each later quote. Checked on the bytes, match by match, not timed."""
    for start in (i for i, byte in enumerate(body) if byte == ord('"')):
        match = json_shape._STRING.match(body, start)
        assert match is not None and match.end() > start, (body, start)
        assert b'"' not in body[start + 1 : match.end() - 1]  # it stops at the first close
    assert b'"' not in json_shape._STRING.sub(b"0", body)  # every quote consumed


def _empty_lists(n: int) -> bytes:
    """A chat request whose ignored ``metadata`` holds ``n`` empty lists."""
    filler = b",".join([b"[]"] * n)
    return b'{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":[' + filler + b"]}"


def _python_calls(run: Callable[[], object]) -> int:
    """How many Python functions ``run`` calls, and calls into C: a count, the same on
    every machine and under any load, unlike a time. The garbage collector is off while
    counting: a collection would run other tests' finalizers inside ``run``."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    gc.collect()
    gc.disable()
    sys.setprofile(count)
    try:
        run()
    finally:
        sys.setprofile(None)
        gc.enable()
    return calls


def test_parsing_takes_no_python_step_per_value() -> None:
    """Every value is counted and decoded in C (a regular expression, msgspec), so the
    Python calls of a parse do not grow with the values: 8x the values, the same calls
    (a few more at most). A Python walk over the values (what once cost seconds of CPU
    for millions of ``[]``) makes at least one call per value, here 437,500 more."""
    path = "/v1/chat/completions"
    small, large = _empty_lists(MAX_JSON_VALUES // 16), _empty_lists(MAX_JSON_VALUES // 2)
    parse_request(path, small)  # first use: imports and caches, not the parse
    few = _python_calls(lambda: parse_request(path, small))
    many = _python_calls(lambda: parse_request(path, large))
    assert many <= few + 16, (few, many)


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
