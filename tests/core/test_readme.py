"""Every code block of README.md, of every page in docs/, and every program in examples/
runs, so the documentation cannot drift from the code.

Fenced ``python`` and ``sh`` blocks are extracted and run in subprocesses, from
``tests/`` (a block fenced ``bash``, ``py`` ... fails the suite: it would not run):

- blocks that talk to a provider run against the loopback fake provider
  (`fake_provider.py`), reached through ``OPENAI_BASE_URL`` /
  ``ANTHROPIC_BASE_URL`` exactly as a user points the official SDKs elsewhere;
- the local-model blocks run on a tiny random model placed where the default
  model is cached (``XDG_CACHE_HOME``), so ``LocalModel.default()`` finds it;
- the blocks that talk to ``streamfn serve`` run against a real ``streamfn
  serve`` (on the tiny model) on a free port: ``127.0.0.1:8000`` in the block
  is replaced by that port, the only change made to any block.

A block that streams from a provider runs a second time with both providers
answering 401, and must then exit non-zero: an example that prints an empty
answer and exits 0 when the call failed teaches users to lose errors. It runs a
third time with no key set at all, and must fail the documented way: exit
non-zero, an ``auth`` failure naming the variable to set, never the traceback
of another exception (the README's blocks and the programs in examples/ with no
traceback at all; a snippet of the manual may end in the `StreamError` or
`CompletionError` it documents).

Checked structurally, not run (say so with ``<!-- readme-test: structural -->``
on the line before the block; the README's first block is always structural):
the README's first block (its first command downloads a real 93 MB model into
a fresh virtual environment, its second reinstalls the test suite), install
blocks (building and installing the package is what ``test_user_typecheck.py``
does, both ways) and blocks that bind a network address. The structural checks
hold them to what exists: the extras, the console script, the wheel's name, the
pip flags, the flags of ``streamfn serve``. Blocks without a language (or in a
data language: ``text``, ``json``, ``toml`` ...) are not run; the gateway's
``toml`` configuration files are loaded.
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
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
#: the folders whose code, docstrings and notes ship to users
SHIPPED = [
    "core",
    "asgi",
    "cli",
    "entry",
    "fuzz",
    "io_asyncio",
    "io_common",
    "io_sync",
    "io_trio",
    "ledger",
    "local",
]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SERVER_ADDRESS = "127.0.0.1:8000"
#: other names for the languages that run: a block fenced so would silently not run
NOT_RUN_ALIASES = {"py", "python3", "pycon", "bash", "shell", "zsh", "console"}


@dataclass(frozen=True)
class Block:
    source: str  # the file, relative to the checkout: README.md, docs/..., examples/...
    line: int  # 1-based line of the opening fence
    language: str  # "python" or "sh" for the blocks that run, else as written
    code: str
    marker: str  # the readme-test marker before it, or ""

    @property
    def id(self) -> str:
        if self.source.endswith(".py"):  # a whole program
            return self.source
        first = next((ln for ln in self.code.splitlines() if ln.strip()), "")
        return f"{self.source}:L{self.line}-{self.language}-{first[:40]}"


def markdown_files() -> list[Path]:
    """The README, then every page of the documentation site."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def markdown_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    source = path.relative_to(ROOT).as_posix()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)```\s*([\w+-]*)\s*$", lines[i])
        if fence is None:
            i += 1
            continue
        indent = fence[1]
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        previous = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        marker = re.match(r"^\s*<!-- readme-test: (\w+)", previous)
        body = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[i + 1 : end]]
        blocks.append(
            Block(source, i + 1, fence[2], "\n".join(body) + "\n", marker[1] if marker else "")
        )
        i = end + 1
    return blocks


def example_programs() -> list[Block]:
    """Each program in examples/ is one block that runs."""
    return [
        Block(path.relative_to(ROOT).as_posix(), 1, "python", path.read_text(encoding="utf-8"), "")
        for path in sorted(EXAMPLES.glob("*.py"))
    ]


BLOCKS = [block for path in markdown_files() for block in markdown_blocks(path)]
CODE = [b for b in BLOCKS if b.language in ("python", "sh")]
README_CODE = [b for b in CODE if b.source == "README.md"]
STRUCTURAL = [b for b in CODE if b.marker == "structural" or b is README_CODE[0]]
RUN = [b for b in CODE if b not in STRUCTURAL] + example_programs()


def streams_from_a_provider(block: Block) -> bool:
    """Whether a block calls OpenAI or Anthropic (through the environment's base URLs)
    and streams or completes: pointed at a failing provider it must not exit 0."""
    return (
        block.language == "python"
        and re.search(r"""\b(?:get_)?model\(\s*["'](openai|anthropic):""", block.code) is not None
        and re.search(r"\b(stream|complete|receive_data)\(", block.code) is not None
        and "FakeProvider" not in block.code  # it brings its own provider and faults
    )


FAILING = [b for b in RUN if streams_from_a_provider(b)]


