"""Every package says what it exports, and only that (as httpx's test_exported_members).

For each package, ``__all__`` is exactly the public names its namespace holds
(modules and `typing` helpers aside), each resolves, and `streamfn.core`
stays the small surface users touch. The paths CHANGELOG.md lists as removed
(old path → new path) are gone, their new paths resolve, and no code of ours
imports an old one.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import re
import types
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    "streamfn.core",
    "streamfn.core.wire",
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
    "streamfn.core.serve",
    "streamfn.core.http",
    "streamfn.client",
    "streamfn.io_trio",
    "streamfn.io_asyncio",
    "streamfn.local",
    "streamfn.fuzz",
]


def _public_names(module: types.ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType | __future__._Feature)
        and not (name in dir(typing) and value is getattr(typing, name))
    }


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_exactly_what_the_package_holds(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(getattr(module, "__all__", []))
    assert len(set(exported)) == len(exported), f"{package}.__all__ repeats a name"
    for name in exported:  # lazily provided names (a module __getattr__) resolve too
        assert getattr(module, name) is not None, f"{package}.{name}"
    loaded = _public_names(module)  # after the getattr calls: lazy names are loaded now
    assert loaded - set(exported) == set(), f"{package} holds names its __all__ leaves out"


def test_core_is_the_small_surface() -> None:
    import streamfn.core as core

    # about 45 a user touches, plus the issue-14 features (CachePoint, Citation,
    # DocumentContent, ServerTool, OutputValidationError, parse_output) and the
    # loud-stream pair (StreamError, raise_for_error)
    assert 40 <= len(core.__all__) <= 56


def _removed_paths() -> dict[str, str]:
    """CHANGELOG.md's "Removed" lines ``- `old` → `new```: old path -> new path."""
    text = (ROOT / "CHANGELOG.md").read_text()
    return dict(re.findall(r"^\s*- `(streamfn[\w.]+)` → `(streamfn[\w.]+)`$", text, re.M))


REMOVED = _removed_paths()


def _resolve(path: str) -> object:
    """The module at ``path``, else the attribute its last part names in its parent."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name != path:
            raise
    parent, _, name = path.rpartition(".")
    return getattr(importlib.import_module(parent), name)


def test_the_changelog_lists_the_removed_paths() -> None:
    assert len(REMOVED) >= 60  # the modules and names the old redirect tables held


@pytest.mark.parametrize(("old", "new"), sorted(REMOVED.items()))
def test_a_removed_path_is_gone_and_its_new_path_resolves(old: str, new: str) -> None:
    with pytest.raises((ModuleNotFoundError, AttributeError)):
        _resolve(old)
    assert _resolve(new) is not None


def _stale_imports(node: ast.AST) -> list[str]:
    """The removed paths an import statement reaches."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in REMOVED]
    if not isinstance(node, ast.ImportFrom) or node.module is None or node.level:
        return []  # relative imports stay inside the package, which uses the new paths
    if node.module in REMOVED:
        return [node.module]
    return [a.name for a in node.names if f"{node.module}.{a.name}" in REMOVED]


def test_our_code_imports_nothing_by_its_old_path() -> None:
    stale = []
    for path in ROOT.rglob("*.py"):
        if {".venv", ".typecheck", "build", "dist"} & set(path.parts):  # ours, not copies
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            stale += [f"{path.relative_to(ROOT)}:{n}" for n in _stale_imports(node)]
    assert stale == []
