"""The public face, in one place (after httpx's tests/test_exported_members.py).

- Every public package lists in ``__all__`` exactly what its namespace holds
  (modules and `typing` helpers aside); each name resolves, once, and
  ``from package import *`` gives all of them.
- What the README, the manual and the examples import is public: a name that
  users copy from our own pages is a name on a face, never a private module's.
- The paths CHANGELOG.md lists as removed (old path → new path) are gone,
  their new paths resolve, and no code of ours imports an old one.

How many names the faces hold together is `tests/core/test_layout.py`'s
budget, read from the source.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import inspect
import pkgutil
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("core", "client", "io_common", "io_trio", "io_asyncio", "io_sync", "asgi", "local")
TOPS += ("cli", "fuzz", "ledger")


def _is_public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split(".")[1:])


def public_packages() -> list[str]:
    found = []
    for top in TOPS:
        package = importlib.import_module(f"streamfn.{top}")
        found.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if info.ispkg and _is_public(info.name):
                found.append(info.name)
    return found


PACKAGES = public_packages()


def _public_names(module: types.ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType | __future__._Feature)
        and not (name in dir(typing) and value is getattr(typing, name))
    }


def test_the_walk_finds_the_packages() -> None:
    assert {"streamfn.core", "streamfn.core.wire", "streamfn.core.dialects.anthropic"} <= set(
        PACKAGES
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_a_face_lists_exactly_what_it_holds(package: str) -> None:
    module = importlib.import_module(package)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{package} has no __all__"
    assert len(set(exported)) == len(exported), f"{package}.__all__ repeats a name"
    for name in exported:  # lazily provided names (a module __getattr__) resolve too
        assert getattr(module, name) is not None, f"{package}.{name}"
    loaded = _public_names(module)  # after the getattr calls: lazy names are loaded now
    assert loaded - set(exported) == set(), f"{package} holds names its __all__ leaves out"
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    assert set(exported) <= set(namespace)


def _pages() -> Iterator[tuple[str, str]]:
    """(where, Python source) for each example and each Python block of our pages."""
    for path in sorted((ROOT / "examples").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in re.findall(r"```python\n(.*?)```", path.read_text(), re.S):
            yield path.relative_to(ROOT).as_posix(), block


def private_imports(source: str) -> list[str]:
    """The imports in ``source`` that reach past a face: a private module, or a name
    the module's ``__all__`` does not list."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                a.name for a in node.names if a.name.startswith("streamfn.") and not _is_public(a.name)
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("streamfn."):
            module = node.module or ""
            if not _is_public(module):
                found.append(module)
                continue
            listed = set(getattr(importlib.import_module(module), "__all__", ()))
            for alias in node.names:
                if alias.name not in listed and f"{module}.{alias.name}" not in PACKAGES:
                    found.append(f"{module}.{alias.name}")
    return found


def test_the_private_import_finder_finds_each_kind() -> None:
    source = (
        "import streamfn.core._events\n"
        "from streamfn.core._events import Done\n"
        "from streamfn.core import Done, new_ulid\n"
        "from streamfn.core import wire\n"
        "import os\n"
        "import streamfn.core.wire._sse\n"
    )
    assert private_imports(source) == [
        "streamfn.core._events",
        "streamfn.core._events",
        "streamfn.core.new_ulid",
        "streamfn.core.wire._sse",
    ]


@pytest.mark.parametrize("where", sorted({where for where, _ in _pages()}))
def test_our_pages_import_only_public_names(where: str) -> None:
    found = [name for w, source in _pages() if w == where for name in private_imports(source)]
    assert found == [], f"{where} imports past a face: export it or import from the package"


def test_our_pages_name_no_private_module() -> None:
    """Prose points at faces too: `streamfn.x._y`, `core/_classify.py` or `_retry.py`
    in a page is a path we do not promise (CONTRIBUTING.md, not a page, maps them)."""
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [
        f"{page.relative_to(ROOT)}: {hit}"
        for page in pages
        for pattern in (PRIVATE_PATH, PRIVATE_FILE)
        for hit in pattern.findall(page.read_text())
    ]
    assert found == []


PRIVATE_PATH = re.compile(r"\bstreamfn(?:\.[a-z_0-9]+)*\._[a-z]\w*")
#: a file path with a private part (``core/_classify.py``, ``core/serve/_routes``)
#: or a private module's file name alone (``_retry.py``)
PRIVATE_FILE = re.compile(
    r"(?<![\w.<>/-])(?:[a-z][a-z0-9_]*/)+_[a-z][a-z0-9_]*(?:\.py)?\b"
    r"|(?<![\w.<>/-])_[a-z][a-z0-9_]*\.py\b"
)


def test_the_private_path_finder_finds_each_kind() -> None:
    text = (
        "see `core/_classify.py`, core/serve/_routes and _retry.py; "
        "not streamfn.core.providers.<name>_request, tests/core/test_x.py or __init__.py"
    )
    assert PRIVATE_FILE.findall(text) == ["core/_classify.py", "core/serve/_routes", "_retry.py"]


def _rendered_docstrings(package: str) -> Iterator[tuple[str, str]]:
    """(name, docstring) for a face, each name it exports and, for a class, each of its
    public members: what the reference pages render."""
    face = importlib.import_module(package)
    yield package, inspect.getdoc(face) or ""
    for name in face.__all__:
        value = getattr(face, name)
        yield f"{package}.{name}", inspect.getdoc(value) or ""
        if inspect.isclass(value):
            for member, inner in vars(value).items():
                if not member.startswith("_") or member == "__init__":
                    yield f"{package}.{name}.{member}", inspect.getdoc(inner) or ""


@pytest.mark.parametrize("package", PACKAGES)
def test_the_reference_pages_name_no_private_module(package: str) -> None:
    """The docstrings mkdocstrings renders point users at faces, not at private modules."""
    found = [
        f"{where}: {hit}"
        for where, doc in _rendered_docstrings(package)
        for hit in PRIVATE_PATH.findall(doc)
    ]
    assert found == []


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
    assert len(REMOVED) >= 50  # the moved modules and names, old path → public new path


@pytest.mark.parametrize(("old", "new"), sorted(REMOVED.items()))
def test_a_removed_path_is_gone_and_its_new_path_resolves(old: str, new: str) -> None:
    with pytest.raises((ModuleNotFoundError, AttributeError)):
        _resolve(old)
    assert _resolve(new) is not None
    assert _is_public(new), f"{new} is private: point the line at the face that exports it"


def _now_private() -> list[str]:
    """CHANGELOG.md's "private now" lines: a bullet that holds one path and nothing else."""
    text = (ROOT / "CHANGELOG.md").read_text()
    return re.findall(r"^\s*- `(streamfn[\w.]+)`$", text, re.M)


@pytest.mark.parametrize("old", _now_private())
def test_a_name_made_private_is_gone_from_its_face(old: str) -> None:
    with pytest.raises((ModuleNotFoundError, AttributeError)):
        _resolve(old)


def test_the_changelog_lists_the_names_made_private() -> None:
    assert len(_now_private()) >= 20


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
