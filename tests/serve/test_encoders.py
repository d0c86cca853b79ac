"""Encoders are the decoders' inverse: decode(encode(events)) gives the same message.

Here for any stream, whatever the format can carry (the exact round trip of
what each format can carry is `tests/fuzz/test_fuzz_package.py`).

"The same" is up to what each wire format cannot carry, listed here:

- OpenAI chat chunks: no signatures (thinking, text, tool calls), no redacted
  thinking, no opaque blocks, no block boundaries between two adjacent blocks
  of the same kind (they merge), cache writes count as prompt tokens.
- Anthropic events: no text/tool-call signatures, no reasoning token count.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given

from streamfn.core import (
    AssistantMessage,
    Done,
    Event,
    OpaqueContent,
    Start,
    TextContent,
    ThinkingContent,
    ToolCall,
    replay,
)
from streamfn.core._accumulate import accumulate
from streamfn.core.dialects.anthropic import AnthropicEncoder
from streamfn.core.dialects.openai_chat import OpenAIChatEncoder
from streamfn.fuzz import event_streams

#: every block kind and stop reason, no errors (those are checked below)
ANY_DONE = event_streams(error_kinds=(), parallel_tool_calls=False)


def _done(events: list[Event]) -> Done:
    done = events[-1]
    assert isinstance(done, Done)
    return done


def _view(message: AssistantMessage, *, merge: bool, signatures: bool) -> list[tuple[Any, ...]]:
    """Content as comparable tuples, merging what a format cannot keep apart."""
    out: list[tuple[Any, ...]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            item: tuple[Any, ...] = ("text", block.text)
        elif isinstance(block, ThinkingContent):
            if block.redacted and not signatures:
                continue
            sig = block.signature if signatures else None
            item = ("thinking", block.thinking, sig, block.redacted)
        elif isinstance(block, ToolCall):
            item = ("tool", block.id, block.name, block.arguments)
        else:
            assert isinstance(block, OpaqueContent)
            continue
        if merge and out and item[0] in ("text", "thinking") and out[-1][0] == item[0]:
            out[-1] = (item[0], out[-1][1] + item[1], *out[-1][2:])
        else:
            out.append(item)
    return out


@given(ANY_DONE)
def test_openai_chat_roundtrip(events: list[Event]) -> None:
    stop, usage = _done(events).stop_reason, _done(events).usage
    encoder = OpenAIChatEncoder(response_id="chatcmpl-1", model="m", created=0, include_usage=True)
    body = b"".join(encoder.encode(e) for e in events)
    back = accumulate(replay("openai-chat", body, provider="openai"))
    original = accumulate(events)
    assert back.error_message is None, back.error_message
    assert _view(back, merge=True, signatures=False) == _view(
        original, merge=True, signatures=False
    )
    assert back.stop_reason == stop
    u = back.usage
    assert (u.input + u.cache_read, u.cache_read, u.output, u.reasoning) == (
        usage.input + usage.cache_write + usage.cache_read,
        usage.cache_read,
        usage.output,
        usage.reasoning,
    )


@given(ANY_DONE)
def test_anthropic_roundtrip(events: list[Event]) -> None:
    stop, usage = _done(events).stop_reason, _done(events).usage
    encoder = AnthropicEncoder(message_id="msg_1", model="m")
    body = b"".join(encoder.encode(e) for e in events)
    back = accumulate(replay("anthropic", body))
    original = accumulate(events)
    assert back.error_message is None, back.error_message
    assert _view(back, merge=False, signatures=True) == _view(
        original, merge=False, signatures=True
    )
    assert back.stop_reason == stop
    u = back.usage
    assert (u.input, u.output, u.cache_read, u.cache_write) == (
        usage.input,
        usage.output,
        usage.cache_read,
        usage.cache_write,
    )


def test_errors_are_encoded_the_way_each_client_expects() -> None:
    from streamfn.core import Error

    err = Error.throttled("slow down", retry_after=2)
    oa = OpenAIChatEncoder(response_id="x", model="m", created=0).encode(err)
    assert oa.startswith(b'data: {"error":') and b"rate_limit_exceeded" in oa
    assert oa.endswith(b"data: [DONE]\n\n")
    an = AnthropicEncoder(message_id="x", model="m").encode(err)
    assert an.startswith(b"event: error\ndata: ") and b"rate_limit_error" in an
    events = replay("anthropic", AnthropicEncoder(message_id="x", model="m").encode(Start()) + an)
    assert isinstance(events[-1], type(err)) and events[-1].kind == err.kind


def test_an_opaque_responses_item_cannot_break_the_sse_frame() -> None:
    # An upstream's item JSON may hold line breaks: JSON whitespace, or data split over
    # several SSE ``data:`` lines (joined with a line break). Pasted verbatim, a blank line in
    # it ended our frame early, and the client read half an event (a JSON error).
    import msgspec

    from streamfn.core import Model, OpaqueBlock
    from streamfn.core._call import open_call
    from streamfn.core._messages import Context, UserMessage
    from streamfn.core._options import Options
    from streamfn.core.dialects.openai_responses._encode import ResponsesEncoder

    model = Model(
        id="gpt-5", provider="openai", api="openai-responses", base_url="https://x.invalid/v1"
    )
    call = open_call(model, Context(messages=[UserMessage(content="hi")]), Options(api_key="k"))
    events = call.receive_response(200, [("content-type", "text/event-stream")])
    events += call.receive_data(
        b'data: {"type":"response.created","sequence_number":0,"response":{"id":"r",'
        b'"status":"in_progress","output":[]}}\n\n'
        b'data: {"type":"response.output_item.done","sequence_number":1,"output_index":0,'
        b'"item":{"type":"web_search_call",\ndata: \ndata: "id":"ws_1","status":"completed"}}\n\n'
    )
    [opaque] = [e for e in events if isinstance(e, OpaqueBlock)]
    encoder = ResponsesEncoder(response_id="x", model="m")
    frame = encoder.encode(opaque)
    assert frame.endswith(b"\n\n")
    head, data = frame[:-2].split(b"\ndata: ")
    assert head == b"event: response.output_item.done" and b"\n" not in data and b"\r" not in data
    item = msgspec.json.decode(data)["item"]
    assert item == {"type": "web_search_call", "id": "ws_1", "status": "completed"}
