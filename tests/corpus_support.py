"""Access to the recorded provider streams (the corpus), found wherever the checkout is.

The corpus is kept outside the repository, in ``shared/corpus`` beside the
checkout. Where it is, in order: ``STREAMFN_CORPUS`` (a path; wrong is an error,
not a fallback), else ``shared/corpus`` beside the checkout or beside any folder
above it, else beside the main checkout when this one is a git worktree. The
search starts at the checkout, never at the current directory, so pytest finds
the same corpus from any folder. Without it a corpus test fails under CI and
skips, visibly, elsewhere (`missing`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from missing import missing

ROOT = Path(__file__).resolve().parents[1]
HOW = (
    "set STREAMFN_CORPUS to the folder of recorded streams, or put it at "
    "shared/corpus beside the checkout"
)


def _main_checkout(root: Path) -> Path | None:
    """The main checkout of the worktree ``root`` (its ``.git`` is a file naming
    ``<main>/.git/worktrees/<name>``), or None."""
    dot_git = root / ".git"
    if not dot_git.is_file():
        return None
    text = dot_git.read_text().strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = (root / text.removeprefix("gitdir:").strip()).resolve()
    return gitdir.parents[2] if gitdir.parent.name == "worktrees" else None


def find_corpus(environ: Mapping[str, str] = os.environ, root: Path = ROOT) -> Path | None:
    """Where the corpus is (a folder holding ``index.json``), or None."""
    named = environ.get("STREAMFN_CORPUS")
    if named:
        path = Path(named).expanduser()
        if not (path / "index.json").is_file():
            raise RuntimeError(f"STREAMFN_CORPUS={named} holds no index.json: {HOW}")
        return path
    main = _main_checkout(root)
    starts = [root, *([main] if main else [])]
    for start in starts:
        for folder in start.parents:
            if (folder / "shared" / "corpus" / "index.json").is_file():
                return folder / "shared" / "corpus"
    return None


_FOUND = find_corpus()
#: the corpus folder (a path that does not exist when there is none: use `corpus_dir`)
CORPUS = _FOUND if _FOUND is not None else ROOT.parent / "shared" / "corpus"


def corpus_dir() -> Path:
    """The corpus folder; a test that reads it calls this first (fails in CI, skips
    elsewhere, when there is none)."""
    if _FOUND is None:
        missing("the recorded corpus (shared/corpus)", HOW)
    return _FOUND


def corpus_entries(*protocols: str) -> list[Any]:
    """pytest params (one per recorded file) for the given index ``protocol`` values.

    One ``no-corpus`` param when the corpus is absent: tests using it call
    `require_corpus()`, so an absent corpus is a failure in CI (a skip
    elsewhere), never zero tests.
    """
    if _FOUND is None:
        return [pytest.param(None, id="no-corpus")]
    params = []
    for entry in json.loads((_FOUND / "index.json").read_text()):
        if protocols and entry.get("protocol") not in protocols:
            continue
        for name in entry["files"]:
            params.append(pytest.param(entry | {"file": name}, id=name))
    return params


def require_corpus(entry: dict[str, Any] | None) -> dict[str, Any]:
    corpus_dir()
    assert entry is not None
    return entry


def body(entry: dict[str, Any]) -> bytes:
    return (CORPUS / entry["file"]).read_bytes()


def expected(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The corpus's reconstructed final message (not authoritative), if any."""
    if entry.get("expected_file"):
        path = CORPUS / entry["expected_file"]
    else:
        name = entry["file"].rsplit(".", 1)[0]
        path = CORPUS / "_derived" / f"{name}.expected.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data.get("expected_final_message", data)
