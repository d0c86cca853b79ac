"""What the streaming encoders tell a client that the answer did not say: a turn the
provider paused and nobody continued, or stopped at its token limit, is incomplete on
every dialect (never its ``stop`` word; on AG-UI a ``RUN_ERROR``, never a
``RUN_FINISHED``), and a tool call the tool-call checks flagged is not one to run
(AG-UI sends the repaired arguments and keeps flagged calls out of
``pendingToolCallIds``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from streamfn.core import (
    Done,
    Event,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from streamfn.core.dialects.agent_events import AgentEventsEncoder
from streamfn.core.dialects.agui._encode import TOOL_CALL_ERROR, AGUIEncoder
from streamfn.core.dialects.bedrock import BedrockEncoder
from streamfn.core.dialects.gemini import GeminiEncoder
from streamfn.core.dialects.ollama import OllamaEncoder
from streamfn.core.dialects.openai_chat import OpenAIChatEncoder
from streamfn.core.dialects.openai_responses import ResponsesEncoder
from streamfn.core.dialects.ui_message_stream import UIMessageStreamEncoder
from streamfn.core.json._schema_check import SchemaMismatch

PAUSED: list[Event] = [
    Start(),
    TextStart(0),
    TextDelta(0, "searching"),
    TextEnd(0),
    Done(stop_reason=StopReason.STOP, paused=True),
]

#: dialect -> (its encoder, the incomplete word it must say, the stop word it must not)
DIALECTS: dict[str, tuple[Callable[[], Any], bytes, bytes]] = {
    "openai": (
        lambda: OpenAIChatEncoder(response_id="r", model="m", created=0),
        b'"finish_reason":"length"',
        b'"finish_reason":"stop"',
    ),
    "responses": (
        lambda: ResponsesEncoder(response_id="r", model="m"),
        b"response.incomplete",
        b"response.completed",
    ),
    "ui": (
        lambda: UIMessageStreamEncoder(message_id="m"),
        b'"finishReason":"length"',
        b'"finishReason":"stop"',
    ),
    "gemini": (
        lambda: GeminiEncoder(response_id="r", model="m"),
        b'"finishReason":"MAX_TOKENS"',
        b'"finishReason":"STOP"',
    ),
    "ollama": (lambda: OllamaEncoder(model="m"), b'"done_reason":"length"', b'"stop"'),
    "bedrock": (BedrockEncoder, b"max_tokens", b"end_turn"),
    "agent": (
        lambda: AgentEventsEncoder(session_id="s", message_id="m", clock=lambda: 0.0),
        b'"stop_reason":"length"',
        b'"stop_reason":"stop"',
    ),
    "agui": (
        lambda: AGUIEncoder(thread_id="t", run_id="r", message_id="m"),
        b'"code":"paused"',
        b"RUN_FINISHED",
    ),
}


def _encode(encoder: Any, events: list[Event]) -> bytes:
    return b"".join(encoder.encode(event) for event in events)


@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_a_pause_that_was_not_continued_is_reported_incomplete(dialect: str) -> None:
    make, incomplete, finished = DIALECTS[dialect]
    raw = _encode(make(), PAUSED)
    assert incomplete in raw and finished not in raw, raw


#: an answer stopped at its token limit says the same incomplete word, but on AG-UI,
#: whose clients read ``RUN_FINISHED`` as success, the code names the cause
LENGTH_WORDS = {"agui": b'"code":"length"'}


@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_an_answer_stopped_at_its_token_limit_is_reported_incomplete(dialect: str) -> None:
    make, incomplete, finished = DIALECTS[dialect]
    events = [*PAUSED[:-1], Done(stop_reason=StopReason.LENGTH)]
    raw = _encode(make(), events)
    assert LENGTH_WORDS.get(dialect, incomplete) in raw and finished not in raw, raw


@pytest.mark.parametrize("paused", [False, True])
def test_streamfn_reads_an_incomplete_agui_run_back_as_the_done_it_was(paused: bool) -> None:
    """The ``RUN_ERROR`` of an incomplete answer is no failure to a streamfn client: it
    reads back the `Done` the server was given, stopped at its limit or paused."""
    from streamfn.core import replay

    done = (
        Done(stop_reason=StopReason.STOP, paused=True)
        if paused
        else Done(stop_reason=StopReason.LENGTH)
    )
    raw = _encode(AGUIEncoder(thread_id="t", run_id="r", message_id="m"), [*PAUSED[:-1], done])
    events = replay("agui", raw)
    last = events[-1]
    assert isinstance(last, Done), last
    assert (last.stop_reason, last.paused is True) == (done.stop_reason, paused)
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta(0, "searching")]


def _agui(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.split(b"\n\n") if line.startswith(b"data: ")]


def _call(index: int, ident: str, pieces: list[str], end: ToolCallEnd) -> list[Event]:
    deltas: list[Event] = [ToolCallDelta(index, piece) for piece in pieces]
    return [ToolCallStart(index, ident, "get_weather"), *deltas, end]


def test_agui_sends_repaired_arguments_and_does_not_ask_the_client_to_run_flagged_calls() -> None:
    repaired = ToolCallEnd(0, arguments='{"city": "Paris"}', repairs=("dropped text",))
    flagged = ToolCallEnd(1, errors=(SchemaMismatch("city", "required property missing"),))
    events = [
        Start(),
        *_call(0, "good", ['{"city": "Paris"}', "</tool_call>"], repaired),
        *_call(1, "bad", ["{}"], flagged),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    parts = _agui(_encode(AGUIEncoder(thread_id="t", run_id="r", message_id="m"), events))
    args = {p["toolCallId"]: p["delta"] for p in parts if p["type"] == "TOOL_CALL_ARGS"}
    assert args == {"good": '{"city": "Paris"}', "bad": "{}"}
    custom = [p for p in parts if p["type"] == "CUSTOM"]
    assert [(c["name"], c["value"]["toolCallId"]) for c in custom] == [(TOOL_CALL_ERROR, "bad")]
    assert "required property missing" in custom[0]["value"]["errors"]
    finished = parts[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["outcome"]["pendingToolCallIds"] == ["good"]


def test_agui_does_not_ask_the_client_to_run_unchecked_unparsable_arguments() -> None:
    events = [
        Start(),
        *_call(0, "cut", ['{"path": "/ho'], ToolCallEnd(0)),
        Done(stop_reason=StopReason.TOOL_USE),
    ]
    parts = _agui(_encode(AGUIEncoder(thread_id="t", run_id="r", message_id="m"), events))
    assert [p["value"]["toolCallId"] for p in parts if p["type"] == "CUSTOM"] == ["cut"]
    assert "pendingToolCallIds" not in parts[-1]["outcome"]


@pytest.mark.usefixtures("shell")
def test_a_whole_answer_that_paused_is_incomplete_for_the_official_sdks() -> None:
    """Non-streaming: the OpenAI SDK reads ``finish_reason: "length"`` and the Anthropic
    SDK ``stop_reason: "pause_turn"`` for a pause the server did not continue."""
    import anthropic
    import openai
    from loopback_server import KEY, Server

    from streamfn.asgi import App, ServerConfig
    from streamfn.fuzz._events_backend import EventsBackend

    backend = EventsBackend({"m": PAUSED})
    user: Any = [{"role": "user", "content": "search"}]
    with Server(App(backend, ServerConfig(api_key=KEY, head_wait=0))) as server:
        with openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0) as oa:
            chat = oa.chat.completions.create(model="m", messages=user)
        with anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0) as an:
            message = an.messages.create(model="m", max_tokens=10, messages=user)
    assert chat.choices[0].finish_reason == "length"
    assert message.stop_reason == "pause_turn"
