"""What a plain ``pip install streamfn`` gives: the core on msgspec alone, every provider
through the blocking shell (h11 is a base dependency), and hints that name the extra."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from blocked_imports import blocking
from fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]

#: what a plain install lacks: every optional extra's packages
EXTRAS_ONLY = ("trio", "hypercorn", "ctranslate2", "tokenizers", "jinja2", "gguf", "numpy")


def _python(code: str, blocked: tuple[str, ...], *args: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", blocking(blocked, code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_h11_is_a_base_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(dep.startswith("h11") for dep in project["dependencies"])


def test_the_core_imports_with_msgspec_alone() -> None:
    code = "import streamfn.core, streamfn.core.catalogue._models\nprint(streamfn.core.model('local').api)"
    assert _python(code, ("h11", *EXTRAS_ONLY)).strip() == "local"


def test_a_plain_install_chats_with_a_provider() -> None:
    with FakeProvider() as fake:
        code = "from streamfn.cli import main\nraise SystemExit(main(sys.argv[1:]))"
        out = _python(
            code,
            EXTRAS_ONLY,
            "chat",
            "-m",
            "openai:gpt-4o-mini",
            "--base-url",
            fake.base_url("ok", "openai-chat"),
            "Hi",
            OPENAI_API_KEY="sk-test",
        )
    assert out.strip()


def test_the_local_model_without_its_extra_names_it_and_the_editable_form() -> None:
    code = (
        "from streamfn.cli import main\n"
        "import contextlib, io\n"
        "err = io.StringIO()\n"
        "with contextlib.redirect_stderr(err):\n"
        "    code = main(['chat', 'hi'])\n"
        "print(code, err.getvalue())"
    )
    out = _python(code, EXTRAS_ONLY)
    assert out.startswith("1 streamfn: ")
    assert "pip install 'streamfn[local]'" in out and "editable_mode=strict -e '.[local]'" in out
    assert "[trio]" not in out


@pytest.mark.parametrize("module", ["streamfn.io_sync", "streamfn.io_asyncio"])
def test_the_blocking_and_asyncio_shells_need_no_extra(module: str) -> None:
    _python(f"import {module}", EXTRAS_ONLY)


def test_importing_the_shells_imports_neither_the_local_model_nor_the_command_line() -> None:
    """What the shells share is in `streamfn.io_common`; the model loads on first use."""
    code = (
        "import sys\n"
        "import streamfn.io_sync, streamfn.io_asyncio, streamfn.io_trio\n"
        "names = ('streamfn.local', 'streamfn.cli')\n"
        "print(sorted(m for m in sys.modules if m in names or m.startswith(('streamfn.local.', 'streamfn.cli.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out == "[]\n"
