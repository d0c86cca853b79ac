"""OpenAI Responses API: request bodies, hand-made transcripts, corpus conformance, properties."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chunking import bytewise, split_at
from corpus_support import CORPUS, body, corpus_dir, corpus_entries, require_corpus
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
    OpaqueBlock,
    OpaqueContent,
    Options,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingEnd,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    open_call,
    replay,
)
from streamfn.core._accumulate import accumulate, check_protocol
from streamfn.core.dialects.openai_responses import build_request
from streamfn.core.wire._sse import encode_sse

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "openai-responses"
SSE = [("content-type", "text/event-stream")]
API = "openai-responses"


def model(provider: str = "openai", id: str = "gpt-4.1", **kw: Any) -> Model:
    return Model(id=id, provider=provider, api=API, base_url="https://api.example/v1", **kw)


def request_body(m: Model, context: Context, options: Options | None = None) -> dict[str, Any]:
    req = build_request(m, context, options or Options(api_key="sk-test"))
    result: dict[str, Any] = json.loads(req.body)
    return result


def run(data: bytes, chunks: list[bytes] | None = None, **kw: Any) -> list[Event]:
    events = replay(
        API, chunks if chunks is not None else data, provider="openai", headers=SSE, **kw
    )
    check_protocol(events)
    return events


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def test_request_minimal() -> None:
    req = build_request(model(), Context.of("Hi", system_prompt="Be brief."), Options(api_key="k"))
    assert req.method == "POST"
    assert req.url == "https://api.example/v1/responses"
    assert ("authorization", "Bearer k") in req.headers
    assert json.loads(req.body) == {
        "model": "gpt-4.1",
        "input": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "store": False,
        "instructions": "Be brief.",
    }


def test_request_multi_turn_images_tools_results_and_knobs() -> None:
    m = model()
    previous = AssistantMessage(
        content=[
            TextContent(text="Let me look."),
            ToolCall(id="call_1", name="lookup", arguments={"q": "x"}, arguments_json='{"q":"x"}'),
        ],
        api=API,
        provider="openai",
        model="gpt-4.1",
        stop_reason=StopReason.TOOL_USE,
    )
    context = Context(
        messages=[
            UserMessage(
                content=[
                    TextContent(text="What is this?"),
                    ImageContent(data="aGVsbG8=", mime_type="image/png"),
                ]
            ),
            previous,
            ToolResultMessage(
                tool_call_id="call_1", tool_name="lookup", content=[TextContent(text="42")]
            ),
        ],
        tools=[
            Tool(
                name="lookup",
                description="Look things up",
                parameters={
                    "type": "object",
                    "properties": {"q": {"type": "string"}},
                    "required": ["q"],
                },
            )
        ],
    )
    options = Options(api_key="k", tool_choice="lookup", max_tokens=256, temperature=0.2, top_p=0.9)
    got = request_body(m, context, options)
    assert got["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,aGVsbG8=",
                    "detail": "auto",
                },
            ],
        },
        {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}],
        },
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
    ]
    assert got["tools"] == [
        {
            "type": "function",
            "name": "lookup",
            "description": "Look things up",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
            },
            "strict": False,
        }
    ]
    assert got["tool_choice"] == {"type": "function", "name": "lookup"}
    assert got["max_output_tokens"] == 256
    assert got["temperature"] == 0.2 and got["top_p"] == 0.9
    assert "include" not in got and "reasoning" not in got


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_request_tool_choice_keywords(choice: str) -> None:
    ctx = Context(messages=[UserMessage(content="x")], tools=[Tool(name="f")])
    assert request_body(model(), ctx, Options(tool_choice=choice))["tool_choice"] == choice


def test_request_reasoning_model_asks_for_encrypted_reasoning_and_drops_sampling() -> None:
    m = model(id="o4-mini", reasoning=True)
    got = request_body(
        m,
        Context.of("Think"),
        Options(thinking=ThinkingLevel.HIGH, temperature=0.5, stop=["\n"], seed=3),
    )
    assert got["include"] == ["reasoning.encrypted_content"]
    assert got["reasoning"] == {"effort": "high", "summary": "auto"}
    # The Responses API has no stop sequences or seed; reasoning models take no temperature.
    assert not {"temperature", "stop", "seed"} & set(got)


def test_request_thinking_off_sends_no_reasoning_block() -> None:
    m = model(id="o4-mini", reasoning=True)
    got = request_body(m, Context.of("x"), Options(thinking=ThinkingLevel.OFF))
    assert "reasoning" not in got


def test_reasoning_round_trips_for_the_same_model_only() -> None:
    """What the stream carried as the ThinkingEnd signature goes back as a reasoning item."""
    m = model(id="o4-mini", reasoning=True)
    events = run(transcript("crlf-reasoning-refusal.sse"))
    message = accumulate(events)
    message = msgspec.structs.replace(message, provider="openai", model="o4-mini")
    context = Context(messages=[UserMessage(content="q"), message, UserMessage(content="again")])
    items = request_body(m, context)["input"]
    assert items[1] == {
        "type": "reasoning",
        "encrypted_content": "gAAAA-enc",
        "summary": [
            {"type": "summary_text", "text": "**Plan** ünïcode"},
            {"type": "summary_text", "text": "Then refuse."},
        ],
    }
    assert "id" not in items[1]  # store=false: an id would make the server look it up and fail
    # Another model: the reasoning becomes plain text (prepare_messages), never a foreign item.
    other = request_body(model(id="gpt-4.1"), context)["input"]
    assert all(item.get("type") != "reasoning" for item in other)
    assert other[1]["content"][0]["text"].startswith("**Plan**")


def test_request_replays_opaque_items_to_the_same_provider_only() -> None:
    item = '{"type":"web_search_call","id":"ws_1","status":"completed"}'
    message = AssistantMessage(
        content=[
            OpaqueContent(provider="openai", block_type="web_search_call", json=item),
            TextContent(text="Sunny"),
        ],
        api=API,
        provider="openai",
        model="gpt-4.1",
    )
    context = Context(messages=[UserMessage(content="q"), message])
    assert request_body(model(), context)["input"][1] == json.loads(item)
    assert len(request_body(model(provider="azure"), context)["input"]) == 2


def test_request_azure_uses_api_key_header_and_extra_body() -> None:
    req = build_request(
        model(provider="azure"),
        Context.of("x"),
        Options(api_key="az", extra_body={"truncation": "auto"}, headers={"x-trace": "1"}),
    )
    assert ("api-key", "az") in req.headers and ("x-trace", "1") in req.headers
    assert not any(k == "authorization" for k, _ in req.headers)
    assert json.loads(req.body)["truncation"] == "auto"
    assert "az" not in repr(req)


# ---------------------------------------------------------------------------
# Hand-made transcripts
# ---------------------------------------------------------------------------


def test_error_event_mid_stream_keeps_text_and_is_classified() -> None:
    events = run(transcript("error-mid-stream.sse"))
    final = events[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.NETWORK
    assert accumulate(events).text == "Hello, wor"


def test_incomplete_max_output_tokens_is_length() -> None:
    events = run(transcript("incomplete-max-output-tokens.sse"))
    assert isinstance(events[-1], Done) and events[-1].stop_reason == StopReason.LENGTH
    assert accumulate(events).text == "Once upon a"


def test_incomplete_content_filter_is_a_content_filter_error() -> None:
    final = run(transcript("incomplete-content-filter.sse"))[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.CONTENT_FILTER
    assert final.usage is not None and final.usage.output == 30


def test_response_failed_is_classified() -> None:
    final = run(transcript("failed-server-error.sse"))[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.NETWORK
    assert "overloaded" in final.message


def test_items_done_before_or_without_added() -> None:
    events = run(transcript("done-without-added.sse"))
    message = accumulate(events)
    assert message.text == "Checking the weather."
    [call] = message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_A", "get_weather", {"city": "Paris"})
    assert message.stop_reason == StopReason.TOOL_USE


def test_interleaved_parallel_function_calls() -> None:
    message = accumulate(run(transcript("parallel-function-calls-interleaved.sse")))
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_1", "get_weather", {"city": "Oslo"}),
        ("call_2", "get_time", {"tz": "CET"}),
    ]


def test_crlf_reasoning_summary_parts_refusal_and_usage() -> None:
    data = transcript("crlf-reasoning-refusal.sse")
    events = run(data)
    message = accumulate(events)
    assert message.thinking == "**Plan** ünïcode\n\nThen refuse."
    assert message.text == "I can’t help with that."
    [end] = [e for e in events if isinstance(e, ThinkingEnd)]
    assert json.loads(end.signature or "")["encrypted_content"] == "gAAAA-enc"
    assert message.response_id is None or message.response_id == "resp_t1"
    # cached tokens are inside input_tokens on the wire; ours counts them apart
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (60, 40, 30)
    assert message.usage.reasoning == 10 and message.usage.total == 130
    # split UTF-8 and CRLF across every byte boundary give the same events
    assert run(data, chunks=bytewise(data)) == events


def test_truncated_stream_is_a_network_error() -> None:
    data = transcript("parallel-function-calls-interleaved.sse")
    final = run(data[: len(data) // 2])[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.NETWORK


@pytest.mark.parametrize(
    ("status", "payload", "kind"),
    [
        # Real OpenAI error bodies (openai-python tests and API docs).
        (
            400,
            {
                "error": {
                    "message": "Your input exceeds the context window of this model. "
                    "Please adjust your input and try again.",
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": "context_length_exceeded",
                }
            },
            ErrorKind.CONTEXT_OVERFLOW,
        ),
        (
            429,
            {
                "error": {
                    "message": "Rate limit reached for gpt-4.1 in organization org-x on tokens "
                    "per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
                    "type": "tokens",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
            ErrorKind.THROTTLED,
        ),
        (
            401,
            {
                "error": {
                    "message": "Incorrect API key provided: sk-abc. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
            ErrorKind.AUTH,
        ),
    ],
)
def test_http_errors_are_classified(status: int, payload: dict[str, Any], kind: ErrorKind) -> None:
    events = replay(
        API,
        json.dumps(payload).encode(),
        status=status,
        headers=[("content-type", "application/json"), ("retry-after", "2")],
    )
    final = events[-1]
    assert isinstance(final, Error) and final.kind == kind and final.status == status
    if kind == ErrorKind.THROTTLED:
        assert final.retry_after == 2.0


def test_cost_is_priced_with_the_model() -> None:
    m = model(price_input=2.0, price_output=8.0, price_cache_read=0.5)
    call = open_call(m, Context.of("x"), Options(api_key="k"))
    events = call.receive_response(200, SSE)
    events += call.receive_data(transcript("crlf-reasoning-refusal.sse"))
    done = events[-1]
    assert isinstance(done, Done)
    assert done.cost.total == pytest.approx((60 * 2.0 + 40 * 0.5 + 30 * 8.0) / 1e6)


def test_malformed_json_is_a_protocol_error() -> None:
    final = run(b"event: response.created\ndata: {not json\n\n")[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.PROTOCOL


# ---------------------------------------------------------------------------
# Corpus conformance
# ---------------------------------------------------------------------------


def _frame_chunks(text: bytes) -> bytes:
    """``.chunks.txt`` fixtures hold one JSON event per line; frame them as the API does."""
    return b"".join(
        encode_sse(line, event=json.loads(line)["type"])
        for line in text.decode().splitlines()
        if line.strip()
    )


def _responses(data: bytes) -> list[bytes]:
    """Split a body into HTTP responses: the Azure fixture holds four agent turns back to back."""
    marker = b"event: response.created"
    starts = [m.start() for m in re.finditer(re.escape(marker), data)] or [0]
    starts[0] = 0
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def _conform(message: AssistantMessage, final: Event, want: dict[str, Any]) -> None:
    """Compare with ``output`` and ``usage`` of the reference (the last response)."""
    output = want["output"]
    texts = [o["text"] for o in output if o["type"] == "message"]
    assert message.text == "".join(texts)
    calls = [o for o in output if o["type"] == "function_call"]
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (c["call_id"], c["name"], json.loads(c["arguments"])) for c in calls
    ]
    reasoning = [o for o in output if o["type"] == "reasoning"]
    thinking = [b for b in message.content if isinstance(b, ThinkingContent)]
    encrypted = [r for r in reasoning if r.get("encrypted_content")]
    assert sum(1 for t in thinking if t.signature) == len(encrypted)
    server_items = [
        o["type"] for o in output if o["type"] not in ("message", "reasoning", "function_call")
    ]
    opaque = [b.block_type for b in message.content if isinstance(b, OpaqueContent)]
    assert opaque == server_items
    usage = want["usage"]
    if usage is not None:
        cached = usage["input_tokens_details"]["cached_tokens"]
        assert message.usage.input + message.usage.cache_read == usage["input_tokens"]
        assert message.usage.cache_read == cached
        assert message.usage.output == usage["output_tokens"]
        assert message.usage.reasoning == usage["output_tokens_details"]["reasoning_tokens"]
        assert message.usage.total == usage["total_tokens"]
    if want["status"] == "completed":
        assert isinstance(final, Done)
        assert final.stop_reason == (StopReason.TOOL_USE if calls else StopReason.STOP)
    else:
        assert isinstance(final, Error)


@pytest.mark.parametrize("entry", corpus_entries(API))
def test_corpus_conformance(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    data = body(entry)
    if entry["file"].endswith(".chunks.txt"):
        data = _frame_chunks(data)
    # expected() derives the name from the file, which misses ``x.chunks.txt``; the
    # index names the expectation of every file of an entry.
    want = json.loads((CORPUS / entry["expected_file"]).read_text())["expected_final_message"]
    provider = entry["provider"]
    segments = _responses(data)
    outcomes = []
    for segment in segments:
        events = replay(API, segment, provider=provider, headers=SSE)
        check_protocol(events)
        outcomes.append((accumulate(events), events[-1]))
    # Byte-at-a-time feeding gives the very same events (first response only, for speed).
    first = replay(API, segments[0], provider=provider, headers=SSE)
    small = [segments[0][i : i + 7] for i in range(0, len(segments[0]), 7)]
    assert replay(API, small, provider=provider, headers=SSE) == first
    # The expectation describes the LAST response of a multi-response fixture (Azure).
    message, final = outcomes[-1]
    if want["status"] == "failed":
        assert isinstance(final, Error)
        # insufficient_quota arrives as an in-stream `error` event: out of credit,
        # which retrying cannot fix, so it is classified like a bad key.
        assert final.kind == ErrorKind.AUTH
        assert "exceeded your current quota" in final.message
        return
    _conform(message, final, want)
    if "streamed_reasoning_summary" in want:
        # Over the whole file, like the reference's streamed_* fields. The reference
        # joins summary parts with " | "; we join them with a blank line (they are
        # paragraphs of one summary).
        thinking = "".join(m.thinking for m, _ in outcomes)
        assert thinking == want["streamed_reasoning_summary"].replace(" | ", "\n\n")
    if len(outcomes) > 1:  # the earlier agent turns are function calls
        assert all(m.tool_calls and f.stop_reason == StopReason.TOOL_USE for m, f in outcomes[:-1])  # type: ignore[union-attr]


def test_corpus_web_search_item_is_carried_whole() -> None:
    path = CORPUS / "openai-responses" / "web-search.sse"
    corpus_dir()
    events = run(path.read_bytes())
    [block] = [e for e in events if isinstance(e, OpaqueBlock)]
    item = json.loads(block.json)
    assert item["type"] == "web_search_call" and item["status"] == "completed"
    assert block.provider == "openai"


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)
_fragments = st.lists(_text, min_size=1, max_size=4)


@st.composite
def wire_transcripts(draw: st.DrawFn) -> tuple[bytes, dict[str, Any]]:
    """A valid Responses stream of random items, and the message it must fold into."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "resp_p"}}]
    want: list[tuple[str, Any]] = []
    n_items = draw(st.integers(0, 4))
    for oi in range(n_items):
        kind = draw(st.sampled_from(["message", "reasoning", "function_call"]))
        if kind == "message":
            parts = draw(_fragments)
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": oi,
                    "item": {"type": "message", "id": f"m{oi}", "content": []},
                }
            )
            events += [
                {
                    "type": "response.output_text.delta",
                    "output_index": oi,
                    "content_index": 0,
                    "delta": p,
                }
                for p in parts
            ]
            events.append(
                {
                    "type": "response.output_item.done",
                    "output_index": oi,
                    "item": {
                        "type": "message",
                        "id": f"m{oi}",
                        "content": [{"type": "output_text", "text": "".join(parts)}],
                    },
                }
            )
            want.append(("text", "".join(parts)))
        elif kind == "reasoning":
            summaries = draw(st.lists(_fragments, min_size=0, max_size=2))
            enc = draw(st.one_of(st.none(), st.just("enc")))
            for si, frags in enumerate(summaries):
                events += [
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "output_index": oi,
                        "summary_index": si,
                        "delta": f,
                    }
                    for f in frags
                ]
            item = {
                "type": "reasoning",
                "id": f"r{oi}",
                "encrypted_content": enc,
                "summary": [{"type": "summary_text", "text": "".join(f)} for f in summaries],
            }
            events.append({"type": "response.output_item.done", "output_index": oi, "item": item})
            if summaries or enc:
                want.append(("thinking", "\n\n".join("".join(f) for f in summaries)))
        else:
            args = draw(st.dictionaries(st.sampled_from("abc"), st.integers() | _text, max_size=3))
            text = json.dumps(args)
            cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=3)))
            frags = split_at(text, cuts)
            item = {
                "type": "function_call",
                "id": f"fc{oi}",
                "call_id": f"call_{oi}",
                "name": f"tool{oi}",
                "arguments": "",
            }
            added_first = draw(st.booleans())
            if added_first:
                events.append(
                    {"type": "response.output_item.added", "output_index": oi, "item": item}
                )
            events += [
                {"type": "response.function_call_arguments.delta", "output_index": oi, "delta": f}
                for f in frags
                if f
            ]
            events.append(
                {
                    "type": "response.output_item.done",
                    "output_index": oi,
                    "item": item | {"arguments": text},
                }
            )
            want.append(("tool", (f"call_{oi}", f"tool{oi}", args)))
    events.append(
        {
            "type": "response.completed",
            "response": {"id": "resp_p", "usage": {"input_tokens": 10, "output_tokens": 5}},
        }
    )
    data = "".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=draw(st.booleans()))}\n\n"
        for e in events
    ).encode()
    return data, {"blocks": want}


