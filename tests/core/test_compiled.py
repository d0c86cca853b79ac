"""The compiled hot path: the list of modules setup.py compiles, and which build runs.

pyproject.toml's ``[tool.streamfn.compiled]`` lists the hot path's files by glob;
setup.py compiles them with mypyc when a build is opted in. Each glob must still
match a file (a module moved to another package must move on the list too, or it
would quietly run pure), and what runs must be what CI asked for: ``.ci/run`` runs
the suite once pure and once on an installed compiled build, saying which in
``STREAMFN_EXPECT_COMPILED``, so a build that silently fell back to pure Python fails
here instead of passing as compiled.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import tomllib
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import streamfn.core

ROOT = Path(__file__).resolve().parents[2]


def _setup_module() -> ModuleType:
    """setup.py, imported without running ``setup()`` (it runs only as ``__main__``)."""
    spec = importlib.util.spec_from_file_location("streamfn_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _listed() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        listed: dict[str, Any] = tomllib.load(file)["tool"]["streamfn"]["compiled"]
    return listed


def _module_name(path: Path) -> str:
    """``core/wire/_sse.py`` -> ``streamfn.core.wire._sse`` (pyproject's package-dir)."""
    rel = path.relative_to(ROOT).with_suffix("")
    return "streamfn." + ".".join(rel.parts)


def compiled_modules() -> list[str]:
    files = _setup_module().compiled_files({"tool": {"streamfn": {"compiled": _listed()}}})
    return [_module_name(path) for path in files]


def _is_extension(module: ModuleType) -> bool:
    return (module.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))


def test_each_glob_and_each_pure_exception_names_a_file() -> None:
    listed = _listed()
    for pattern in listed["modules"]:
        assert list(ROOT.glob(pattern)), f"{pattern!r} matches no file: update pyproject.toml"
    for path in listed["pure"]:
        assert (ROOT / path).is_file(), f"{path!r} is gone: update pyproject.toml"
    modules = compiled_modules()
    assert "streamfn.core.wire._sse" in modules and "streamfn.core._emitter" in modules
    assert "streamfn.core.wire._eventstream" not in modules  # the pure list is honoured
    assert not [name for name in modules if name.endswith("__init__")]


#: the annotations mypyc gives a compiled class as they are: plain classes
PLAIN = {"str", "int", "float", "bool", "bytes", "msgspec.Raw"}


def test_no_compiled_module_defines_a_struct_msgspec_could_not_read() -> None:
    """mypyc gives a compiled module's class annotations as classes (`type` for
    ``str | None``); a msgspec struct with such a field would decode nothing in the
    compiled build, so its structs live in a pure module (``_response_structs.py``)."""
    setup = _setup_module()
    unreadable = []
    for path in setup.compiled_files({"tool": {"streamfn": {"compiled": _listed()}}}):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        structs = {"msgspec.Struct", "Struct"}
        for _ in classes:  # a struct may derive from a struct defined above it
            structs |= {c.name for c in classes if {ast.unparse(b) for b in c.bases} & structs}
        for cls in classes:
            if cls.name in structs:
                fields = [s for s in cls.body if isinstance(s, ast.AnnAssign)]
                unreadable += [
                    f"{path.name}:{field.lineno} {cls.name}: {ast.unparse(field.annotation)}"
                    for field in fields
                    if ast.unparse(field.annotation) not in PLAIN
                ]
    assert not unreadable, unreadable


def test_the_build_that_runs_is_the_one_ci_asked_for() -> None:
    expected = os.environ.get("STREAMFN_EXPECT_COMPILED")
    if expected is None and os.environ.get("CI") == "true":
        pytest.fail("CI must say which build it runs: set STREAMFN_EXPECT_COMPILED to 1 or 0")
    compiled = {
        name: _is_extension(importlib.import_module(name)) for name in compiled_modules()
    }
    # a build compiles every listed module or, falling back, none
    assert len(set(compiled.values())) == 1, compiled
    assert streamfn.core.COMPILED is next(iter(compiled.values()))
    if expected is not None:
        assert streamfn.core.COMPILED is (expected == "1"), (
            f"STREAMFN_EXPECT_COMPILED={expected} but COMPILED is {streamfn.core.COMPILED}"
        )
