"""Partial structured output through ``streamfn serve``: a streamfn client of the native
``/v1/stream`` route sends its schema with the request (a generation field the server
accepts from clients) and grows the object from the events it gets back, on every
shell; the upstream is asked once, with the schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server
from shell_runner import FAST, SHELLS, run

from streamfn.asgi import ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.client._partial_output import partial_outputs
from streamfn.core import Context, Model, Options
from streamfn.core.stages._partial_output import PartialOutput
from streamfn.fuzz._fake_bodies import openai_body
from streamfn.io_asyncio._backends import ProviderBackend
from streamfn.io_asyncio._server import App


class City(msgspec.Struct):
    name: str
    sights: list[str]


ANSWER = {"name": "Rome", "sights": ["Colosseum", "Pantheon", "Trevi"]}
TEXT = json.dumps(ANSWER)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.register_body("city", openai_body([TEXT[i : i + 4] for i in range(0, len(TEXT), 4)]))
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream: FakeProvider) -> Iterator[Server]:
    model = Model(
        id="gpt-4o",
        provider="openai",
        api="openai-chat",
        base_url=upstream.base_url("ok", "city", "po-gateway"),
    )
    backend = ProviderBackend(environ={"OPENAI_API_KEY": "upstream-key"}, models=[model])
    with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
        yield server


async def grow(client: Any, model: Model, options: Options) -> list[PartialOutput]:
    async with client.stream(model, Context.of("Rome?"), options) as events:
        return [p async for p in partial_outputs(events, options.response_schema)]


@pytest.mark.parametrize("client_shell", SHELLS)
def test_a_proxy_client_grows_the_object(
    gateway: Server, upstream: FakeProvider, client_shell: str
) -> None:
    before = len(upstream.requests)
    proxy = Model(id="openai:gpt-4o", provider="proxy", api="proxy", base_url=gateway.url)
    options = msgspec.structs.replace(FAST, api_key=KEY, response_schema=City)
    outs = run(client_shell, grow, proxy, options)
    assert outs[-1] == PartialOutput(msgspec.convert(ANSWER, City), final=True)
    growing = [o.value for o in outs[:-1]]
    assert len(growing) > 5 and all(isinstance(v, City) for v in growing)
    assert any(v.sights is None for v in growing) and growing[-1].sights == ANSWER["sights"]
    sent = [json.loads(r.body) for r in upstream.requests[before:] if "po-gateway" in r.path]
    assert len(sent) == 1
    assert sent[0]["response_format"]["json_schema"]["schema"]["required"] == ["name", "sights"]
