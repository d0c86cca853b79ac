"""The `streamfn` command line, in-process and as a subprocess, on the tiny local model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ctranslate2")

from tiny_model import build_tiny_model

from streamfn import cli
from streamfn.cli import _commands as commands
from streamfn.cli._command import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, Command
from streamfn.cli._commands import register_command
from streamfn.cli._model_dir import MODEL_DIR_ENV


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("cli"))


def test_json_mode_prints_one_event_per_line(
    tiny_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["chat", "--json", "--max-tokens", "4", "--model-dir", str(tiny_dir), "hi"])
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["type"] == "start" and lines[0]["provider"] == "local"
    assert lines[-1]["type"] == "done" and lines[-1]["stop_reason"] == "length"
    assert lines[-1]["usage"]["output"] == 4


def test_plain_mode_prints_the_text(
    tiny_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_DIR_ENV, str(tiny_dir))
    assert cli.main(["chat", "--max-tokens", "6", "the cat"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("\n") and out.strip()
    assert "\x1b[" not in out  # no colour codes when stdout is not a terminal


def test_unknown_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["chat", "-m", "nosuch:model", "hi"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("streamfn: ") and "streamfn models" in err and err.count("\n") == 1


def test_bad_arguments_exit_2() -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["chat", "--max-tokens", "many"])
    assert caught.value.code == 2


def test_missing_local_model_dir_is_a_runtime_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["chat", "--model-dir", str(tmp_path / "none"), "hi"]) == EXIT_RUNTIME
    assert "streamfn local prepare" in capsys.readouterr().err


def test_missing_api_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert cli.main(["chat", "-m", "anthropic:claude-haiku-4-5", "hi"]) == EXIT_RUNTIME
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_a_registered_command_is_available(capsys: pytest.CaptureFixture[str]) -> None:
    register_command(
        Command("echo-test", "test command", lambda p: p.add_argument("word"), lambda a: 3)
    )
    try:
        assert cli.main(["echo-test", "x"]) == 3
    finally:
        commands.ADDED.pop("echo-test")


def test_local_prepare_from_gguf_and_info(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tiny_model import make_tiny_llama, write_gguf

    gguf = write_gguf(make_tiny_llama(), tmp_path / "t.gguf")
    target = tmp_path / "model"
    assert cli.main(["local", "prepare", "--from", str(gguf), "--model-dir", str(target)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(target)
    assert "converting tensors" in captured.err
    assert cli.main(["local", "info", "--model-dir", str(target)]) == 0
    assert "prepared" in capsys.readouterr().out.splitlines()[1]


def test_subprocess_reads_the_prompt_from_stdin(tiny_dir: Path) -> None:
    env = {**os.environ, MODEL_DIR_ENV: str(tiny_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "streamfn.cli", "chat", "--json", "--max-tokens", "3"],
        input="the cat sat",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "done"
    assert events[-1]["usage"]["input"] > 3  # the piped prompt, in the chat template


def test_help_teaches_with_examples() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "streamfn.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert 'streamfn chat "What is the capital of France?"' in done.stdout
    assert "local prepare --from" in done.stdout


def test_replay_prints_events_as_json_lines_then_the_final_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    body = tmp_path / "body.sse"
    body.write_bytes(
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Par"}}]}\n\n'
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"is"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    assert cli.main(["replay", "--api", "openai-chat", str(body)]) == EXIT_OK
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [ln["type"] for ln in lines] == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
        "assistant",
    ]
    assert lines[-1]["content"] == [{"type": "text", "text": "Paris"}]  # unset fields left out


def test_replay_of_a_missing_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["replay", "--api", "anthropic", "/nonexistent.sse"]) == EXIT_USAGE
    assert "no such file" in capsys.readouterr().err
