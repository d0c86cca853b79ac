"""Python calls per live read: the pure build's hot path held in calls, not in time.

A live stream hands a call one event per read, and in pure Python each function call
on the way from `receive_data` to the emitter costs about as much as finding the event
in the read. So the number of Python calls per read of a text or thinking delta is
held here: a count, the same on any machine and under any load. In the compiled build
those functions are C, which the profiler does not see: the count is lower there.
"""

from __future__ import annotations

import json
import sys
from types import FrameType
from typing import Any

import pytest

from streamfn.core import Context, Model, Options, open_call

#: receive_data, the decoder's step, the provider's run, its flush, the emitter
MOST_CALLS_PER_READ = 5
_READS = 40

_MODELS = {
    "openai": Model(id="m", provider="openai", api="openai-chat", base_url="http://h"),
    "anthropic": Model(id="m", provider="anthropic", api="anthropic", base_url="http://h"),
}


def _openai(kind: str) -> list[bytes]:
    field = "content" if kind == "text" else "reasoning_content"

    def chunk(delta: dict[str, Any]) -> bytes:
        body = {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    return [chunk({"role": "assistant", "content": ""})] + [
        chunk({field: f" word{n}"}) for n in range(_READS)
    ]


def _anthropic(kind: str) -> list[bytes]:
    def event(body: dict[str, Any]) -> bytes:
        return f"event: {body['type']}\ndata: {json.dumps(body)}\n\n".encode()

    block = {"type": "text", "text": ""} if kind == "text" else {"type": "thinking", "thinking": ""}
    delta_type = "text_delta" if kind == "text" else "thinking_delta"
    start = {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}}
    return [
        event(start),
        event({"type": "content_block_start", "index": 0, "content_block": block}),
    ] + [
        event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": delta_type, kind: f" word{n}"},
            }
        )
        for n in range(_READS)
    ]


@pytest.mark.parametrize("kind", ["text", "thinking"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_live_delta_read_takes_at_most_five_python_calls(provider: str, kind: str) -> None:
    reads = (_openai if provider == "openai" else _anthropic)(kind)
    call = open_call(_MODELS[provider], Context(), Options(api_key="k"))
    call.receive_response(200, [("content-type", "text/event-stream")])
    warm, timed = reads[:4], reads[4:]
    for read in warm:  # the id is read, the block opens
        call.receive_data(read)
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        calls += event == "call"

    events = []
    sys.setprofile(profile)
    try:
        for read in timed:
            events += call.receive_data(read)
    finally:
        sys.setprofile(None)
    assert [type(e).__name__ for e in events] == [f"{kind.title()}Delta"] * len(timed)
    assert calls <= MOST_CALLS_PER_READ * len(timed), f"{calls / len(timed):.2f} calls per read"
