"""Every code block of README.md runs, so the README cannot drift from the code.

Fenced ``python`` and ``sh`` blocks are extracted and run in subprocesses:

- blocks that talk to a provider run against the loopback fake provider
  (`fake_provider.py`), reached through ``OPENAI_BASE_URL`` /
  ``ANTHROPIC_BASE_URL`` exactly as a user points the official SDKs elsewhere;
- the local-model block runs on a tiny random model placed where the default
  model is cached (``XDG_CACHE_HOME``), so ``LocalModel.default()`` finds it;
- the blocks that talk to ``streamfn serve`` run against a real ``streamfn
  serve`` (on the tiny model) on a free port: ``127.0.0.1:8000`` in the block
  is replaced by that port, the only change made to any block.

Checked structurally, not run (say so with ``<!-- readme-test: structural -->``
before the block, or by being the first block): the first block (its first
command downloads a real 93 MB model into a fresh virtual environment, its
second reinstalls the test suite) and the install block (building and
installing the package is what ``test_user_typecheck.py`` does, both ways).
The structural checks hold them to what exists: the extras, the console
script, the wheel's name, the pip flags. Blocks without a language are text
(the event grammar, a listing of commands) and are not run; the listed
commands are exercised by ``test_cli_first_hour.py``.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SERVER_ADDRESS = "127.0.0.1:8000"


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    marker: str  # the readme-test marker before it, or ""

    @property
    def id(self) -> str:
        first = next((ln for ln in self.code.splitlines() if ln.strip()), "")
        return f"L{self.line}-{self.language}-{first[:40]}"


def readme_blocks() -> list[Block]:
    lines = README.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if fence is None:
            i += 1
            continue
        end = lines.index("```", i + 1)
        previous = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        marker = re.match(r"^<!-- readme-test: (\w+)", previous)
        blocks.append(
            Block(
                i + 1, fence[1], "\n".join(lines[i + 1 : end]) + "\n", marker[1] if marker else ""
            )
        )
        i = end + 1
    return blocks


BLOCKS = readme_blocks()
CODE = [b for b in BLOCKS if b.language in ("python", "sh")]
STRUCTURAL = [b for b in CODE if b.marker == "structural" or b is CODE[0]]
RUN = [b for b in CODE if b not in STRUCTURAL]


def test_every_fenced_block_is_text_or_run_or_checked() -> None:
    assert {b.language for b in BLOCKS} <= {"", "python", "sh", "toml"}
    assert len(RUN) >= 5 and len(STRUCTURAL) == 3
    assert {b.marker for b in CODE} <= {"", "structural"}


def test_the_gateway_config_example_loads() -> None:
    """The README's ``--config`` file is one `streamfn serve` accepts as written."""
    from streamfn.local.serve_config import load_gateway_config

    (block,) = [b for b in BLOCKS if b.language == "toml"]
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"readme-gateway-{os.getpid()}.toml"
    path.write_text(block.code, encoding="utf-8")
    try:
        config = load_gateway_config(path)
    finally:
        path.unlink()
    assert config is not None