def test_every_fenced_block_is_text_or_run_or_checked() -> None:
    aliased = [b.id for b in BLOCKS if b.language in NOT_RUN_ALIASES]
    assert not aliased, f"fence these as python or sh (they run), or without a language: {aliased}"
    assert len(README_CODE) >= 5 and len(RUN) >= 20 and len(STRUCTURAL) >= 3
    assert {b.marker for b in CODE} <= {"", "structural"}
    assert len(example_programs()) >= 6  # one per entry point at least
    assert len([b for b in FAILING if b.source == "README.md"]) >= 2


def test_the_gateway_config_examples_load() -> None:
    """Every ``--config`` file shown is one `streamfn serve` accepts as written."""
    from streamfn.cli._serve_config import load_gateway_config

    configs = [b for b in BLOCKS if b.language == "toml" and "[[models]]" in b.code]
    assert configs
    for block in configs:
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"readme-gateway-{os.getpid()}.toml"
        path.write_text(block.code, encoding="utf-8")
        try:
            config = load_gateway_config(path)
        finally:
            path.unlink()
        assert config is not None, block.id


def test_the_serve_examples_that_do_not_run_use_flags_serve_has() -> None:
    """Structural: the scale-out example binds a private address and starts background
    servers, so it is not run here (tests touch loopback only); every flag such a
    block passes to ``streamfn serve`` must exist."""
    blocks = [b for b in STRUCTURAL if "streamfn serve" in b.code]
    assert any("--workers" in b.code for b in blocks)
    help_text = subprocess.run(
        [str(Path(sys.executable).parent / "streamfn"), "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for block in blocks:
        flags = set(re.findall(r"(--[a-z][a-z-]+)", block.code))
        assert all(flag in help_text for flag in flags), (block.id, flags - set(help_text.split()))


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
    first = README_CODE[0]
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


def test_every_editable_install_shown_keeps_type_checking() -> None:
    """Each ``pip install -e`` of the README and the manual, in a block or in prose, is
    in strict editable mode: setuptools' default mode maps the package folders with an
    import hook mypy cannot follow, so one such command in a venv (the tests' install
    after the first one's) leaves a user's ``mypy --strict`` without ``streamfn.core``."""
    shown = [
        (path.name, command)
        for path in markdown_files()
        for command in re.findall(r"pip install [^`\n]*", path.read_text(encoding="utf-8"))
        if " -e " in f" {command} "
    ]
    assert len(shown) >= 4, shown
    loose = [(name, c) for name, c in shown if "--config-settings editable_mode=strict" not in c]
    assert not loose, f"add --config-settings editable_mode=strict to: {loose}"


def test_the_install_blocks_name_the_real_wheel_and_extras() -> None:
    installs = [b for b in STRUCTURAL if b is not README_CODE[0] and "pip install" in b.code]
    project = PYPROJECT["project"]
    wheel = f"dist/{project['name']}-{project['version']}-py3-none-any.whl"
    commands = [c for block in installs for c in _commands(block) if "pip " in c]
    assert any(wheel in c for c in commands), commands
    for command in commands:
        _check_pip_install(command)


def test_the_readme_is_a_front_door() -> None:
    """Short, and every page it links to exists."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for target in re.findall(r"\]\((docs/[^)#]+|examples/[^)#]+|LICENSE|CHANGELOG\.md)", text):
        assert (ROOT / target).exists(), target


def test_nothing_cites_what_a_reader_cannot_see() -> None:
    """No issue numbers, no paths outside the checkout, no numbered reference documents."""
    unseen = re.compile(r"\bissue \d|\.\./shared|reference (document )?\d{3}|/work/", re.I)
    shipped = [p for d in SHIPPED for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".md")]
    for path in [*markdown_files(), *EXAMPLES.glob("*.py"), *shipped]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not unseen.search(line), f"{path.relative_to(ROOT)}:{number}: {line}"


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

    from streamfn.local._fetch import default_model_dir, is_prepared

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
            "STREAMFN_ADMIN_KEY": "readme-admin-key",  # docs/dashboard.md's routes
        }
        server = subprocess.Popen(
            [str(Path(bin_dir) / "streamfn"), "serve", "--port", str(port), "--no-providers"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_healthy(port, server)
            failing = env | {
                "OPENAI_BASE_URL": fake.base_url("401", "openai-chat"),
                "ANTHROPIC_BASE_URL": fake.base_url("401", "anthropic"),
            }
            # no key anywhere; an unkeyed request that got out would meet a 401
            keyless = {k: v for k, v in failing.items() if not k.endswith("_API_KEY")}
            yield {"env": env, "failing_env": failing, "keyless_env": keyless, "port": port}
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


#: what a block that runs must print (a piece of the fake provider's or model's answer),
#: keyed by a piece of its code: the first key found in a block applies (so the more
#: specific keys come first); a block no key matches need only exit 0 cleanly
EXPECTED = {
    # docs/migrating.md's LiteLLM example (Anthropic) and troubleshooting's last event
    'get_model("anthropic:claude-sonnet-4-6")  # ANTHROPIC': ["Bonjour le monde", "tokens out, $"],
    "last = event": ["ended: stop, ", "tokens out"],
    # options.md's spending cap: a prompt priced over it is never sent
    'api_key="sk-unused", max_cost=': ["not sent: the input of this request"],
    'register_api("lines", sys.modules': ["TextDelta(index=0, delta=', world')", "Done("],
    'stream_sync(Context.of("What is the capital': ["Done("],  # every event printed
    "from streamfn.local import LocalModel": [],  # the tiny model's text is noise
    'Context.of("Why is the sky blue?")': ["Bonjour le monde", "Hello"],  # Anthropic, OpenAI
    "estimate=True)": ["estimate: 4 characters a token"],
    "counted by": ["input tokens, counted by Anthropic's count_tokens endpoint"],
    "open_count(model": [],  # a number: the fake counts a quarter of the body's bytes
    "import http.client": ["Hello, world"],
    "from streamfn.io_sync import": ["Hello, world"],
    "from streamfn.io_asyncio import Client": ["Hello, world"],
    "import trio": ["Hello, world"],
    "from openai import OpenAI": [],
    "curl -N": ["data: [DONE]"],
    "from streamfn.fuzz import FakeProvider": [],
    "import lines_wire": [],
    "said = 'Checking.": ["name='get_weather'", "arguments={'city': 'Paris'}"],
    # the fake answers prose, so the typed error is what shows
    "class Weather(msgspec.Struct)": ["anthropic answered 'Bonjour le monde", "is not JSON"],
    "hour = Options(cache=[CachePoint": ['"ephemeral"', '"cachePoint"', "streamfn-"],
    "DocumentContent.from_bytes(PDF": ["Bonjour le monde"],
}


def _run(block: Block, env: dict[str, str], port: int) -> subprocess.CompletedProcess[str]:
    code = block.code.replace(SERVER_ADDRESS, f"127.0.0.1:{port}")
    if block.language == "python":
        # a name the docs import from an old path would warn: make that fail
        strict = ["-W", "error::DeprecationWarning:__main__"]
        strict += ["-W", "error::DeprecationWarning:lines_wire"]
        command = [sys.executable, *strict, "-c", code]
    else:
        command = ["bash", "-euo", "pipefail", "-c", code]
    # in tests/, where the docs' example modules (lines_wire.py) live
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        cwd=ROOT / "tests",
    )


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_block_runs(block: Block, world: dict[str, Any]) -> None:
    done = _run(block, world["env"], world["port"])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    wanted = next((v for k, v in EXPECTED.items() if k in block.code), [])
    for piece in wanted:
        assert piece in done.stdout, (piece, done.stdout[-2000:])
    assert done.stdout.strip() or not wanted, "the block printed nothing"


@pytest.mark.parametrize("block", FAILING, ids=[b.id for b in FAILING])
def test_block_fails_loudly_when_the_provider_fails(block: Block, world: dict[str, Any]) -> None:
    """Pointed at providers that answer 401, a streaming example must not exit 0: it
    raises (``stream(..., raise_on_error=True)``, ``complete()``, ``raise_for_error``)
    or handles the `Error` event and says so."""
    done = _run(block, world["failing_env"], world["port"])
    assert done.returncode != 0, f"exit 0 on a failed call; stdout: {done.stdout[-1000:]}"
    assert "401" in done.stderr + done.stdout or "auth" in done.stderr + done.stdout


#: the variables the blocks' providers read their keys from
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
#: the exceptions a snippet of the manual may end in with no key: the documented ones
DOCUMENTED_RAISES = ("streamfn.core._errors.StreamError:", "streamfn.core._errors.CompletionError:")


@pytest.mark.parametrize("block", FAILING, ids=[b.id for b in FAILING])
def test_block_without_a_key_fails_the_documented_way(block: Block, world: dict[str, Any]) -> None:
    """With no key set, a block fails as a rejected key does: a non-zero exit and a
    failure that names the variable to set, not another exception's traceback."""
    done = _run(block, world["keyless_env"], world["port"])
    said = done.stderr + done.stdout
    assert done.returncode != 0, f"exit 0 without a key; stdout: {done.stdout[-1000:]}"
    assert any(name in said for name in KEY_VARIABLES), said[-2000:]
    if "Traceback" in done.stderr:
        last = done.stderr.strip().splitlines()[-1]
        program = block.source == "README.md" or block.source.startswith("examples/")
        assert not program, f"a traceback where one line should say it: {done.stderr[-2000:]}"
        documented = DOCUMENTED_RAISES
        if "with_credentials(" in block.code:  # the sans-I/O path raises before a stream
            documented += ("streamfn.core._errors.MissingCredentials:",)
        assert last.startswith(documented), done.stderr[-2000:]
