"""Every package says what it exports, and only that (as httpx's test_exported_members).

For each package, ``__all__`` is exactly the public names its namespace holds
(modules and `typing` helpers aside), each resolves, and `streamfn.core`
stays the small surface users touch. Names that left `streamfn.core` resolve
for one release with a `DeprecationWarning` naming their new home, and no
code of ours imports them from the old place.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import types
import typing
import warnings
from pathlib import Path

import pytest

from streamfn.core._moved import MOVED_MODULES, MOVED_NAMES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    "streamfn.core",
    "streamfn.core.wire",
    "streamfn.core.providers",
    "streamfn.core.serve",
    "streamfn.core.http",
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
    assert not set(core.__all__) & set(MOVED_NAMES)


@pytest.mark.parametrize("name", sorted(MOVED_NAMES))
def test_a_moved_name_still_resolves_with_a_warning(name: str) -> None:
    import streamfn.core as core

    new = MOVED_NAMES[name]
    with pytest.warns(DeprecationWarning, match=f"import it from {new}") as caught:
        old = getattr(core, name)
    assert old is getattr(importlib.import_module(new), name)
    assert caught[0].filename == __file__  # the warning points at the importer
    assert name in importlib.import_module(new).__all__


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import streamfn.core as core

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
            core.NoSuchThing  # noqa: B018


def _stale_imports(node: ast.AST) -> list[str]:
    """The moved names and modules an import statement reaches by their old path."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MOVED_MODULES]
    if not isinstance(node, ast.ImportFrom) or node.module is None or node.level:
        return []  # relative imports stay inside the package, which uses the new paths
    if node.module in MOVED_MODULES:
        return [node.module]
    return [
        a.name
        for a in node.names
        if (node.module == "streamfn.core" and a.name in MOVED_NAMES)
        or f"{node.module}.{a.name}" in MOVED_MODULES
    ]


def test_our_code_imports_nothing_by_its_old_path() -> None:
    stale = []
    for path in ROOT.rglob("*.py"):
        if {".venv", ".typecheck"} & set(path.parts):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            stale += [f"{path.relative_to(ROOT)}:{n}" for n in _stale_imports(node)]
    assert stale == []
