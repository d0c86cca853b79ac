"""Ollama /api/chat (NDJSON): request bodies, hand-made transcripts, corpus, properties."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chunking import bytewise, split_at
from corpus_support import body, corpus_entries, expected, require_corpus
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import (
    AssistantMessage,
    Context,
    Done,
    Error,
    ErrorKind,
    Event,
    ImageContent,
    Model,
    Options,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    replay,
)
from streamfn.core._accumulate import accumulate, check_protocol
from streamfn.core.dialects.ollama import build_request

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "ollama"
NDJSON = [("content-type", "application/x-ndjson")]
API = "ollama"


def model(id: str = "qwen3:0.6b", base_url: str = "", **kw: Any) -> Model:
    return Model(id=id, provider="ollama", api=API, base_url=base_url, **kw)


def run(data: bytes | list[bytes]) -> list[Event]:
    events = replay(API, data, headers=NDJSON)
    check_protocol(events)
    return events


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


# -- requests ----------------------------------------------------------------


def test_request_defaults_to_localhost_without_auth() -> None:
    req = build_request(model(), Context.of("Hi", system_prompt="Terse."), Options())
    assert req.url == "http://localhost:11434/api/chat"
    assert not any(k == "authorization" for k, _ in req.headers)
    assert json.loads(req.body) == {
        "model": "qwen3:0.6b",
        "messages": [
            {"role": "system", "content": "Terse."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": True,
    }


def test_request_images_tools_results_options_and_think() -> None:
    previous = AssistantMessage(
        content=[
            ThinkingContent(thinking="need a tool"),
            ToolCall(id="ollama_call_0", name="lookup", arguments={"q": "cat"}),
        ],
        api=API,
        provider="ollama",
        model="qwen3:0.6b",
        stop_reason=StopReason.TOOL_USE,
    )
    context = Context(
        messages=[
            UserMessage(
                content=[
                    TextContent(text="What is in it?"),
                    ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
                ]
            ),
            previous,
            ToolResultMessage(
                tool_call_id="ollama_call_0",
                tool_name="lookup",
                content=[TextContent(text="a cat")],
            ),
        ],
        tools=[Tool(name="lookup", description="Find", parameters={"type": "object"})],
    )
    options = Options(
        temperature=0.1,
        top_p=0.8,
        top_k=20,
        max_tokens=64,
        stop=["</s>"],
        seed=7,
        thinking=ThinkingLevel.LOW,
        base_url="http://gpu-box:11434/",
    )
    req = build_request(model(), context, options)
    got = json.loads(req.body)
    assert req.url == "http://gpu-box:11434/api/chat"
    assert got["messages"] == [
        {"role": "user", "content": "What is in it?", "images": ["iVBORw0KGgo="]},
        {
            "role": "assistant",
            "content": "",
            "thinking": "need a tool",
            "tool_calls": [{"function": {"name": "lookup", "arguments": {"q": "cat"}}}],
        },
        {"role": "tool", "content": "a cat", "tool_name": "lookup"},
    ]
    assert got["tools"] == [
        {
            "type": "function",
            "function": {"name": "lookup", "description": "Find", "parameters": {"type": "object"}},
        }
    ]
    assert got["options"] == {
        "temperature": 0.1,
        "top_p": 0.8,
        "top_k": 20,
        "num_predict": 64,
        "seed": 7,
        "stop": ["</s>"],
    }
    assert got["think"] is True
    off = json.loads(
        build_request(model(), Context.of("x"), Options(thinking=ThinkingLevel.OFF)).body
    )
    assert off["think"] is False


def test_request_bearer_key_for_ollama_cloud() -> None:
    req = build_request(
        model(base_url="https://ollama.com"), Context.of("x"), Options(api_key="ok")
    )
    assert req.url == "https://ollama.com/api/chat"
    assert ("authorization", "Bearer ok") in req.headers


# -- transcripts ----------------------------------------------------------------


def test_thinking_text_and_complete_tool_calls() -> None:
    events = run(transcript("thinking-then-tool-calls.ndjson"))
    message = accumulate(events)
    assert message.thinking == "The user wants the weather."
    assert message.text == "Let me check. "
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("ollama_call_0", "get_weather", {"city": "Zürich", "unit": "c"}),
        ("call_x1", "get_time", {}),
    ]
    assert message.stop_reason == StopReason.TOOL_USE
    assert (message.usage.input, message.usage.output) == (120, 33)
    assert [type(b) for b in message.content] == [ThinkingContent, TextContent, ToolCall, ToolCall]


def test_tool_call_on_the_done_line_and_deterministic_ids() -> None:
    data = transcript("tool-call-on-done-line.ndjson")
    first, second = run(data), run(data)
    assert first == second
    [call] = accumulate(first).tool_calls
    assert (call.id, call.arguments) == ("ollama_call_0", {"q": "x"})


def test_error_line_keeps_partial_text() -> None:
    events = run(transcript("error-mid-stream.ndjson"))
    final = events[-1]
    assert isinstance(final, Error) and final.kind is not None
    assert "unexpected EOF" in final.message
    assert accumulate(events).text == "Partial answer"


def test_length_with_crlf_lines_at_every_boundary() -> None:
    data = transcript("length.ndjson")
    events = run(data)
    assert isinstance(events[-1], Done) and events[-1].stop_reason == StopReason.LENGTH
    assert run(bytewise(data)) == events


def test_truncated_stream_is_a_network_error() -> None:
    data = transcript("thinking-then-tool-calls.ndjson")
    final = run(data[: len(data) // 2])[-1]
    assert isinstance(final, Error) and final.kind in (ErrorKind.NETWORK, ErrorKind.PROTOCOL)
    final = run(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])[-1]  # whole lines, no done
    assert isinstance(final, Error) and final.kind == ErrorKind.NETWORK


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [
        # Real Ollama error bodies (ollama/ollama server tests and issues).
        (404, 'model "llama9" not found, try pulling it first', ErrorKind.INVALID_REQUEST),
        (
            400,
            "registry.ollama.ai/library/gemma3:1b does not support tools",
            ErrorKind.INVALID_REQUEST,
        ),
        (500, "llama runner process has terminated: exit status 2", ErrorKind.NETWORK),
        (401, "unauthorized", ErrorKind.AUTH),
    ],
)
def test_http_errors(status: int, error: str, kind: ErrorKind) -> None:
    events = replay(API, json.dumps({"error": error}).encode(), status=status, headers=NDJSON)
    final = events[-1]
    assert isinstance(final, Error) and final.kind == kind and error in final.message


# -- corpus ----------------------------------------------------------------------


@pytest.mark.parametrize("entry", corpus_entries(API))
def test_corpus_conformance(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    data = body(entry)
    events = run(data)
    want = expected(entry)
    assert want is not None
    message = accumulate(events)
    assert message.text == want["content"]
    assert message.thinking == want["thinking"]
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in want["tool_calls"]
    ]
    assert want["done_reason"] == "stop" and message.stop_reason == StopReason.STOP
    assert (message.usage.input, message.usage.output) == (
        want["prompt_eval_count"],
        want["eval_count"],
    )


# -- properties ------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=10)


@st.composite
def wire_transcripts(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, Any]], StopReason]:
    lines: list[dict[str, Any]] = []
    want: list[tuple[str, Any]] = []
    calls = 0
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["text", "thinking", "tool"]))
        if kind == "tool":
            args = draw(st.dictionaries(st.sampled_from("xyz"), st.integers() | _text, max_size=2))
            lines.append(
                {
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"function": {"name": f"t{calls}", "arguments": args}}],
                    },
                    "done": False,
                }
            )
            want.append(("tool", (f"ollama_call_{calls}", f"t{calls}", args)))
            calls += 1
            continue
        delta = draw(_text)
        field = "content" if kind == "text" else "thinking"
        lines.append({"message": {"role": "assistant", "content": "", field: delta}, "done": False})
        if want and want[-1][0] == kind:
            want[-1] = (kind, want[-1][1] + delta)
        else:
            want.append((kind, delta))
    reason = draw(st.sampled_from(["stop", "length"]))
    lines.append(
        {
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": reason,
            "prompt_eval_count": 3,
            "eval_count": 4,
        }
    )
    if reason == "length":
        stop = StopReason.LENGTH
    else:
        stop = StopReason.TOOL_USE if calls else StopReason.STOP
    data = "".join(json.dumps(line, ensure_ascii=draw(st.booleans())) + "\n" for line in lines)
    return data.encode(), want, stop


@given(wire_transcripts(), st.data())
def test_any_chunking_gives_the_intended_stream(
    generated: tuple[bytes, list[tuple[str, Any]], StopReason], data: st.DataObject
) -> None:
    wire, want, stop = generated
    events = run(wire)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    chunks = split_at(wire, cuts)
    assert run(chunks) == events
    message = accumulate(events)
    got: list[tuple[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            got.append(("text", block.text))
        elif isinstance(block, ThinkingContent):
            got.append(("thinking", block.thinking))
        elif isinstance(block, ToolCall):
            got.append(("tool", (block.id, block.name, block.arguments)))
    assert got == want
    assert message.stop_reason == stop


@given(wire_transcripts(), st.data())
def test_property_mutations_end_in_a_typed_terminal(
    generated: tuple[bytes, list[tuple[str, Any]], StopReason], data: st.DataObject
) -> None:
    wire, _, _ = generated
    i = data.draw(st.integers(0, len(wire) - 1))
    how = data.draw(st.sampled_from(["truncate", "flip", "drop"]))
    if how == "truncate":
        wire = wire[:i]
    elif how == "flip":
        wire = wire[:i] + bytes([wire[i] ^ data.draw(st.integers(1, 255))]) + wire[i + 1 :]
    else:
        lines = wire.split(b"\n")
        del lines[data.draw(st.integers(0, len(lines) - 1))]
        wire = b"\n".join(lines)
    events = run(wire)
    assert isinstance(events[-1], (Done, Error))