def _cuts(data: bytes) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, len(data)), max_size=8).map(sorted)


@given(wire_transcripts(), st.data())
def test_any_chunking_gives_the_intended_stream(
    generated: tuple[bytes, dict[str, Any]], data: st.DataObject
) -> None:
    wire, intended = generated
    whole = run(wire)
    assert run(wire, chunks=split_at(wire, data.draw(_cuts(wire)))) == whole
    message = accumulate(whole)
    got: list[tuple[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            got.append(("text", block.text))
        elif isinstance(block, ThinkingContent):
            got.append(("thinking", block.thinking))
        elif isinstance(block, ToolCall):
            got.append(("tool", (block.id, block.name, block.arguments)))
    assert got == intended["blocks"]
    tools = any(kind == "tool" for kind, _ in intended["blocks"])
    assert message.stop_reason == (StopReason.TOOL_USE if tools else StopReason.STOP)


@given(wire_transcripts(), st.data())
def test_property_mutated_streams_end_in_a_typed_terminal(
    generated: tuple[bytes, dict[str, Any]], data: st.DataObject
) -> None:
    wire, _ = generated
    how = data.draw(st.sampled_from(["truncate", "flip", "drop_line"]))
    if how == "truncate":
        wire = wire[: data.draw(st.integers(0, len(wire)))]
    elif how == "flip":
        i = data.draw(st.integers(0, len(wire) - 1))
        wire = wire[:i] + bytes([wire[i] ^ data.draw(st.integers(1, 255))]) + wire[i + 1 :]
    else:
        lines = wire.split(b"\n")
        del lines[data.draw(st.integers(0, len(lines) - 1))]
        wire = b"\n".join(lines)
    events = run(wire)  # check_protocol inside: never an invalid stream
    assert isinstance(events[-1], (Done, Error))
    if isinstance(events[-1], Error):
        assert events[-1].kind is not None
