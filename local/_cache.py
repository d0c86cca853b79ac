"""What a prepared model directory holds, and an honest answer to "is it usable?".

Kept apart from `convert` (numpy, gguf, CTranslate2) so that the command line
can name files, show progress and inspect the cache without the ``[local]``
extra installed, and so a warm start reads no more than it must.

A conversion records each file's size (and the weights' sha256) in
``streamfn.json``. `is_complete` only checks that the files are there and the
weights have their size: cheap enough for every start. `inspect_model_dir` is the full
check behind ``streamfn local info``: it also parses the JSON files and hashes
the weights, so a truncated or altered cache is reported as corrupt, never as
prepared.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

__all__ = [
    "METADATA_FILE",
    "REQUIRED_FILES",
    "TEMPLATE_FILE",
    "TOKENIZER_FILE",
    "WEIGHTS_FILE",
    "CacheReport",
    "Progress",
    "file_record",
    "inspect_model_dir",
    "is_complete",
    "json_object",
    "no_progress",
    "read_json",
    "read_metadata",
    "read_vocabulary",
    "sha256_file",
]

#: ``progress(stage, done, total)``: the CLI draws it on stderr; library callers may ignore
#: it. Stages that start with "downloading" count bytes; the others count steps.
Progress = Callable[[str, int, int], None]

METADATA_FILE: Final = "streamfn.json"
TEMPLATE_FILE: Final = "chat_template.jinja"
TOKENIZER_FILE: Final = "tokenizer.json"
WEIGHTS_FILE: Final = "model.bin"
REQUIRED_FILES: Final = (WEIGHTS_FILE, "config.json", TOKENIZER_FILE)
_JSON_FILES: Final = ("config.json", TOKENIZER_FILE, METADATA_FILE)


def no_progress(stage: str, done: int, total: int) -> None:
    """The `Progress` of library callers who pass none (one definition for the package)."""
    return None


def file_record(path: Path, *, digest: bool) -> dict[str, Any]:
    """``{"size": n}`` (and ``"sha256"`` when ``digest``) for the metadata of a conversion."""
    record: dict[str, Any] = {"size": path.stat().st_size}
    if digest:
        record["sha256"] = sha256_file(path)
    return record


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    hasher = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def read_metadata(directory: Path) -> dict[str, Any]:
    """What the conversion recorded in ``streamfn.json``; ``{}`` when absent or unreadable."""
    try:
        meta = json.loads((directory / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _recorded_files(directory: Path) -> dict[str, Any]:
    files = read_metadata(directory).get("files")
    return files if isinstance(files, dict) else {}


def _size_problem(directory: Path, recorded: dict[str, Any]) -> str | None:
    for name, record in recorded.items():
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        size = record.get("size") if isinstance(record, dict) else None
        if isinstance(size, int) and path.stat().st_size != size:
            return f"{name} is {path.stat().st_size:,} bytes, the conversion wrote {size:,}"
    return None


def is_complete(model_dir: str | os.PathLike[str]) -> bool:
    """The required files are there with the sizes the conversion recorded (no hashing).

    Conversion renames the directory into place last, so a complete directory
    is one a finished conversion wrote, unless something changed it since.
    """
    path = Path(model_dir)
    if not all((path / name).is_file() for name in REQUIRED_FILES):
        return False
    # only the weights: a truncated copy must not load, but a hand-edited template may
    weights = {k: v for k, v in _recorded_files(path).items() if k == WEIGHTS_FILE}
    return _size_problem(path, weights) is None


@dataclass(frozen=True, slots=True)
class CacheReport:
    """The state of a model directory; ``problem`` says what is wrong when it is not usable."""

    state: Literal["missing", "incomplete", "corrupt", "prepared"]
    problem: str | None = None
    verified: bool = False  # the weights matched a recorded sha256


def inspect_model_dir(model_dir: str | os.PathLike[str]) -> CacheReport:
    """Check everything a load would rely on, hashing the weights when a digest was recorded."""
    path = Path(model_dir)
    if not path.exists():
        return CacheReport("missing")
    if not path.is_dir():
        return CacheReport("corrupt", f"{path} is not a directory")
    absent = [name for name in REQUIRED_FILES if not (path / name).is_file()]
    if len(absent) == len(REQUIRED_FILES) and not any(path.iterdir()):
        return CacheReport("missing")
    if absent:
        return CacheReport("incomplete", f"{', '.join(absent)} missing")
    recorded = _recorded_files(path)
    problem = _size_problem(path, recorded)
    if problem:
        return CacheReport("corrupt", problem)
    for name in _JSON_FILES:
        file = path / name
        if not file.is_file():
            continue
        try:
            value = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return CacheReport("corrupt", f"{name} is not valid JSON ({exc})")
        if not isinstance(value, dict):
            return CacheReport("corrupt", f"{name} does not hold a JSON object")
    if (path / WEIGHTS_FILE).stat().st_size == 0:
        return CacheReport("corrupt", f"{WEIGHTS_FILE} is empty")
    record = recorded.get(WEIGHTS_FILE)
    expected = record.get("sha256") if isinstance(record, dict) else None
    if isinstance(expected, str):
        actual = sha256_file(path / WEIGHTS_FILE)
        if actual != expected:
            return CacheReport(
                "corrupt", f"{WEIGHTS_FILE} has sha256 {actual[:12]}…, expected {expected[:12]}…"
            )
        return CacheReport("prepared", verified=True)
    return CacheReport("prepared")


def read_json(path: Path) -> dict[str, Any]:
    """The object in an optional JSON file; ``{}`` when it is missing or not an object."""
    if not path.is_file():
        return {}
    return json_object(path.read_text(encoding="utf-8"))


def json_object(text: str) -> dict[str, Any]:
    """The object ``text`` holds; ``{}`` when it is JSON but not an object."""
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def read_vocabulary(model_dir: Path) -> list[str]:
    """The token strings by id, from ``vocabulary.json`` or ``vocabulary.txt``."""
    json_file = model_dir / "vocabulary.json"
    if json_file.is_file():
        return [str(t) for t in json.loads(json_file.read_text(encoding="utf-8"))]
    text_file = model_dir / "vocabulary.txt"
    return text_file.read_text(encoding="utf-8").split("\n")
