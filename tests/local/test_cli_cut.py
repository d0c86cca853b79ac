"""The command line never reports a cut answer as a complete one: `streamfn replay`
of a recording cut inside a tool call exits 1 and its final message keeps the raw
text only; `streamfn chat` against an upstream that resets mid-call exits 1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cut_bodies import CUT_PATH, tool_body
from fake_provider import FakeProvider

from streamfn import cli
from streamfn.cli._command import EXIT_OK, EXIT_RUNTIME


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider(stall=1.0) as fake:
        yield fake


def test_replay_of_a_cut_tool_call_exits_1_and_shows_no_repaired_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tool_body()
    recording = tmp_path / "cut.sse"
    recording.write_bytes(body[: len(body) // 2])  # the upstream stopped mid-arguments
    assert cli.main(["replay", "--api", "openai-chat", str(recording)]) == EXIT_RUNTIME
    captured = capsys.readouterr()
    message = json.loads(captured.out.splitlines()[-1])
    (call,) = [block for block in message["content"] if block["type"] == "tool_call"]
    assert call.get("arguments", {}) == {}  # not {"path": "/home/user/x/x..."}
    assert call["arguments_json"].startswith('{"path": "' + CUT_PATH)
    assert "must not be used" in call["parse_error"]
    assert message["stop_reason"] == "error"
    assert "not complete" in captured.err


def test_replay_of_a_whole_answer_still_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "whole.sse"
    recording.write_bytes(tool_body())
    assert cli.main(["replay", "--api", "openai-chat", str(recording)]) == EXIT_OK
    message = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert message["stop_reason"] == "tool_use"


def test_chat_against_an_upstream_that_resets_mid_call_exits_1(
    upstream: FakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    url = upstream.serve(tool_body(), fault="reset")
    code = cli.main(["chat", "-m", "openai:gpt-4o-mini", "--base-url", url, "tidy up"])
    captured = capsys.readouterr()
    assert code == EXIT_RUNTIME
    assert "stopped with an error" in captured.err
    assert "delete_files(" in captured.out and ")" not in captured.out.split("delete_files(")[1]
