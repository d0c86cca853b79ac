"""Encoders are the decoders' inverse: decode(encode(events)) gives the same message.

"The same" is up to what each wire format cannot carry, listed here:

- OpenAI chat chunks: no signatures (thinking, text, tool calls), no redacted
  thinking, no opaque blocks, no block boundaries between two adjacent blocks
  of the same kind (they merge), cache writes count as prompt tokens.
- Anthropic events: no text/tool-call signatures, no reasoning token count.
"""

from __future__ import annotations

from typing import Any

import msgspec
from chunking import split_at
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import (
    AssistantMessage,
    Done,
    Event,
    OpaqueContent,
    Start,
    StopReason,
    TextContent,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingContent,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    replay,
)
from streamfn.core.accumulate import accumulate
from streamfn.core.encode_anthropic import AnthropicEncoder
from streamfn.core.encode_openai import OpenAIChatEncoder

text = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != "" or s == " ")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def blocks(draw: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "thinking", "redacted", "tool"]))
        if kind == "tool":
            args = draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3))
            raw = msgspec.json.encode(args).decode()
            cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=4)))
            pieces = split_at(raw, cuts)
            ident = draw(st.from_regex(r"call_[a-zA-Z0-9]{4,12}", fullmatch=True))
            name = draw(st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True))
            out.append(("tool", (ident, name, [p for p in pieces if p])))
        elif kind == "redacted":
            out.append(("redacted", draw(st.from_regex(r"[A-Za-z0-9+/]{8,20}", fullmatch=True))))
        else:
            sig = draw(st.none() | st.from_regex(r"[A-Za-z0-9]{6,12}", fullmatch=True))
            out.append((kind, (draw(st.lists(text, min_size=1, max_size=4)), sig)))
    return out


def to_events(spec: list[tuple[str, Any]], stop: StopReason, usage: Usage) -> list[Event]:
    events: list[Event] = [Start(model="m")]
    for i, (kind, payload) in enumerate(spec):
        if kind == "text":
            events += [TextStart(i), *(TextDelta(i, d) for d in payload[0]), TextEnd(i)]
        elif kind == "thinking":
            deltas, sig = payload
            events += [ThinkingStart(i), *(ThinkingDelta(i, d) for d in deltas)]
            events.append(ThinkingEnd(i, signature=sig))
        elif kind == "redacted":
            events += [ThinkingStart(i), ThinkingEnd(i, signature=payload, redacted=True)]
        else:
            ident, name, pieces = payload
            events += [ToolCallStart(i, ident, name), *(ToolCallDelta(i, p) for p in pieces)]
            events.append(ToolCallEnd(i))
    events.append(Done(stop_reason=stop, usage=usage))
    return events


@st.composite
def usages(draw: Any) -> Usage:
    output = draw(st.integers(0, 10_000))
    return Usage(
        input=draw(st.integers(0, 10_000)),
        output=output,
        cache_read=draw(st.integers(0, 1000)),
        cache_write=draw(st.integers(0, 1000)),
        reasoning=draw(st.integers(0, output)),  # a subset of output, by convention
    )


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


@given(blocks(), st.sampled_from(list(StopReason)[:3]), usages())
def test_openai_chat_roundtrip(spec: list[tuple[str, Any]], stop: StopReason, usage: Usage) -> None:
    events = to_events(spec, stop, usage)
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


@given(blocks(), st.sampled_from(list(StopReason)[:3]), usages())
def test_anthropic_roundtrip(spec: list[tuple[str, Any]], stop: StopReason, usage: Usage) -> None:
    events = to_events(spec, stop, usage)
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
