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
        if parent in folders and Path(folder).parent == Path(folders[parent]):
            continue  # nested in a mapped package's folder: reached through its parent
        link = LAYOUT.joinpath(*parent.split("."), name)
        link.parent.mkdir(parents=True, exist_ok=True)
        if not (ROOT / folder / "__init__.py").exists():
            # a namespace portion (``streamfn`` itself: its ``__main__``): its modules
            # beside the other portions, not the folder in their place
            link.mkdir(exist_ok=True)
            for module in (ROOT / folder).glob("*.py"):
                (link / module.name).symlink_to(module)
            continue
        link.symlink_to(ROOT / folder, target_is_directory=True)
