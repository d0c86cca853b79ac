"""Every optional dependency, when missing, names the extra that brings it.

One program imports every public face, and reads every name of it, with the
packages of every extra made unimportable (`blocked_imports`): an import or a
name that fails must say which package is missing and which extra installs it
(``pip install 'streamfn[trio]'``), never a bare ``No module named 'trio'``.
The ``python -m streamfn.fuzz.<target>`` commands are run the same way.
``streamfn serve`` and ``streamfn local prepare`` are the command line's own
(`tests/serve/test_serve_cli.py`, `tests/local/test_cli_first_hour.py`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from blocked_imports import blocking
from test_exported_members import PACKAGES

from streamfn._extras import EXTRA_OF, extra_hint

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: the extras that bring packages to users (the rest are the project's own tools)
USER_EXTRAS = ("trio", "local", "serve", "fuzz", "atheris", "otel", "team")
TARGETS = sorted(p.stem for p in (ROOT / "fuzz").glob("fuzz_*.py"))

_READ_EVERY_FACE = """
import importlib, json
found = {}
for package in PACKAGES:
    try:
        face = importlib.import_module(package)
    except ModuleNotFoundError as exc:
        found[package] = str(exc)
        continue
    for name in face.__all__:
        try:
            getattr(face, name)
        except ModuleNotFoundError as exc:
            found[f"{package}.{name}"] = str(exc)
print(json.dumps(found))
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    program = blocking(set(EXTRA_OF), code)
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )


def _names_its_extra(message: str) -> bool:
    missing = re.search(r"needs (\w+)", message)
    return missing is not None and extra_hint(EXTRA_OF[missing[1]]) in message


def test_the_table_knows_every_package_of_the_user_extras() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra in USER_EXTRAS:
        for requirement in extras[extra]:
            module = re.split(r"[<>=\[ ;]", requirement)[0].split("-")[0]
            if module != "streamfn":
                assert module in EXTRA_OF, (extra, requirement)
                assert EXTRA_OF[module] in (extra, "trio"), (extra, module)  # [local] has trio


def test_every_face_and_name_names_the_missing_extra() -> None:
    done = _run(f"PACKAGES = {PACKAGES!r}\n" + _READ_EVERY_FACE)
    assert done.returncode == 0, done.stderr[-3000:]
    failures: dict[str, str] = json.loads(done.stdout)
    # what the blocked packages must break (so the check below is not vacuous)
    assert {"streamfn.io_trio", "streamfn.fuzz.transcripts"} <= set(failures), failures
    assert "streamfn.core" not in failures
    unnamed = {
        where: message for where, message in failures.items() if not _names_its_extra(message)
    }
    assert not unnamed, unnamed
    assert "pip install 'streamfn[trio]'" in failures["streamfn.io_trio"]


@pytest.mark.parametrize("shell", ["asyncio", "trio"])
def test_serve_without_hypercorn_names_the_serve_extra(shell: str) -> None:
    """The shells' ``serve`` imports hypercorn when called: that error names [serve]."""
    runner = (
        "asyncio.run(serve(None, None, None))"
        if shell == "asyncio"
        else ("trio.run(serve, None, None, None)")
    )
    code = f"import {shell}\nfrom streamfn.io_{shell} import serve\n{runner}\n"
    done = subprocess.run(
        [sys.executable, "-c", blocking({"hypercorn"}, code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    last = done.stderr.strip().splitlines()[-1]
    assert f"streamfn.io_{shell}.serve needs hypercorn" in last, done.stderr[-2000:]
    assert extra_hint("serve") in last


@pytest.mark.parametrize("target", TARGETS)
def test_a_fuzz_target_without_hypothesis_names_the_fuzz_extra(target: str) -> None:
    done = _run(f"import runpy\nrunpy.run_module('streamfn.fuzz.{target}', run_name='__main__')\n")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: python -m streamfn.fuzz.") and _names_its_extra(
        last
    ), done.stderr[-2000:]
    assert "pip install 'streamfn[fuzz]'" in last
