"""`streamfn.core.replay` across every wire format: bodies, chunk iterables, HTTP errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from streamfn.core import (
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Options,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    Usage,
    replay,
)
from streamfn.core._accumulate import accumulate, check_protocol
from streamfn.core.dialects.proxy import encode_proxy_events
from streamfn.core.wire._eventstream import encode_message
from streamfn.core.wire._sse import encode_sse


def _sse(*events: dict[str, Any], named: bool = False) -> bytes:
    return b"".join(encode_sse(json.dumps(e), event=e["type"] if named else None) for e in events)


def _bedrock() -> bytes:
    def frame(kind: str, payload: dict[str, Any]) -> bytes:
        headers = {
            ":event-type": kind,
            ":content-type": "application/json",
            ":message-type": "event",
        }
        return encode_message(headers, json.dumps(payload).encode())

    return b"".join(
        [
            frame("messageStart", {"role": "assistant"}),
            frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hello "}}),
            frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "there"}}),
            frame("contentBlockStop", {"contentBlockIndex": 0}),
            frame("messageStop", {"stopReason": "end_turn"}),
            frame("metadata", {"usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}}),
        ]
    )


#: api -> (content type, body saying "Hello there" with 3 input / 2 output tokens)
BODIES: dict[str, tuple[str, bytes]] = {
    "openai-chat": (
        "text/event-stream",
        _sse(
            {
                "id": "c1",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello "}}],
            },
            {
                "id": "c1",
                "choices": [{"index": 0, "delta": {"content": "there"}, "finish_reason": "stop"}],
            },
            {
                "id": "c1",
                "choices": [],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            },
        )
        + b"data: [DONE]\n\n",
    ),
    "openai-responses": (
        "text/event-stream",
        _sse(
            {"type": "response.created", "response": {"id": "resp_1"}},
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": "Hello ",
            },
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": "there",
            },
            {
                "type": "response.completed",
                "response": {"id": "resp_1", "usage": {"input_tokens": 3, "output_tokens": 2}},
            },
            named=True,
        ),
    ),
    "anthropic": (
        "text/event-stream",
        _sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude",
                    "stop_reason": None,
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hello "},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "there"},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2},
            },
            {"type": "message_stop"},
            named=True,
        ),
    ),
    "gemini": (
        "text/event-stream",
        _sse(
            {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello "}]}}]},
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "there"}]},
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 3,
                    "candidatesTokenCount": 2,
                    "totalTokenCount": 5,
                },
            },
        ),
    ),
    "ollama": (
        "application/x-ndjson",
        b'{"message":{"role":"assistant","content":"Hello "},"done":false}\n'
        b'{"message":{"role":"assistant","content":"there"},"done":false}\n'
        b'{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",'
        b'"prompt_eval_count":3,"eval_count":2}\n',
    ),
    "bedrock": ("application/vnd.amazon.eventstream", _bedrock()),
    "proxy": (
        "text/event-stream",
        encode_proxy_events(
            [
                Start(),
                TextStart(0),
                TextDelta(0, "Hello "),
                TextDelta(0, "there"),
                TextEnd(0),
                Done(usage=Usage(input=3, output=2)),
            ]
        ),
    ),
}


def _events(api: str, chunks: Any, **kw: Any) -> list[Event]:
    ctype, _ = BODIES[api]
    events = replay(api, chunks, headers=[("content-type", ctype)], **kw)
    check_protocol(events)
    return events


@pytest.mark.parametrize("api", sorted(BODIES))
def test_replay_whole_body(api: str) -> None:
    events = _events(api, BODIES[api][1])
    assert isinstance(events[0], Start) and events[0].api == api
    message = accumulate(events)
    assert message.text == "Hello there", events
    assert message.stop_reason == StopReason.STOP
    assert (message.usage.input, message.usage.output) == (3, 2)


@pytest.mark.parametrize("api", sorted(BODIES))
def test_replay_chunk_iterables_agree(api: str) -> None:
    data = BODIES[api][1]
    whole = _events(api, data)

    def trickle() -> Iterator[bytes]:  # a generator, as a socket reader would be
        for i in range(len(data)):
            yield data[i : i + 1]

    assert _events(api, trickle()) == whole
    assert _events(api, [bytearray(data[:5]), memoryview(data[5:])]) == whole


@pytest.mark.parametrize("api", sorted(BODIES))
def test_replay_http_errors_use_status_and_headers(api: str) -> None:
    body = b'{"error": {"message": "Rate limit reached, slow down", "type": "rate_limit_error"}}'
    events = replay(
        api, body, status=429, headers={"content-type": "application/json", "retry-after": "7"}
    )
    final = events[-1]
    assert isinstance(events[0], Start) and isinstance(final, Error)
    assert (final.kind, final.status, final.retry_after) == (ErrorKind.THROTTLED, 429, 7.0)
    unauthorized = replay(api, b"{}", status=401, headers=[("content-type", "application/json")])
    assert isinstance(unauthorized[-1], Error) and unauthorized[-1].kind == ErrorKind.AUTH


@pytest.mark.parametrize("api", sorted(BODIES))
def test_replay_truncated_body_is_a_network_error(api: str) -> None:
    data = BODIES[api][1]
    final = _events(api, data[: len(data) // 3])[-1]
    assert isinstance(final, Error) and final.kind in (ErrorKind.NETWORK, ErrorKind.PROTOCOL)


@pytest.mark.parametrize("api", sorted(BODIES))
def test_replay_empty_body_ends_early(api: str) -> None:
    final = _events(api, b"")[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.NETWORK


def test_replay_prices_with_a_given_model_and_stops_at_the_terminal_event() -> None:
    model = Model(id="m", provider="ollama", api="ollama", base_url="", price_output=1e6)
    data = BODIES["ollama"][1] + b"not json after the end\n"
    events = replay("ollama", data, model=model, headers=[("content-type", "application/x-ndjson")])
    done = events[-1]
    assert isinstance(done, Done) and done.cost.output == pytest.approx(2.0)


def test_replay_options_caps_apply() -> None:
    data = BODIES["openai-responses"][1]
    events = _events("openai-responses", data, options=Options(max_content_bytes=4))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.LIMIT


def test_replay_unknown_api_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown wire api"):
        replay("carrier-pigeon", b"")


def test_the_response_id_from_the_body_reaches_start_and_the_folded_message() -> None:
    from streamfn.core import Start, accumulate

    body = (
        b'data: {"id":"chatcmpl-42","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
        b'data: {"id":"chatcmpl-42","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    events = replay("openai-chat", body)
    assert isinstance(events[0], Start) and events[0].response_id == "chatcmpl-42"
    assert accumulate(events).response_id == "chatcmpl-42"
    anthropic = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_7",'
        b'"usage":{"input_tokens":1,"output_tokens":0}}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":1}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    assert accumulate(replay("anthropic", anthropic)).response_id == "msg_7"


def test_start_is_chunking_invariant_when_the_id_arrives_after_content() -> None:
    # Found by fuzz/fuzz_providers.py: with Start taken at drain time, its
    # response_id depended on where the chunks fell. Start now goes out right
    # before the first event, a fixed point in the byte stream.
    body = (
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
        b'"item_id":"m","output_index":0,"content_index":0,"delta":"Hi"}\n\n'
        b'event: response.completed\ndata: {"type":"response.completed","response":'
        b'{"id":"resp_late","status":"completed","output":[],"usage":{"input_tokens":1,'
        b'"output_tokens":1}}}\n\n'
    )
    whole = replay("openai-responses", body)
    for cut in range(len(body) + 1):
        assert replay("openai-responses", [body[:cut], body[cut:]]) == whole
