"""The shells' Responses-over-WebSocket client end to end against ``streamfn serve``'s
own WebSocket route (a fake Anthropic upstream behind it): the events are those of the
same turn over HTTP, and the gateway's key check refuses the upgrade with ``auth``."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import pytest
from fake_provider import FakeProvider
from loopback_server import KEY, Server, provider_backend
from shell_runner import FAST, SHELLS, collect, run

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import Done, Error, ErrorKind, Event, Model, Start, TextDelta

TEXT = "Bonjour le monde — 東京!"
#: the shells' fast options with the gateway's key
HTTP = msgspec.structs.replace(FAST, api_key=KEY)
SOCKET = msgspec.structs.replace(HTTP, transport="websocket")


@pytest.fixture(scope="module")
def gateway(shell: str) -> Iterator[Server]:
    with FakeProvider() as upstream:
        url = upstream.base_url("ok", "anthropic", "ws-client")
        claude = Model(id="claude-sonnet-4-6", provider="anthropic", api="anthropic", base_url=url)
        backend = provider_backend({"ANTHROPIC_API_KEY": "upstream"}, models=[claude])
        backend.models["claude"] = claude
        with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY)), shell) as server:
            yield server


@pytest.fixture(params=SHELLS)
def client_shell(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _model(server: Server) -> Model:
    return Model(
        id="claude", provider="openai", api="openai-responses", base_url=server.url + "/v1"
    )


def _comparable(events: list[Event]) -> list[Event]:
    """The events without what differs from one request to the next (the ids `Start`
    carries): who answered stays."""
    return [
        Start(api=e.api, provider=e.provider, model=e.model, response_model=e.response_model)
        if isinstance(e, Start)
        else e
        for e in events
    ]


def test_a_turn_over_the_gateways_websocket_gives_the_events_of_http(
    gateway: Server, client_shell: str
) -> None:
    model = _model(gateway)
    socket = run(client_shell, collect, model, SOCKET)
    http = run(client_shell, collect, model, HTTP)
    assert isinstance(socket[-1], Done), socket[-1]
    assert "".join(e.delta for e in socket if isinstance(e, TextDelta)) == TEXT
    assert _comparable(socket) == _comparable(http)


def test_a_wrong_key_is_refused_at_the_upgrade(gateway: Server, client_shell: str) -> None:
    options = msgspec.structs.replace(SOCKET, api_key="wrong")
    [start, error] = run(client_shell, collect, _model(gateway), options)
    assert isinstance(start, Start)
    assert isinstance(error, Error) and error.kind is ErrorKind.AUTH and error.status == 401
