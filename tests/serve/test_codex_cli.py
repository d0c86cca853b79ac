"""Codex CLI, OpenAI's coding agent, finishing a tool-calling turn through `streamfn serve`.

The real ``codex exec`` (npm ``@openai/codex``, pinned in `.ci/run`, found in
``STREAMFN_NODE_DIR`` like the other node clients) talks Responses over HTTP to a
gateway whose model is Claude (the loopback fake provider, scripted): the first answer
calls Codex's own shell tool, Codex runs the command and sends its output back, the
second answer is text that Codex prints before exiting 0. Codex is configured only by
``-c`` flags (``--strict-config`` refuses a key this version does not know) and a
temporary ``CODEX_HOME``: the configuration the manual shows, pointed at this gateway,
with everything that would reach OpenAI switched off.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback_server import KEY, Server, provider_backend
from test_front_end_routes import NODE_DIR
from test_responses_route import CLAUDE, Scripted, _tool_use_body

from streamfn.asgi import App, ServerConfig
from streamfn.asgi._backends import RouterBackend
from streamfn.core import Model
from streamfn.fuzz._fake_bodies import anthropic_body

CODEX = NODE_DIR / "node_modules" / ".bin" / "codex"
VERSION = "0.171.0"  # the version .ci/run pins: its tools and flags change between releases
# the shell computes the marker, so it reaching the upstream proves the command ran
COMMAND = "echo streamfn-$((6 * 7)) | tee proof.txt"
MARKER = "streamfn-42"
ANSWER = "The file proof.txt now holds streamfn-42."


@pytest.fixture
def codex() -> Path:
    """The installed Codex CLI; without it CI fails and a laptop skips, saying why."""
    missing = (
        "node is not installed"
        if shutil.which("node") is None
        else f"@openai/codex is not installed in {NODE_DIR} (.ci/run installs it)"
        if not CODEX.is_file()
        else None
    )
    if missing is None:
        manifest = NODE_DIR / "node_modules" / "@openai" / "codex" / "package.json"
        installed = json.loads(manifest.read_text(encoding="utf-8"))["version"]
        assert installed == VERSION, f"{NODE_DIR} holds @openai/codex {installed}, not {VERSION}"
        return CODEX
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"{missing}: CI must run the Codex CLI test")
    pytest.skip(missing)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Scripted]:
    with Scripted() as fake:
        fake.scripts["codex-turn"] = [
            _tool_use_body("exec_command", {"cmd": COMMAND}),
            anthropic_body([ANSWER]),
        ]
        yield fake


@pytest.fixture(scope="module")
def gateway(upstream: Scripted) -> Iterator[Server]:
    claude = Model(
        id=CLAUDE,
        provider="anthropic",
        api="anthropic",
        base_url=upstream.base_url("ok", "codex-turn", "codex"),
        max_output=64_000,
    )
    backend = provider_backend({"ANTHROPIC_API_KEY": "upstream-key"}, models=[claude])
    backend.models["claude-for-codex"] = claude
    with Server(App(RouterBackend(None, backend), ServerConfig(api_key=KEY))) as server:
        yield server


def _documented_config() -> dict[str, Any]:
    """The ``~/.codex/config.toml`` the manual shows (docs/gateway.md, "Codex CLI")."""
    page = (Path(__file__).parents[2] / "docs" / "gateway.md").read_text(encoding="utf-8")
    [block] = [
        code
        for code in re.findall(r"```toml\n(.*?)```", page, re.DOTALL)
        if "[model_providers.streamfn]" in code
    ]
    return tomllib.loads(block)


def _flags(table: dict[str, Any], prefix: str = "") -> list[str]:
    """``table`` as Codex's ``-c key=value`` flags (dotted keys, TOML values)."""
    flags = []
    for key, value in table.items():
        if isinstance(value, dict):
            flags += _flags(value, f"{prefix}{key}.")
        else:
            flags += ["-c", f"{prefix}{key}={json.dumps(value)}"]  # JSON scalars are TOML
    return flags


def _config(gateway: Server) -> list[str]:
    """The documented configuration pointed at this gateway, with everything else that
    would reach out (analytics, feedback, update checks, telemetry) switched off."""
    config = _documented_config()
    config["model"] = "claude-for-codex"
    provider = config["model_providers"]["streamfn"]
    assert provider["base_url"] == "http://127.0.0.1:8000/v1"  # the documented address
    provider.update(
        base_url=gateway.url + "/v1",
        request_max_retries=0,
        stream_max_retries=0,
        stream_idle_timeout_ms=20_000,
    )
    config |= {
        "check_for_update_on_startup": False,
        "analytics": {"enabled": False},
        "feedback": {"enabled": False},
        "otel": {"exporter": "none", "trace_exporter": "none", "metrics_exporter": "none"},
        "history": {"persistence": "none"},
    }
    return _flags(config)


def _tool_results(request_body: bytes) -> list[dict[str, Any]]:
    sent = json.loads(request_body)
    return [
        block
        for message in sent["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def _run(argv: list[str], environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``argv`` to its end, within a minute; on a hang its whole process group is killed
    (node's wrapper, the native binary and the commands it runs), then the test fails."""
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"codex exec did not finish within 60 s: {err[-4000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_codex_runs_its_shell_tool_and_prints_the_answer(
    codex: Path, gateway: Server, upstream: Scripted, tmp_path: Path
) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (home / ".codex").mkdir(parents=True)
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "SHELL": shutil.which("bash") or "/bin/sh",
        "NO_COLOR": "1",
    }
    environ[_documented_config()["model_providers"]["streamfn"]["env_key"]] = KEY
    before = len(upstream.requests)
    flags = ["--strict-config", "--skip-git-repo-check", "--ephemeral", "--color", "never"]
    sandbox = ["--sandbox", "danger-full-access", "--cd", str(work)]  # root in a container
    argv = [str(codex), "exec", *flags, *sandbox, *_config(gateway), "Write the marker."]
    done = _run(argv, environ)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip().endswith(ANSWER), (done.stdout, done.stderr[-4000:])
    assert (work / "proof.txt").read_text().strip() == MARKER  # Codex ran the command
    first, second = upstream.requests[before:]  # exactly one tool turn, no retries
    for request in (first, second):  # the upstream sees the server's key, never the client's
        assert request.headers["x-api-key"] == "upstream-key"
        assert KEY not in json.dumps(request.headers) and KEY.encode() not in request.body
    tools = json.loads(first.body)["tools"]
    assert "exec_command" in [tool["name"] for tool in tools]
    [result] = _tool_results(second.body)
    assert result["tool_use_id"] == "toolu_01Weather" and MARKER in json.dumps(result)
