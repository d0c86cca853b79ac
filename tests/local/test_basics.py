"""The basics: ``--version``, ``streamfn.core.__version__``, ``python -m streamfn`` (from
this install and from a built wheel) and a ``serve --help`` written for users."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

import streamfn.core
from streamfn.core._version import UNKNOWN_VERSION, installed_version

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd="/",
    )


def test_the_version_comes_from_the_package_metadata() -> None:
    assert streamfn.core.__version__ == version("streamfn")
    assert installed_version("streamfn-no-such-distribution") == UNKNOWN_VERSION
    done = _run("-m", "streamfn.cli", "--version")
    build = "compiled" if streamfn.core.COMPILED else "pure Python"
    assert done.returncode == 0 and done.stdout == f"streamfn {version('streamfn')} ({build})\n"


def test_python_dash_m_streamfn_is_the_command() -> None:
    done = _run("-m", "streamfn", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: streamfn ")
    namespace = _run("-c", "import streamfn; print(getattr(streamfn, '__file__', None))")
    assert namespace.stdout.strip() == "None"  # still a namespace package


@pytest.mark.slow
def test_python_dash_m_streamfn_from_a_built_wheel(tmp_path: Path) -> None:
    """The wheel ships ``streamfn/__main__.py`` and no ``streamfn/__init__.py``."""
    pip_wheel = ["pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT)]
    built = subprocess.run(
        [sys.executable, "-m", *pip_wheel, "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("streamfn-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "streamfn/__main__.py" in names and "streamfn/__init__.py" not in names
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    import msgspec

    deps = Path(msgspec.__file__).parents[1]  # msgspec and h11, without the editable hook
    env = {"PYTHONPATH": f"{target}{os.pathsep}{deps}", "PATH": os.environ.get("PATH", "")}
    done = _run("-S", "-m", "streamfn", "--version", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("streamfn ")


def test_serve_help_is_written_for_users() -> None:
    done = _run("-m", "streamfn", "serve", "--help")
    assert done.returncode == 0
    text = done.stdout
    assert "composition root" not in text and "`streamfn." not in text
    raw = re.findall(r"--[a-z-]+ ([A-Z][A-Z_]*[A-Z])\b", text)
    assert not [m for m in raw if "_" in m], raw  # every metavar says what it is
    assert "examples:" in text and "environment:" in text
    for variable in ("STREAMFN_SERVER_API_KEY", "STREAMFN_PROXY_TOKEN", "OPENAI_API_KEY"):
        assert variable in text
