"""MkDocs hook: the installed layout of `streamfn`, as symlinks, for the API reference.

streamfn maps folders to subpackages (``core/`` is ``streamfn.core``, setuptools'
``package-dir``); mkdocstrings reads the sources statically and cannot follow that
mapping (nor setuptools' editable-install hook), so before the build this hook
mirrors the mapping as a tree of symlinks under ``build/docs-layout/streamfn``, as
``.ci/typecheck`` does for mypy, and ``mkdocs.yml`` points mkdocstrings there.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ROOT / "build" / "docs-layout"


def on_startup(**_: Any) -> None:
    """Build the tree once per ``mkdocs`` process (``serve`` rebuilds reuse it)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    folders = mapping["tool"]["setuptools"]["package-dir"]
    shutil.rmtree(LAYOUT, ignore_errors=True)
    for package, folder in folders.items():
        parent, _, name = package.rpartition(".")
        if parent in folders:  # nested in a mapped package: reached through its parent
            continue
        link = LAYOUT.joinpath(*parent.split("."), name)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT / folder, target_is_directory=True)
