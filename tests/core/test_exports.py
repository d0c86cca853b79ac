"""Every package's surface is what its ``__all__`` says (after httpx's
tests/test_exported_members.py): each listed name resolves, none is listed
twice, and no public name is reachable without being listed.

Packages that import their names on first use (a module ``__getattr__``)
are checked by resolving each listed name; the others also by comparing
``__all__`` with what the package namespace holds.
"""

from __future__ import annotations

import importlib
import types
import typing

import pytest

PACKAGES = [
    "streamfn.core",
    "streamfn.core.providers",
    "streamfn.core.dialects.anthropic",
    "streamfn.core.dialects.openai_chat",
    "streamfn.core.dialects.openai_responses",
    "streamfn.core.dialects.gemini",
    "streamfn.core.dialects.ollama",
    "streamfn.core.dialects.bedrock",
    "streamfn.core.dialects.proxy",
    "streamfn.core.dialects.agent_events",
    "streamfn.core.dialects.agui",
    "streamfn.core.dialects.ui_message_stream",
    "streamfn.client",
    "streamfn.io_asyncio",
    "streamfn.io_trio",
    "streamfn.io_common",
    "streamfn.local",
    "streamfn.cli",
    "streamfn.fuzz",
]


def _package(name: str) -> types.ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:  # a shell or extra that is not installed here
        pytest.skip(f"{name}: {exc}")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_listed_name_resolves_once(name: str) -> None:
    package = _package(name)
    listed = getattr(package, "__all__", None)
    assert listed is not None, f"{name} has no __all__"
    assert len(listed) == len(set(listed)), f"{name} lists a name twice"
    missing = [member for member in listed if not hasattr(package, member)]
    assert missing == [], f"{name}.__all__ lists names it does not have"


@pytest.mark.parametrize("name", PACKAGES)
def test_no_public_name_is_left_out(name: str) -> None:
    package = _package(name)
    public = {
        member
        for member, value in vars(package).items()
        if not member.startswith("_")
        and not isinstance(value, types.ModuleType)  # submodules are reached by their path
        and member != "annotations"  # from __future__
        and getattr(typing, member, None) is not value  # Any, TYPE_CHECKING ...
    }
    assert sorted(public - set(package.__all__)) == [], f"{name}: public but not in __all__"
