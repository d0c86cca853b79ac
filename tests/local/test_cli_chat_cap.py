"""The local chat stops and says so: a default cap, a notice, ``stop_reason: length``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ctranslate2")

from tiny_model import build_tiny_model

from streamfn import cli
from streamfn.cli import _chat as chat
from streamfn.cli._main import build_parser
from streamfn.core._options import Options


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("cap"))


def test_the_local_chat_has_a_default_cap_and_says_when_it_cuts(
    tiny_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --max-tokens: the default cap applies (made small here, so the tiny random
    model surely reaches it before its end token)."""
    monkeypatch.setattr(chat, "DEFAULT_LOCAL_MAX_TOKENS", 5)
    assert cli.main(["chat", "--json", "--model-dir", str(tiny_dir), "hi"]) == 0
    captured = capsys.readouterr()
    done = json.loads(captured.out.splitlines()[-1])
    assert done["type"] == "done" and done["stop_reason"] == "length"
    assert done["usage"]["output"] == 5
    assert "streamfn: the answer stopped at the 5-token cap" in captured.err


def test_max_tokens_sets_the_cap_and_the_notice_names_it(
    tiny_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["chat", "--max-tokens", "6", "--model-dir", str(tiny_dir), "hi"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip()
    assert captured.err == (
        "streamfn: the answer stopped at the 6-token cap (stop_reason: length); "
        "--max-tokens N allows more\n"
    )


def test_the_local_chat_asks_for_the_repetition_guard_and_providers_do_not() -> None:
    parser = build_parser()
    local = chat._options(parser.parse_args(["chat", "hi"]), local=True)
    assert local.extra_body == chat.LOCAL_REPETITION_GUARD
    assert local.max_tokens == chat.DEFAULT_LOCAL_MAX_TOKENS
    remote = chat._options(parser.parse_args(["chat", "-m", "openai:gpt-4o", "hi"]), local=False)
    assert remote == Options()
