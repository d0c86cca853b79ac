"""The server's old import paths keep working for one release, each with a
`DeprecationWarning` naming the new one (and the same objects, so checks hold)."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        ("streamfn.io_asyncio.guard", "streamfn.core.serve.guard", "host_allowed"),
        ("streamfn.io_asyncio.agent_route", "streamfn.asgi.stamps", "AGENT_PATH"),
    ],
)
def test_a_moved_server_module_imports_with_a_warning(old: str, new: str, name: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("streamfn.io_asyncio.server", "EventsBackend", "streamfn.fuzz.events_backend"),
        ("streamfn.io_asyncio.backends", "LocalBackend", "streamfn.local.serve_backend"),
    ],
)
def test_a_moved_server_name_imports_with_a_warning(old: str, name: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=new):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)


def test_the_old_names_that_stayed_still_import() -> None:
    from streamfn.io_asyncio.backends import ProviderBackend, RouterBackend, ServedModel
    from streamfn.io_asyncio.server import App, Backend, ServerConfig, UnknownModelError

    assert App(RouterBackend(None, ProviderBackend(environ={}))).runtime.name == "asyncio"
    assert (Backend, ServerConfig, UnknownModelError, ServedModel) is not None
