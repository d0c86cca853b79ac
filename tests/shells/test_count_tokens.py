"""Token counting through every shell, against the loopback fake provider: the request
that reaches the provider, the count it answers, and the failures a count shares with
any call (a refused key, a 5xx retried, a hostile answer) or has of its own (a provider
without an endpoint)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_provider import FakeProvider
from shell_runner import FAST, KEY, SHELLS, run

from streamfn.core import (
    Context,
    ErrorKind,
    Model,
    Options,
    StreamError,
    TokenCount,
    TokenCountUnsupported,
    get_model,
)

CONTEXT = Context.of("Why is the sky blue?", system_prompt="Be brief.")


@pytest.fixture(scope="module")
def fake() -> Any:
    with FakeProvider() as server:
        yield server


def _claude(base_url: str) -> Model:
    return Model(id="claude-sonnet-4-6", provider="anthropic", api="anthropic", base_url=base_url)


def _count(shell: str, model: Model, options: Options = FAST, **kwargs: Any) -> TokenCount:
    async def count(client: Any) -> TokenCount:
        result: TokenCount = await client.count_tokens(model, CONTEXT, options, **kwargs)
        return result

    result: TokenCount = run(shell, count)
    return result


@pytest.mark.parametrize("shell", SHELLS)
def test_a_count_is_asked_of_the_provider_and_read(shell: str, fake: FakeProvider) -> None:
    base = fake.serve(b'{"input_tokens": 42}', "application/json")
    before = len(fake.requests)
    counted = _count(shell, _claude(base))
    assert counted == TokenCount(
        input_tokens=42,
        model="claude-sonnet-4-6",
        provider="anthropic",
        source="Anthropic's count_tokens endpoint",
    )
    [request] = fake.requests[before:]  # exactly one request: the bill
    assert request.path.endswith("/v1/messages/count_tokens")
    assert dict(request.headers)["x-api-key"] == KEY
    assert json.loads(request.body) == {
        "model": "claude-sonnet-4-6",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Why is the sky blue?"}],
    }


@pytest.mark.parametrize("shell", SHELLS)
def test_a_refused_key_raises_the_error_a_stream_would_end_in(
    shell: str, fake: FakeProvider
) -> None:
    base = fake.serve(b'{"input_tokens": 42}', "application/json", fault="401")
    with pytest.raises(StreamError) as raised:
        _count(shell, _claude(base))
    assert raised.value.error.kind == ErrorKind.AUTH


@pytest.mark.parametrize("shell", SHELLS)
def test_a_server_error_is_retried_like_any_call(shell: str, fake: FakeProvider) -> None:
    base = fake.serve(b'{"input_tokens": 7}', "application/json", fault="500-then-ok")
    token = base.rsplit("/", 1)[1]
    assert _count(shell, _claude(base)).input_tokens == 7
    assert fake.hits(token) == 2


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (b'{"input_tokens": -1}', ErrorKind.PROTOCOL),
        (b'{"input_tokens": 1000000000000000000000000000000}', ErrorKind.PROTOCOL),
        (b'{"input_tokens": "12"}', ErrorKind.PROTOCOL),
        (b'{"tokens": 12}', ErrorKind.PROTOCOL),
        (b"not json", ErrorKind.PROTOCOL),
        (b'{"input_tokens": 1, "pad": "' + b"x" * 70_000 + b'"}', ErrorKind.LIMIT),
    ],
)
def test_a_hostile_answer_is_an_error_not_a_count(
    answer: bytes, kind: ErrorKind, fake: FakeProvider
) -> None:
    base = fake.serve(answer, "application/json")
    with pytest.raises(StreamError) as raised:
        _count("sync", _claude(base))
    assert raised.value.error.kind == kind


@pytest.mark.parametrize("shell", SHELLS)
def test_without_a_key_it_says_which_variable_before_connecting(shell: str) -> None:
    """The rule every shell keeps: a missing key fails like a refused one (kind auth)."""
    model = _claude("http://127.0.0.1:9")
    with pytest.raises(StreamError, match="ANTHROPIC_API_KEY") as raised:
        _count(shell, model, Options())
    assert raised.value.error.kind == ErrorKind.AUTH


@pytest.mark.parametrize("shell", SHELLS)
def test_a_provider_without_an_endpoint_is_refused_or_estimated(shell: str) -> None:
    model = get_model("groq:llama-3.3-70b-versatile")
    with pytest.raises(TokenCountUnsupported, match="estimate=True"):
        _count(shell, model)
    estimate = _count(shell, model, estimate=True)
    assert estimate.estimated and estimate.source.startswith("estimate")
    # "Be brief." + the question: 29 characters, about 4 a token, plus one message
    assert estimate.input_tokens == 8 + 4


def test_the_module_level_functions_count_too(fake: FakeProvider) -> None:
    import asyncio

    import trio

    from streamfn import io_asyncio, io_sync, io_trio

    base = fake.serve(b'{"input_tokens": 5}', "application/json")
    model = _claude(base)
    assert io_sync.count_tokens(model, CONTEXT, FAST).input_tokens == 5
    assert asyncio.run(io_asyncio.count_tokens(model, CONTEXT, FAST)).input_tokens == 5
    assert trio.run(io_trio.count_tokens, model, CONTEXT, FAST).input_tokens == 5


#: one model per counting endpoint, pointed at the fake's built-in wire formats
ENDPOINTS = [
    (
        "anthropic",
        Model(id="claude-sonnet-4-6", provider="anthropic", api="anthropic", base_url=""),
    ),
    ("openai-chat", Model(id="gpt-4o", provider="openai", api="openai-chat", base_url="")),
    ("openai-responses", Model(id="gpt-5", provider="openai", api="openai-responses", base_url="")),
    ("gemini", Model(id="gemini-2.5-flash", provider="google", api="gemini", base_url="")),
    ("bedrock", Model(id="amazon.nova-pro-v1:0", provider="bedrock", api="bedrock", base_url="")),
]


@pytest.mark.parametrize(("wire", "model"), ENDPOINTS, ids=[w for w, _ in ENDPOINTS])
@pytest.mark.parametrize("shell", SHELLS)
def test_every_endpoint_end_to_end(shell: str, wire: str, model: Model, fake: FakeProvider) -> None:
    """The fake answers each endpoint in its own shape (a quarter of the body's bytes):
    the count read is the count it sent, for the request it received."""
    import msgspec

    pointed = msgspec.structs.replace(model, base_url=fake.base_url("ok", wire, f"{shell}-{wire}"))
    before = len(fake.requests)
    counted = _count(shell, pointed)
    [request] = fake.requests[before:]
    assert counted.input_tokens == len(request.body) // 4 > 0
    assert counted.source.endswith(("endpoint", "operation"))


@pytest.mark.parametrize("shell", SHELLS)
def test_a_count_goes_over_http_whatever_the_streams_transport(
    shell: str, fake: FakeProvider
) -> None:
    """``transport="websocket"`` is how a Responses *turn* travels; the counting endpoint
    (``/v1/responses/input_tokens``) has no socket, so the same options count over HTTP."""
    import msgspec

    model = msgspec.structs.replace(
        ENDPOINTS[2][1], base_url=fake.base_url("ok", "openai-responses", f"{shell}-ws-count")
    )
    before = len(fake.requests)
    counted = _count(shell, model, msgspec.structs.replace(FAST, transport="websocket"))
    [request] = fake.requests[before:]
    assert request.path.endswith("/responses/input_tokens")
    assert counted.input_tokens == len(request.body) // 4 > 0
