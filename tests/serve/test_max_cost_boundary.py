"""``Options.max_cost`` at the gateway's trust boundary: a client cannot set a spending
cap through a request body (it is the server's decision, like retries and keys), and
a cap the server sets on a parsed request reaches the upstream call, for a served
model too, whose defaults would otherwise replace every option but a client's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from fake_provider import FakeProvider

from streamfn.asgi import ServedModel
from streamfn.core import Context, Error, ErrorKind, Event, Model, Options
from streamfn.core.serve._inbound import (
    BadRequest,
    parse_anthropic_request,
    parse_native_request,
    parse_openai_request,
)
from streamfn.fuzz._fake_bodies import openai_body
from streamfn.io_asyncio import Client
from streamfn.io_asyncio._backends import ProviderBackend

USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("parse", "body"),
    [
        (
            parse_native_request,
            {"model": "m", "context": {"messages": []}, "options": {"max_cost": 1e9}},
        ),
        (parse_openai_request, {"model": "m", "messages": USER, "max_cost": 1e9}),
        (
            parse_anthropic_request,
            {"model": "m", "max_tokens": 5, "messages": USER, "max_cost": 1e9},
        ),
    ],
)
def test_a_client_cannot_set_a_spending_cap(parse: object, body: dict[str, object]) -> None:
    with pytest.raises(BadRequest, match="max_cost: not accepted by this server"):
        parse(json.dumps(body).encode())  # type: ignore[operator]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def _stream(backend: ProviderBackend, name: str, options: Options) -> list[Event]:
    async def main() -> list[Event]:
        try:
            async with backend.stream(name, Context.of("hi"), options) as events:
                return [event async for event in events]
        finally:
            await backend.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("server_cap", "served_cap", "requests"),
    [(4.5, None, 0), (None, 4.5, 0), (4.5, 100.0, 0), (100.0, 4.5, 0), (100.0, None, 1)],
)
def test_the_server_sets_the_cap_on_a_served_model(
    fake: FakeProvider, server_cap: float | None, served_cap: float | None, requests: int
) -> None:
    """The lower of the server's cap for this request and the served model's own
    applies ("hi" is $5 of input at $1 a token: under $4.5 nothing is sent)."""
    url = fake.serve(openai_body(["abcd"]))
    upstream = Model(id="m", provider="openai", api="openai-chat", base_url=url, price_input=1e6)
    served = ServedModel(
        name="team", model=upstream, defaults=Options(temperature=0.5, max_cost=served_cap)
    )
    backend = ProviderBackend(
        Client(), environ={"OPENAI_API_KEY": "k"}, served=[served], registry=False
    )
    events = _stream(backend, "team", Options(max_cost=server_cap))
    sent = sum(r.path.startswith("/ok/" + url.rsplit("/", 1)[1]) for r in fake.requests)
    assert sent == requests
    last = events[-1]
    if requests == 0:
        assert isinstance(last, Error) and last.kind is ErrorKind.BUDGET, last
    else:
        assert not isinstance(last, Error), last