def test_the_scale_out_example_uses_flags_serve_has() -> None:
    """Structural: it binds a private address and starts background servers, so it is
    not run here (tests touch loopback only); every flag it passes must exist."""
    (block,) = [b for b in STRUCTURAL if "--workers" in b.code]
    help_text = subprocess.run(
        [str(Path(sys.executable).parent / "streamfn"), "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flags = set(re.findall(r"(--[a-z][a-z-]+)", block.code))
    assert flags and all(flag in help_text for flag in flags), flags - set(help_text.split())


# -- structural ----------------------------------------------------------------------


def _commands(block: Block) -> list[str]:
    return [ln for ln in block.code.splitlines() if ln.strip() and not ln.startswith("#")]


def _check_pip_install(command: str) -> None:
    """Every extra named exists, and the flags are ones pip takes."""
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    for named in re.findall(r"\[([\w,]+)\]", command):
        assert set(named.split(",")) <= extras, named
    words = shlex.split(command)
    if "--config-settings" in words:
        assert words[words.index("--config-settings") + 1] == "editable_mode=strict"


def test_the_first_commands_are_the_two_jobs_and_name_what_exists() -> None:
    first = CODE[0]
    assert README.read_text(encoding="utf-8").startswith("# streamfn\n\n```sh\n")
    local, tests = _commands(first)
    for command in (local, tests):
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install ")
        _check_pip_install(command)
    assert "'.[local]'" in local and "'.[test]'" in tests
    script = local.rsplit("&& ", 1)[1]
    assert shlex.split(script)[:2] == [".venv/bin/streamfn", "chat"]
    assert "streamfn" in PYPROJECT["project"]["scripts"]
    assert tests.endswith("&& .venv/bin/python -m pytest -q")


def test_the_install_block_names_the_real_wheel() -> None:
    (block,) = [b for b in STRUCTURAL if b is not CODE[0] and "pip install" in b.code]
    project = PYPROJECT["project"]
    wheel = f"dist/{project['name']}-{project['version']}-py3-none-any.whl"
    commands = _commands(block)
    assert any(wheel in c for c in commands), commands
    for command in commands:
        _check_pip_install(command)


# -- run -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The fake provider, the tiny model in the default cache, and a `streamfn serve`."""
    pytest.importorskip("ctranslate2")
    pytest.importorskip("hypercorn")
    from tiny_model import build_tiny_model

    from streamfn.local.fetch import default_model_dir, is_prepared

    cache = tmp_path_factory.mktemp("xdg-cache")
    model_dir = default_model_dir({"XDG_CACHE_HOME": str(cache)})
    model_dir.parent.mkdir(parents=True)
    build_tiny_model(cache / "build").rename(model_dir)
    assert is_prepared(model_dir)  # so nothing downloads the real model
    port = _free_port()
    bin_dir = str(Path(sys.executable).parent)
    with FakeProvider() as fake:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {
            "XDG_CACHE_HOME": str(cache),
            "PATH": bin_dir + os.pathsep + env.get("PATH", ""),
            "OPENAI_API_KEY": "sk-readme",
            "ANTHROPIC_API_KEY": "sk-ant-readme",
            "OPENAI_BASE_URL": fake.base_url("ok", "openai-chat"),
            "ANTHROPIC_BASE_URL": fake.base_url("ok", "anthropic"),
            "NO_COLOR": "1",
        }
        server = subprocess.Popen(
            [str(Path(bin_dir) / "streamfn"), "serve", "--port", str(port), "--no-providers"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_healthy(port, server)
            yield {"env": env, "port": port}
        finally:
            server.terminate()
            _, err = server.communicate(timeout=30)
            assert b"Traceback" not in err, err.decode()


def _wait_healthy(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"streamfn serve exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("streamfn serve did not become healthy")


#: what each block that runs must print (a piece of the fake provider's or model's answer)
EXPECTED = {
    "import trio": ["Bonjour le monde", "Hello"],  # Anthropic then OpenAI, both fakes
    "import http.client": ["Hello, world"],
    "from streamfn.local import LocalModel": ["Done("],
    "from openai import OpenAI": [],
    "curl -N": ["data: [DONE]"],
    'register_api("lines", sys.modules': ["TextDelta(index=0, delta=', world')", "Done("],
    "from streamfn.fuzz import FakeProvider": [],
    "import lines_wire": [],
    "said = 'Checking.": ["name='get_weather'", "arguments={'city': 'Paris'}"],
    # the fake answers prose, so the typed error is what shows
    "class Weather(msgspec.Struct)": ["anthropic answered 'Bonjour le monde", "is not JSON"],
    "hour = Options(cache=[CachePoint": ['"ephemeral"', '"cachePoint"', "streamfn-"],
}


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_block_runs(block: Block, world: dict[str, Any]) -> None:
    code = block.code.replace(SERVER_ADDRESS, f"127.0.0.1:{world['port']}")
    if block.language == "python":
        command = [sys.executable, "-c", code]
    else:
        command = ["bash", "-euo", "pipefail", "-c", code]
    # in tests/, where the README's example modules (lines_wire.py) live
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=world["env"],
        timeout=120,
        check=False,
        cwd=ROOT / "tests",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    (wanted,) = [v for k, v in EXPECTED.items() if k in block.code]
    for piece in wanted:
        assert piece in done.stdout, (piece, done.stdout[-2000:])
    assert done.stdout.strip() or not wanted, "the block printed nothing"
