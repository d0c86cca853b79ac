"""Fallbacks across models, proved by the bill: which upstream saw how many requests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import trio
from fake_provider import FakeProvider

from streamfn.core import (
    Context,
    Done,
    Error,
    ErrorKind,
    Model,
    Options,
    Start,
    UsageError,
    fallback,
    open_call,
    replay,
)
from streamfn.io_asyncio import Client as AsyncioClient
from streamfn.io_sync import Client as SyncClient
from streamfn.io_trio import Client as TrioClient

#: no shared key: each model's key comes from its own variable
OPTIONS = Options(
    connect_timeout=2.0,
    first_byte_timeout=0.3,
    idle_timeout=0.3,
    max_attempts=1,
    retry_base_delay=0.01,
    retry_max_delay=0.05,
)
ENVIRON = {"OPENAI_API_KEY": "k-openai", "GROQ_API_KEY": "k-groq"}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProvider]:
    with FakeProvider(stall=1.0) as fake:
        yield fake


def model(server: FakeProvider, fault: str, token: str, provider: str = "openai") -> Model:
    return Model(
        id=f"m-{fault}",
        provider=provider,
        api="openai-chat",
        base_url=server.base_url(fault, "openai-chat", token),
    )


def run(shell: str, chain: Model, environ: dict[str, str] | None = None) -> list[Any]:
    environ_ = ENVIRON if environ is None else environ
    if shell == "sync":
        with (
            SyncClient(environ=environ_) as client,
            client.stream(chain, Context.of("hi"), OPTIONS) as events,
        ):
            return list(events)

    async def main(client_cls: Any) -> list[Any]:
        async with (
            client_cls(environ=environ_) as client,
            client.stream(chain, Context.of("hi"), OPTIONS) as events,
        ):
            return [event async for event in events]

    if shell == "trio":
        return trio.run(main, TrioClient)
    return asyncio.run(main(AsyncioClient))


SHELLS = ["trio", "asyncio", "sync"]


@pytest.mark.parametrize("shell", SHELLS)
def test_a_throttled_model_gives_way_to_the_next_one_before_output(
    server: FakeProvider, shell: str
) -> None:
    token = f"fb-429-{shell}"
    chain = fallback(
        [model(server, "429", token + "-a"), model(server, "ok", token + "-b", "groq")]
    )
    events = run(shell, chain)
    ok = replay("openai-chat", server.body_for("openai-chat"), provider="groq")
    assert [e for e in events if not isinstance(e, Start)] == [
        e for e in ok if not isinstance(e, Start)
    ]
    start = events[0]
    assert isinstance(start, Start) and start.provider == "groq"  # who answered
    assert isinstance(events[-1], Done)
    # the bill: one request each
    assert (server.hits(token + "-a"), server.hits(token + "-b")) == (1, 1)
    # and each got its own key, never the other's
    keys = {
        r.path.split("/")[3]: r.headers.get("authorization")
        for r in server.requests
        if r.path.split("/")[3].startswith(token)
    }
    assert keys == {token + "-a": "Bearer k-openai", token + "-b": "Bearer k-groq"}


@pytest.mark.parametrize("shell", SHELLS)
def test_an_error_after_output_is_never_retried_elsewhere(server: FakeProvider, shell: str) -> None:
    token = f"fb-mid-{shell}"
    chain = fallback([model(server, "stall-mid", token + "-a"), model(server, "ok", token + "-b")])
    events = run(shell, chain)
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.NETWORK
    assert any(not isinstance(e, (Start, Error)) for e in events)  # output came first
    assert (server.hits(token + "-a"), server.hits(token + "-b")) == (1, 0)


@pytest.mark.parametrize("shell", SHELLS)
def test_auth_errors_fall_back_only_when_listed(server: FakeProvider, shell: str) -> None:
    token = f"fb-401-{shell}"
    models = [model(server, "401", token + "-a"), model(server, "ok", token + "-b")]
    events = run(shell, fallback(models))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.AUTH
    assert server.hits(token + "-b") == 0
    events = run(shell, fallback(models, on=["auth"]))
    assert isinstance(events[-1], Done)
    assert (server.hits(token + "-a"), server.hits(token + "-b")) == (2, 1)


@pytest.mark.parametrize("shell", SHELLS)
def test_the_last_models_error_is_the_answer_when_all_fail(
    server: FakeProvider, shell: str
) -> None:
    token = f"fb-all-{shell}"
    chain = fallback([model(server, "429", token + "-a"), model(server, "503", token + "-b")])
    events = run(shell, chain)
    assert isinstance(events[-1], Error) and events[-1].status == 503
    assert (server.hits(token + "-a"), server.hits(token + "-b")) == (1, 1)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_model_without_credentials_is_skipped(server: FakeProvider, shell: str) -> None:
    token = f"fb-nokey-{shell}"
    keyless = model(server, "ok", token + "-a", "mistral")  # no MISTRAL_API_KEY in ENVIRON
    chain = fallback([keyless, model(server, "ok", token + "-b")])
    events = run(shell, chain)
    assert isinstance(events[-1], Done)
    assert (server.hits(token + "-a"), server.hits(token + "-b")) == (0, 1)


def test_a_chain_without_any_key_or_with_a_shared_key_is_refused_before_connecting(
    server: FakeProvider,
) -> None:
    token = "fb-refused"
    chain = fallback([model(server, "ok", token, "mistral")])
    refused = run("asyncio", chain, environ={})  # the missing key's Error, like a 401's
    assert [type(e) for e in refused] == [Start, Error]
    assert refused[-1].kind is ErrorKind.AUTH and "MISTRAL_API_KEY" in refused[-1].message

    async def shared_key() -> None:
        async with AsyncioClient(environ=ENVIRON) as client:
            options = msgspec.structs.replace(OPTIONS, api_key="sk-shared")
            async with client.stream(chain, Context.of("hi"), options):
                pass

    with pytest.raises(ValueError, match=r"cannot share Options\.api_key"):
        asyncio.run(shared_key())
    assert server.hits(token) == 0


def test_a_chain_is_a_model_but_has_no_wire_format_of_its_own(server: FakeProvider) -> None:
    a, b = model(server, "ok", "x"), model(server, "ok", "y", "groq")
    chain = fallback([a, fallback([b])])  # nested chains flatten
    assert isinstance(chain, Model) and chain.models == (a, b)
    assert chain.id == "openai:m-ok | groq:m-ok"
    with pytest.raises(ValueError, match=r"open_call one of its \.models"):
        open_call(chain, Context.of("hi"), Options(api_key="k"))
    with pytest.raises(ValueError, match="at least one model"):
        fallback([])


@pytest.mark.parametrize("shell", SHELLS)
def test_a_failure_is_not_hidden_by_a_later_model_without_a_key(
    server: FakeProvider, shell: str
) -> None:
    token = f"fb-masked-{shell}"
    keyless = model(server, "ok", token + "-b", "mistral")  # no MISTRAL_API_KEY in ENVIRON
    events = run(shell, fallback([model(server, "429", token + "-a"), keyless]))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.THROTTLED
    assert (server.hits(token + "-a"), server.hits(token + "-b")) == (1, 0)


@pytest.mark.parametrize("shared", ["base_url", "headers"])
def test_a_chain_refuses_a_shared_address_or_headers(server: FakeProvider, shared: str) -> None:
    """One base_url for a chain would send every model's key to that one host."""
    chain = fallback(
        [model(server, "ok", "fb-shared-a"), model(server, "ok", "fb-shared-b", "groq")]
    )
    value: Any = "http://127.0.0.1:9/v1" if shared == "base_url" else {"X-Gateway": "1"}

    async def main() -> None:
        async with AsyncioClient(environ=ENVIRON) as client:
            options = msgspec.structs.replace(OPTIONS, **{shared: value})
            async with client.stream(chain, Context.of("hi"), options):
                pass

    with pytest.raises(ValueError, match=f"cannot share Options.{shared}"):
        asyncio.run(main())
    assert server.hits("fb-shared-a") + server.hits("fb-shared-b") == 0


def test_a_chain_whose_model_cannot_take_the_transport_is_refused_before_connecting(
    server: FakeProvider,
) -> None:
    """``transport="websocket"`` suits OpenAI Responses models only: a chain holding
    another model is refused at once, not after its first model failed and was billed."""
    token = "fb-transport"
    responses = msgspec.structs.replace(
        model(server, "429", token + "-a"),
        api="openai-responses",
        base_url=server.base_url("429", "openai-responses", token + "-a"),
    )
    chain = fallback([responses, model(server, "ok", token + "-b", "groq")])

    async def over_a_socket() -> None:
        async with AsyncioClient(environ=ENVIRON) as client:
            options = msgspec.structs.replace(OPTIONS, transport="websocket")
            async with client.stream(chain, Context.of("hi"), options) as events:
                async for _ in events:
                    pass

    with pytest.raises(UsageError, match=r'transport="websocket" is for api="openai-responses"'):
        asyncio.run(over_a_socket())
    assert (server.hits(token + "-a"), server.hits(token + "-b")) == (0, 0)
