"""streamfn installed the way a user installs it, in a bare virtual environment.

Shared by the tests that check the installed layout (a user's ``mypy``, the
fuzz kit without a checkout). To stay fast and offline, the environment
borrows this one's dependencies through a ``.pth`` file (never its streamfn
install hook: a borrowed folder's own ``.pth`` files are not run), and the
package is built from a copy of the sources without build isolation: what is
checked is the installed layout, which build isolation does not change.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what a build needs: every folder the package-dir mapping names, and the metadata
SOURCES = (
    *sorted(
        {
            folder.split("/")[0]
            for folder in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
                "setuptools"
            ]["package-dir"].values()
        }
    ),
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "NOTICE",
)


def copy_sources(dest: Path) -> Path:
    """The files a build reads, copied to ``dest`` (no tests, no docs, no caches)."""
    dest.mkdir()
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def bare_venv(path: Path) -> Path:
    """A virtual environment without streamfn that sees this one's packages; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # this environment's packages (msgspec, trio, mypy ...), never its streamfn install hook
    (Path(purelib) / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def install(python: Path, source: Path, *extra: str) -> None:
    """pip-install ``source`` into the environment of ``python``, offline and without deps."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            *extra,
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
