"""Access to ../shared/corpus (real recorded provider streams), skipping cleanly without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def corpus_entries(*protocols: str) -> list[Any]:
    """pytest params (one per recorded file) for the given index ``protocol`` values.

    Empty when the corpus is absent; tests using it should also call
    `require_corpus()` so an absent corpus reports a skip, not zero tests.
    """
    index = CORPUS / "index.json"
    if not index.exists():
        return [pytest.param(None, id="no-corpus")]
    params = []
    for entry in json.loads(index.read_text()):
        if protocols and entry.get("protocol") not in protocols:
            continue
        for name in entry["files"]:
            params.append(pytest.param(entry | {"file": name}, id=name))
    return params


def require_corpus(entry: dict[str, Any] | None) -> dict[str, Any]:
    if entry is None or not CORPUS.exists():
        pytest.skip("../shared/corpus is absent")
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
