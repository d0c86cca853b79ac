"""The public surface: every name a package or module exports resolves, and `import *` works.

An ``__all__`` entry that names nothing makes ``from streamfn.core import *``
raise ``AttributeError`` for every user who tries it; this walks every
module of every package so such an entry cannot ship again.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import msgspec
import pytest

from streamfn.core.options import Options

PACKAGES = [
    "streamfn.core",
    "streamfn.client",
    "streamfn.io_trio",
    "streamfn.io_asyncio",
    "streamfn.asgi",
    "streamfn.io_sync",
    "streamfn.io_common",
    "streamfn.local",
    "streamfn.cli",
]


def _modules() -> list[str]:
    names: list[str] = []
    for package in PACKAGES:
        names.append(package)
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=package + "."):
            if not info.name.endswith("__main__"):  # running it is the CLI itself
                names.append(info.name)
    return names


@pytest.mark.parametrize("name", _modules())
def test_every_exported_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        assert name.count(".") > 1, f"the package {name} must declare __all__"
        return
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    assert set(exported) <= set(namespace)


def test_the_readme_names_resolve() -> None:
    from streamfn import core

    for name in (
        "replay",
        "register_api",
        "model",
        "fallback",
        "CompletionError",
        "Usage",
        "StreamError",
        "raise_for_error",
    ):
        assert name in core.__all__ and getattr(core, name) is not None
    from streamfn.core.dialects.bedrock._sigv4 import sign_request
    from streamfn.core.tagged import TaggedDecoder
    from streamfn.core.text_tools import text_tool_calls

    assert TaggedDecoder and sign_request and text_tool_calls


def test_the_typing_view_of_options_matches_its_fields() -> None:
    """`Options.__init__` as type checkers see it (to take ``thinking="high"``) lists the
    struct's fields in order with the same defaults."""
    source = Path(importlib.import_module("streamfn.core.options").__file__ or "").read_text()
    stub = next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    names = [a.arg for a in stub.args.kwonlyargs]
    assert names == list(Options.__struct_fields__)
    defaults = [
        eval(compile(ast.Expression(d), "<stub>", "eval")) if d is not None else None
        for d in stub.args.kw_defaults
    ]
    assert defaults == [getattr(Options(), f) for f in Options.__struct_fields__], (
        "a default in the typing view differs from the field's"
    )


def test_thinking_takes_the_strings_users_write() -> None:
    from streamfn.core import ThinkingLevel

    assert Options(thinking="high").thinking is ThinkingLevel.HIGH
    decoded = msgspec.json.decode(b'{"thinking": "low"}', type=Options)
    assert decoded.thinking is ThinkingLevel.LOW
    with pytest.raises(ValueError):
        Options(thinking="extreme")  # type: ignore[arg-type]
