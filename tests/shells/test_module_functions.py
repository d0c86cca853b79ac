"""The module-level functions of every shell: ``stream``, ``complete``, ``count_tokens``
and ``default_client`` beside each ``Client``.

trio's and asyncio's are one implementation (`streamfn.client.ShellFunctions`)
bound to each shell's own default client; the blocking shell's are the same calls
without ``await``. Each default client is made once, is that shell's ``Client`` and
keeps no idle connection (nothing would close it).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import trio
from fake_provider import FakeProvider
from shell_runner import KEY

import streamfn.io_asyncio as io_asyncio
import streamfn.io_sync as io_sync
import streamfn.io_trio as io_trio
from streamfn.client import ShellFunctions
from streamfn.core import Context, Model, Options, TextDelta

NAMES = ("stream", "complete", "count_tokens", "default_client")


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeProvider() as srv:
        yield srv


def _model(server: FakeProvider, token: str) -> Model:
    return Model(
        id="replay",
        provider="openai",
        api="openai-chat",
        base_url=server.base_url("ok", "openai-chat", token),
    )


def test_the_event_loop_shells_share_one_implementation() -> None:
    for name in NAMES:
        trio_fn, asyncio_fn = getattr(io_trio, name), getattr(io_asyncio, name)
        assert trio_fn.__func__ is asyncio_fn.__func__ is getattr(ShellFunctions, name)
        assert trio_fn.__self__ is not asyncio_fn.__self__


@pytest.mark.parametrize("shell", [io_trio, io_asyncio, io_sync], ids=["trio", "asyncio", "sync"])
def test_each_default_client_is_made_once_and_pools_nothing(shell: Any) -> None:
    client = shell.default_client()
    assert client is shell.default_client()
    assert type(client) is shell.Client
    assert client.max_idle_per_host == 0


def test_the_functions_stream_and_complete_on_every_shell(server: FakeProvider) -> None:
    options = Options(api_key=KEY)
    context = Context.of("hi")

    async def through(shell: Any, token: str) -> tuple[str, str]:
        model = _model(server, token)
        text = ""
        async with shell.stream(model, context, options) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    text += event.delta
        return text, (await shell.complete(model, context, options)).text

    streamed, completed = trio.run(through, io_trio, "module-trio")
    assert streamed and streamed == completed
    assert asyncio.run(through(io_asyncio, "module-asyncio")) == (streamed, completed)
    model = _model(server, "module-sync")
    with io_sync.stream(model, context, options) as events:
        text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    assert (text, io_sync.complete(model, context, options).text) == (streamed, completed)
