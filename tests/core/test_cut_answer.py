"""No encoder has a success word for a cut answer, and `complete()`'s fold never calls
a stream that stopped without a terminal event complete."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from streamfn.core import CompletionError
from streamfn.core._completion import finish_completion
from streamfn.core._events import Done, Event, Start, StopReason, TextDelta, TextEnd, TextStart
from streamfn.core._messages import AssistantMessage, TextContent
from streamfn.core.dialects._cut import CutAnswer
from streamfn.core.dialects.anthropic import AnthropicEncoder, anthropic_message_body
from streamfn.core.dialects.bedrock import BedrockEncoder
from streamfn.core.dialects.gemini import GeminiEncoder
from streamfn.core.dialects.ollama import OllamaEncoder
from streamfn.core.dialects.openai_chat import OpenAIChatEncoder, openai_completion_body
from streamfn.core.dialects.openai_responses import ResponsesEncoder

CUT = (StopReason.ERROR, StopReason.ABORTED)


@pytest.mark.parametrize("stop", CUT)
def test_a_whole_body_refuses_a_cut_answer(stop: StopReason) -> None:
    message = AssistantMessage(content=[TextContent(text="partial")], stop_reason=stop)
    with pytest.raises(CutAnswer):
        openai_completion_body(message, response_id="chatcmpl-1", model="m", created=0)
    with pytest.raises(CutAnswer):
        anthropic_message_body(message, message_id="msg_1", model="m")


ENCODERS: dict[str, tuple[Callable[[], Callable[[Event], bytes]], bytes, bytes]] = {
    # name: (encoder factory, what its error looks like, its success word for the end)
    "openai": (
        lambda: OpenAIChatEncoder(response_id="c", model="m", created=0).encode,
        b'"error"',
        b'"finish_reason":"stop"',
    ),
    "anthropic": (
        lambda: AnthropicEncoder(message_id="msg_1", model="m").encode,
        b"event: error",
        b"end_turn",
    ),
    "gemini": (lambda: GeminiEncoder(response_id="r", model="m").encode, b'"error"', b"STOP"),
    "bedrock": (lambda: BedrockEncoder().encode, b"Exception", b"end_turn"),
    "ollama": (lambda: OllamaEncoder(model="m").encode, b'"error"', b'"done_reason"'),
    "responses": (
        lambda: ResponsesEncoder(response_id="r", model="m").encode,
        b"error",
        b"completed",
    ),
}


@pytest.mark.parametrize("stop", CUT)
@pytest.mark.parametrize("name", list(ENCODERS))
def test_a_done_saying_the_answer_was_cut_streams_as_an_error(name: str, stop: StopReason) -> None:
    make, error_mark, success_word = ENCODERS[name]
    encode = make()
    head = b"".join(encode(e) for e in (Start(), TextStart(0), TextDelta(0, "par")))
    end = encode(Done(stop_reason=stop))
    assert error_mark in end and success_word not in end, end
    assert success_word not in head or name == "responses"  # "in_progress" is no end


def test_complete_refuses_a_stream_without_a_terminal_event() -> None:
    events: list[Event] = [Start(), TextStart(0), TextDelta(0, "partial")]
    with pytest.raises(CompletionError, match="without a terminal event") as info:
        finish_completion(events, raise_on_error=True)
    assert info.value.message.text == "partial"
    assert info.value.message.stop_reason is StopReason.ERROR
    returned = finish_completion([], raise_on_error=False)
    assert returned.stop_reason is StopReason.ERROR


def test_the_shells_timeouts_are_504s_and_other_failures_502s() -> None:
    from streamfn.core._events import Error
    from streamfn.core.http._target import connect_error, connect_timeout_error, parse_target
    from streamfn.core.serve._status import ANTHROPIC, OPENAI, early_error, is_timeout

    target = parse_target("http://10.0.0.5:8000/v1/chat/completions")
    assert is_timeout(connect_timeout_error(target, 2.0))
    assert early_error(OPENAI, connect_timeout_error(target, 2.0)).status == 504
    refused = connect_error(target, ConnectionRefusedError(111, "Connection refused"))
    assert not is_timeout(refused)
    assert early_error(ANTHROPIC, refused).status == 502
    assert early_error(ANTHROPIC, Error.network("upstream 504", status=504)).status == 504


def test_the_fold_takes_a_paused_turn_for_an_incomplete_answer() -> None:
    """A `Done` that says the provider paused the turn folds to `length`: `complete()`
    never returns a paused answer as a finished one."""
    head: list[Event] = [
        Start(),
        TextStart(index=0),
        TextDelta(index=0, delta="so far"),
        TextEnd(index=0),
    ]
    paused = finish_completion([*head, Done(paused=True)], raise_on_error=True)
    assert paused.stop_reason is StopReason.LENGTH
    finished = finish_completion([*head, Done()], raise_on_error=True)
    assert finished.stop_reason is StopReason.STOP
