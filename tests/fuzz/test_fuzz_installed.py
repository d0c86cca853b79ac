"""Every shipped fuzz target runs from an installed wheel, with no checkout anywhere.

The wheel is built from a copy of the package sources only (no ``tests/``),
installed into a bare environment, and each target's entry point
(``python -m streamfn.fuzz.<target>``) runs in isolated mode (no
``PYTHONPATH``, no current directory on `sys.path`) from an empty directory
outside the checkout. A target that reached for the test suite's modules, or
for files beside the package, fails here.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from installed import ROOT, bare_venv, copy_sources, install

pytest.importorskip("hypothesis")

TARGETS = ["fuzz_sse", "fuzz_ndjson", "fuzz_fold", "fuzz_eventstream", "fuzz_providers"]


def _shipped_targets() -> set[str]:
    return {path.stem for path in (ROOT / "fuzz").glob("fuzz_*.py")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(python of an environment with the built wheel installed, an empty working folder)."""
    work = tmp_path_factory.mktemp("fuzz-wheel")
    source = copy_sources(work / "streamfn-src")
    python = bare_venv(work / "venv")
    install(python, source)
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    return python, elsewhere


def _run(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "FUZZ_"))}
    env |= {"FUZZ_EXAMPLES": "10", "FUZZ_NO_DB": "1"}
    return subprocess.run(
        [str(python), "-I", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_every_shipped_target_is_checked_here() -> None:
    assert _shipped_targets() == set(TARGETS)


def test_the_kit_comes_from_the_wheel_and_no_test_module_is_importable(
    installed: tuple[Path, Path],
) -> None:
    python, cwd = installed
    probe = (
        "import importlib.util, streamfn.fuzz\n"
        "print(streamfn.fuzz.__file__)\n"
        "print([m for m in ('chunking', 'test_sse', 'test_accumulate', 'conftest')"
        " if importlib.util.find_spec(m)])\n"
    )
    done = _run(python, cwd, "-c", probe)
    assert done.returncode == 0, done.stderr
    where, importable = done.stdout.splitlines()
    assert "site-packages" in where and not Path(where).is_relative_to(ROOT), where
    assert importable == "[]"


@pytest.mark.parametrize("target", TARGETS)
def test_the_target_runs_from_the_installed_kit(installed: tuple[Path, Path], target: str) -> None:
    python, cwd = installed
    done = _run(python, cwd, "-m", f"streamfn.fuzz.{target}")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "10 examples per property passed" in done.stdout, done.stdout


def test_fuzz_providers_seeds_from_named_directories(installed: tuple[Path, Path]) -> None:
    python, cwd = installed
    done = _run(
        python, cwd, "-m", "streamfn.fuzz.fuzz_providers", str(ROOT / "tests" / "transcripts")
    )
    assert done.returncode == 0, done.stderr[-4000:]
    shipped = sum(1 for p in (ROOT / "tests" / "transcripts").glob("*/*") if p.is_file())
    assert f"{shipped} seed bodies from" in done.stderr, done.stderr
    missing = _run(python, cwd, "-m", "streamfn.fuzz.fuzz_providers", str(cwd / "nowhere"))
    assert missing.returncode != 0 and "does not exist" in missing.stderr, missing.stderr
