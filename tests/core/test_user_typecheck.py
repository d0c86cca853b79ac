"""A user's ``mypy --strict`` sees streamfn's types after the README's install.

Both layouts a user gets: the editable install the README gives
(``--config-settings editable_mode=strict``: setuptools' default editable mode
maps the package folders with an import hook that mypy cannot follow, so a
user's ``mypy`` reported "Cannot find implementation or library stub for
module named streamfn.core") and a normal install of the built wheel.

The editable install takes its pip flags from the README's second command (the
tests' install, the last one a new user runs in the venv), so a README command
that drops strict mode fails here, not in a user's ``mypy``.

Each install goes into a bare virtual environment (`installed`: offline,
borrowing this environment's dependencies).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from installed import bare_venv, copy_sources, install

pytest.importorskip("mypy")

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_editable_flags() -> list[str]:
    """The pip flags of the README's second command (``pip install FLAGS '.[test]'``)."""
    commands = re.findall(r"^python3 -m venv .*$", README.read_text(encoding="utf-8"), re.M)
    words = shlex.split(commands[1].split("&&")[1])
    flags = words[words.index("install") + 1 : -1]  # the last word is the target
    assert "-e" in flags and words[-1] == ".[test]", words
    return flags


USER_PROGRAM = """\
import trio

from streamfn.core import Context, Options, TextDelta, ToolResultMessage, model
from streamfn.io_asyncio import complete
from streamfn.io_sync import Client
from streamfn.io_trio import stream
from streamfn.local import LocalModel


def blocking() -> str:
    with Client() as client, client.stream(model("ollama:x"), Context.of("Hi")) as events:
        return "".join(e.delta for e in events if isinstance(e, TextDelta))


async def main() -> str:
    chosen = model("ollama:llama3.2")
    options = Options(thinking="high", max_tokens=100)
    async with stream(chosen, Context.of("Hi"), options) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                print(event.delta, end="")
    message = await complete(chosen, Context.of("Hi"), raise_on_error=False)
    result = ToolResultMessage.of("call_1", {"ok": True}, tool_name="check")
    with LocalModel.default() as local:
        print(local.info.id, result.content)
    return message.text


trio.run(main)
"""

#: a user's mistakes that the types must catch (so a passing check is not a vacuous one)
MISTAKES = """\
from streamfn.core import Options, get_model

Options(thinking="extreme")
get_model(42)
"""


def _mypy(python: Path, cache: Path, *programs: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "mypy", "--strict", "--cache-dir", str(cache), *map(str, programs)],
        capture_output=True,
        text=True,
        cwd=programs[0].parent,
        check=False,
    )


@pytest.mark.parametrize("layout", ["editable", "wheel"])
def test_mypy_strict_on_a_user_program(
    tmp_path_factory: pytest.TempPathFactory, layout: str
) -> None:
    work = tmp_path_factory.mktemp(layout)
    source = copy_sources(work / "streamfn-src")
    python = bare_venv(work / "venv")
    if layout == "editable":
        install(python, source, *readme_editable_flags())
    else:
        install(python, source)
        # the licence travels with the wheel (PEP 639 license-files)
        shipped = list(
            (work / "venv").glob("lib/*/site-packages/streamfn-*.dist-info/licenses/LICENSE")
        )
        assert shipped and "Apache License" in shipped[0].read_text(), shipped
        notice = list(
            (work / "venv").glob("lib/*/site-packages/streamfn-*.dist-info/licenses/NOTICE")
        )
        assert notice and "models.dev" in notice[0].read_text(), notice
    user = work / "user"
    user.mkdir()
    (user / "app.py").write_text(USER_PROGRAM)
    (user / "mistakes.py").write_text(MISTAKES)
    cache = tmp_path_factory.getbasetemp() / "mypy-cache"  # shared: the second run is quicker
    checked = _mypy(python, cache, user / "app.py", user / "mistakes.py")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert all(line.startswith("mistakes.py:") for line in errors), checked.stdout
    assert any('Argument "thinking" to "Options"' in line for line in errors)
    assert any('Argument 1 to "get_model"' in line for line in errors)
    assert len(errors) == 2, checked.stdout
