"""The API reference is complete: every name every face exports renders in the built
site, and so does each field and public method of each class it exports (inherited
ones included: a shell's ``Client`` has ``stream`` although `ClientBase` defines it).

The site is built once, strictly, into a temporary folder (as CI's
``mkdocs build --strict`` does), and the anchors mkdocstrings gives each rendered
object (``streamfn.core.Done.paused``) are read from its reference pages. Building
is the only way to see what a reader sees: a name without a docstring, a field
written as a ``#:`` comment or a method a class inherits is left out by options
no static check of the directives would notice.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import msgspec
import pytest
from test_exported_members import PACKAGES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The anchors of every object the reference pages render."""
    site = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    assert mkdocs.exists(), "mkdocs is missing: pip install -e '.[docs]'"
    subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
    )
    anchors: set[str] = set()
    for page in (site / "reference").rglob("*.html"):
        anchors |= set(re.findall(r'id="(streamfn\.[\w.]+)"', page.read_text()))
    return anchors


def _ours(klass: type) -> bool:
    return klass.__module__.split(".")[0] == "streamfn"


def members(value: type) -> set[str]:
    """A class's public fields and methods, its own and those it inherits from ours
    (not what `object`, `Exception`, `str` or msgspec give every such class)."""
    found: set[str] = set()
    for klass in value.__mro__:
        if not _ours(klass):
            continue
        if issubclass(klass, msgspec.Struct):
            found |= set(klass.__struct_fields__)
        if dataclasses.is_dataclass(klass):
            found |= {f.name for f in dataclasses.fields(klass)}
        if typing.is_typeddict(klass):
            found |= set(klass.__annotations__)
        if issubclass(klass, enum.Enum):
            found |= set(klass.__members__)
        found |= {
            name
            for name, member in vars(klass).items()
            if inspect.isfunction(member)
            or isinstance(member, property | classmethod | staticmethod)
        }
        found |= set(vars(klass).get("__annotations__", {}))
    return {name for name in found if not name.startswith("_")}


def expected() -> list[str]:
    """Every object path the reference must render: each face's names, each class's members."""
    paths = []
    for package in PACKAGES:
        face = importlib.import_module(package)
        for name in face.__all__:
            paths.append(f"{package}.{name}")
            value = getattr(face, name)
            if inspect.isclass(value):
                paths += [f"{package}.{name}.{member}" for member in sorted(members(value))]
    return paths


def test_the_member_finder_sees_fields_inherited_methods_and_keys() -> None:
    from streamfn.client import ClientSettings
    from streamfn.core import Done, ErrorKind
    from streamfn.io_trio import Client

    assert "paused" in members(Done)
    assert {"stream", "complete", "stream_batches"} <= members(Client)
    assert {"environ", "ssl_context"} <= members(ClientSettings)
    assert {"AUTH", "retryable"} <= members(ErrorKind)


def test_every_public_name_renders_with_its_fields_and_methods(rendered: set[str]) -> None:
    missing = [path for path in expected() if path not in rendered]
    assert missing == [], f"{len(missing)} public names the reference does not render"
