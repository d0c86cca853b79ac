"""Google Gemini / Vertex AI: requests, hand-made transcripts, the corpus, and properties."""

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
    OpaqueContent,
    Options,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    list_models,
    replay,
)
from streamfn.core._accumulate import accumulate, check_protocol
from streamfn.core._errors import DecodeError, JSONArrayError
from streamfn.core.dialects.gemini._response import (
    PartialArgsWriter,
    build_request,
    gemini_schema,
    open_call,
)
from streamfn.core.wire._json_array import JSONArrayDecoder

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "gemini"
SSE = [("content-type", "text/event-stream")]


def gemini(**kw: Any) -> Model:
    return Model(
        id=kw.pop("id", "gemini-2.5-flash"),
        provider=kw.pop("provider", "google"),
        api="gemini",
        base_url=kw.pop("base_url", "https://generativelanguage.googleapis.com"),
        **kw,
    )


def request_body(context: Context, options: Options | None = None, **kw: Any) -> dict[str, Any]:
    req = build_request(gemini(**kw), context, options or Options(api_key="AIza-test"))
    result: dict[str, Any] = json.loads(req.body)
    return result


def run(data: bytes | list[bytes], provider: str = "google") -> list[Event]:
    return replay("gemini", data, provider=provider, headers=SSE)


def transcript(name: str) -> list[Event]:
    return run((TRANSCRIPTS / name).read_bytes())


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------


def test_request_url_and_key_header() -> None:
    req = build_request(gemini(), Context.of("Hi"), Options(api_key="AIza-secret"))
    assert req.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/"
        "gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    headers = dict(req.headers)
    assert headers["x-goog-api-key"] == "AIza-secret"
    assert "authorization" not in headers
    assert "AIza-secret" not in repr(req)
    assert json.loads(req.body) == {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}


def test_vertex_url_and_bearer_token() -> None:
    m = gemini(
        provider="vertex",
        base_url="https://aiplatform.googleapis.com",
        extra={"project": "proj-1", "location": "europe-west4"},
    )
    req = build_request(m, Context.of("Hi"), Options(api_key="ya29.token"))
    assert req.url == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj-1/locations/"
        "europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert dict(req.headers)["authorization"] == "Bearer ya29.token"
    glob = build_request(
        gemini(provider="vertex", base_url="", extra={"project": "p", "location": "global"}),
        Context.of("x"),
        Options(),
    )
    assert glob.url.startswith("https://aiplatform.googleapis.com/v1/projects/p/locations/global/")
    with pytest.raises(ValueError, match="project"):
        build_request(gemini(provider="vertex"), Context.of("x"), Options())


def test_generation_config_system_and_stop() -> None:
    body = request_body(
        Context.of("Hi", system_prompt="Be brief."),
        Options(temperature=0.1, top_p=0.8, top_k=20, max_tokens=99, stop=["END"], seed=7),
    )
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["generationConfig"] == {
        "temperature": 0.1,
        "topP": 0.8,
        "topK": 20,
        "maxOutputTokens": 99,
        "stopSequences": ["END"],
        "seed": 7,
    }


@pytest.mark.parametrize(
    ("model_id", "options", "config"),
    [
        (
            "gemini-2.5-flash",
            Options(thinking=ThinkingLevel.LOW),
            {"thinkingBudget": 2048, "includeThoughts": True},
        ),
        (
            "gemini-2.5-flash",
            Options(thinking_budget=1234),
            {"thinkingBudget": 1234, "includeThoughts": True},
        ),
        ("gemini-2.5-flash", Options(thinking=ThinkingLevel.OFF), {"thinkingBudget": 0}),
        ("gemini-2.5-pro", Options(thinking=ThinkingLevel.OFF), None),
        (
            "gemini-3-pro-preview",
            Options(thinking=ThinkingLevel.HIGH),
            {"thinkingLevel": "high", "includeThoughts": True},
        ),
        (
            "gemini-3-pro-preview",
            Options(thinking=ThinkingLevel.MINIMAL),
            {"thinkingLevel": "low", "includeThoughts": True},
        ),
        ("gemini-2.5-flash", Options(), None),
    ],
)
def test_thinking_config(model_id: str, options: Options, config: dict[str, Any] | None) -> None:
    body = request_body(Context.of("x"), options, id=model_id)
    assert body.get("generationConfig", {}).get("thinkingConfig") == config


def test_tools_schema_subset_and_tool_config() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "city": {"type": "string", "description": "City"},
            "unit": {"type": ["string", "null"], "enum": ["c", "f"]},
            "mode": {"const": "fast"},
            "tags": {"type": "array", "items": {"type": "string", "additionalProperties": 1}},
        },
        "required": ["city"],
    }
    ctx = Context(
        messages=[UserMessage(content="x")],
        tools=[Tool(name="weather", description="Weather", parameters=schema), Tool(name="noop")],
    )
    body = request_body(ctx, Options(tool_choice="weather"))
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "weather",
                    "description": "Weather",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string", "description": "City"},
                            "unit": {"nullable": True, "type": "string", "enum": ["c", "f"]},
                            "mode": {"enum": ["fast"]},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        },
                        "required": ["city"],
                    },
                },
                {"name": "noop"},  # no properties: Gemini rejects an empty object schema
            ]
        }
    ]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["weather"]}
    }
    assert request_body(ctx, Options(tool_choice="none"))["toolConfig"] == {
        "functionCallingConfig": {"mode": "NONE"}
    }
    assert request_body(ctx, Options(tool_choice="required"))["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY"}
    }


def test_gemini_schema_keeps_property_names_that_look_like_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {"$schema": {"type": "string"}, "type": {"type": "integer"}},
    }
    assert gemini_schema(schema) == schema


def test_multi_turn_with_images_signatures_and_function_responses() -> None:
    ctx = Context(
        messages=[
            UserMessage(
                content=[
                    TextContent(text="Look"),
                    ImageContent(data="AAAA", mime_type="image/jpeg"),
                ]
            ),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="hmm", signature="sigT"),
                    TextContent(text="Calling.", signature="sigX"),
                    ToolCall(id="call_r_0", name="a", arguments={"n": 1}, signature="sigA"),
                    ToolCall(id="call_r_1", name="b", arguments={}),
                ],
                api="gemini",
                provider="google",
                model="gemini-2.5-flash",
                stop_reason=StopReason.TOOL_USE,
            ),
            ToolResultMessage(
                tool_call_id="call_r_0",
                tool_name="a",
                content=[TextContent(text="one"), ImageContent(data="BBBB", mime_type="image/png")],
            ),
            ToolResultMessage(
                tool_call_id="call_r_1",
                tool_name="b",
                content=[TextContent(text="bad")],
                is_error=True,
            ),
            UserMessage(content="Thanks"),
        ]
    )
    contents = request_body(ctx)["contents"]
    assert contents == [
        {
            "role": "user",
            "parts": [{"text": "Look"}, {"inlineData": {"mimeType": "image/jpeg", "data": "AAAA"}}],
        },
        {
            "role": "model",
            "parts": [
                {"thought": True, "text": "hmm", "thoughtSignature": "sigT"},
                {"text": "Calling.", "thoughtSignature": "sigX"},
                {"functionCall": {"name": "a", "args": {"n": 1}}, "thoughtSignature": "sigA"},
                {"functionCall": {"name": "b", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "a", "response": {"output": "one"}}},
                {"functionResponse": {"name": "b", "response": {"error": "bad"}}},
                {"inlineData": {"mimeType": "image/png", "data": "BBBB"}},
            ],
        },
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]


def test_foreign_turns_lose_signatures_and_thinking_becomes_text() -> None:
    ctx = Context(
        messages=[
            UserMessage(content="q"),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="claude thought", signature="anthropic-sig"),
                    ToolCall(id="toolu_1", name="f", arguments={}),
                    OpaqueContent(provider="anthropic", block_type="server_tool_use", json="{}"),
                ],
                api="anthropic",
                provider="anthropic",
                model="claude-sonnet-4-5",
                stop_reason=StopReason.TOOL_USE,
            ),
        ]
    )
    contents = request_body(ctx)["contents"]
    assert contents[1]["parts"] == [
        {"text": "claude thought"},
        {"functionCall": {"name": "f", "args": {}}},
    ]
    # The orphaned call got a synthetic error result, so Gemini sees a complete turn.
    assert "functionResponse" in contents[2]["parts"][0]
    assert "error" in contents[2]["parts"][0]["functionResponse"]["response"]


def test_models_are_priced_in_the_catalogue() -> None:
    models = list_models("google")
    assert models and all(m.api == "gemini" for m in models)
    # the Gemini models are billed; models.dev lists the open Gemma models as free
    assert all(m.price_output > 0 for m in models if m.id.startswith("gemini"))


# ---------------------------------------------------------------------------
# Streamed function-call arguments
# ---------------------------------------------------------------------------


def test_partial_args_writer_builds_nested_json_piece_by_piece() -> None:
    writer = PartialArgsWriter()
    pieces = [
        writer.add("$.recipe.items[0].name", ("string", "Egg"), True),
        writer.add("$.recipe.items[0].name", ("string", "s"), False),
        writer.add("$.recipe.items[0].qty", ("json", "2"), False),
        writer.add("$.recipe.items[1].name", ("string", "Mil"), True),
        writer.add("$.recipe.title", ("string", "Omelette"), False),
        writer.add("$['odd key']", ("json", "null"), False),
        writer.close(),
    ]
    text = "".join(pieces)
    assert json.loads(text) == {
        "recipe": {"items": [{"name": "Eggs", "qty": 2}, {"name": "Mil"}], "title": "Omelette"},
        "odd key": None,
    }
    assert PartialArgsWriter().close() == "{}"


def test_partial_args_writer_rejects_rewriting_streamed_json() -> None:
    writer = PartialArgsWriter()
    writer.add("$.a", ("json", "1"), False)
    writer.add("$.b", ("json", "2"), False)
    with pytest.raises(ValueError, match="again"):
        writer.add("$.a", ("json", "3"), False)
    with pytest.raises(ValueError, match="out of order"):
        w = PartialArgsWriter()
        w.add("$.x[1]", ("json", "1"), False)
    with pytest.raises(ValueError, match="jsonPath"):
        PartialArgsWriter().add("a.b", ("json", "1"), False)


# ---------------------------------------------------------------------------
# Hand-made transcripts
# ---------------------------------------------------------------------------


def _last(name: str) -> Event:
    events = transcript(name)
    check_protocol(events)
    return events[-1]


def test_safety_finish_is_content_filter_keeping_text() -> None:
    events = transcript("safety-mid-stream.sse")
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.CONTENT_FILTER
    assert "SAFETY" in error.message
    assert accumulate(events).text == "Here is how"
    assert error.usage == Usage(input=10, output=5)


def test_prompt_block_reason_is_content_filter() -> None:
    error = _last("prompt-blocked.sse")
    assert isinstance(error, Error) and error.kind == ErrorKind.CONTENT_FILTER
    assert "PROHIBITED_CONTENT" in error.message


def test_max_tokens_is_length() -> None:
    done = _last("max-tokens.sse")
    assert isinstance(done, Done) and done.stop_reason == StopReason.LENGTH


def test_cut_before_finish_reason_ends_early() -> None:
    error = _last("truncated-before-finish.sse")
    assert isinstance(error, Error) and error.kind == ErrorKind.NETWORK
    assert "ended early" in error.message


def test_cut_after_finish_reason_still_finishes() -> None:
    done = _last("cut-after-finish.sse")
    assert isinstance(done, Done) and done.stop_reason == StopReason.STOP
    assert done.usage == Usage(input=10, output=5)


def test_usage_after_the_finish_reason_is_counted() -> None:
    done = _last("usage-after-finish.sse")
    assert isinstance(done, Done)
    # prompt 10 includes 4 cached; output includes 3 thought tokens.
    assert done.usage == Usage(input=6, cache_read=4, output=10, reasoning=3)


def test_error_object_in_stream_is_retryable() -> None:
    events = transcript("error-in-stream.sse")
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.NETWORK and error.status is None
    assert accumulate(events).text == "Partial"


def test_malformed_function_call_is_invalid_request() -> None:
    error = _last("malformed-function-call.sse")
    assert isinstance(error, Error) and error.kind == ErrorKind.INVALID_REQUEST
    assert "print(default_api" in error.message


def test_lf_framing_and_split_utf8() -> None:
    data = (TRANSCRIPTS / "lf-framing.sse").read_bytes()
    events = run(data)
    assert accumulate(events).text == "café 🙂"
    assert run(bytewise(data)) == events


def test_thought_and_text_blocks_keep_order_and_signatures() -> None:
    message = accumulate(transcript("thought-text-alternating.sse"))
    assert message.content == [
        ThinkingContent(thinking="plan A then B", signature="sigT"),
        TextContent(text="Answer 1 more", signature="sig1"),
        TextContent(text="Answer 2", signature="sig2"),  # a second signature: a new block
        ThinkingContent(thinking="rethink"),
        TextContent(text="final"),
    ]


def test_whole_function_calls_keep_ids_and_signatures() -> None:
    events = transcript("parallel-function-calls-with-ids.sse")
    message = accumulate(events)
    assert message.text == "Calling."
    assert [(c.id, c.name, c.arguments, c.signature) for c in message.tool_calls] == [
        ("fc_1", "a", {"n": 1}, "sigA"),
        ("fc_2", "b", {}, None),
    ]
    assert isinstance(events[-1], Done) and events[-1].stop_reason == StopReason.TOOL_USE


def test_streamed_args_with_typed_values() -> None:
    events = transcript("streamed-args-typed-values.sse")
    check_protocol(events)
    (call,) = accumulate(events).tool_calls
    assert call.arguments == {
        "steps": [{"n": 3, "ok": True, "why": None}, {"n": 2.5}],
        "title": 'He said "hi" — ok',
        "tags": ["x", "y"],
    }
    assert type(call.arguments["steps"][0]["n"]) is int  # numbers verbatim
    assert call.signature == "sigP"
    assert call.id == "call_resp_T1_0"
    assert sum(1 for e in events if type(e).__name__ == "ToolCallDelta") > 3  # it streamed


def test_max_tokens_inside_a_streamed_call_leaves_unparsable_arguments() -> None:
    events = transcript("max-tokens-inside-streamed-call.sse")
    check_protocol(events)
    assert isinstance(events[-1], Done) and events[-1].stop_reason == StopReason.LENGTH
    (call,) = accumulate(events).tool_calls
    assert call.arguments_json == '{"text":"Once upon a'
    assert call.parse_error is not None  # not mistaken for complete arguments


def test_streamed_args_out_of_order_is_a_protocol_error() -> None:
    error = _last("streamed-args-out-of-order.sse")
    assert isinstance(error, Error) and error.kind == ErrorKind.PROTOCOL


def test_code_execution_parts_are_opaque_blocks() -> None:
    message = accumulate(transcript("code-execution-parts.sse"))
    first, second, text = message.content
    assert isinstance(first, OpaqueContent) and first.provider == "google"
    assert json.loads(first.json) == {
        "executableCode": {"language": "PYTHON", "code": "print(1+1)"}
    }
    assert isinstance(second, OpaqueContent) and second.block_type == "codeExecutionResult"
    assert text == TextContent(text="It is 2.")
    # And they go back verbatim to Gemini.
    ctx = Context(messages=[UserMessage(content="q"), message])
    message.api, message.provider, message.model = "gemini", "google", "gemini-2.5-flash"
    parts = request_body(ctx)["contents"][1]["parts"]
    assert parts[0] == json.loads(first.json)


def _http_error(
    status: int, payload: dict[str, Any], headers: list[tuple[str, str]] | None = None
) -> Error:
    call = open_call(gemini(), Context.of("x"), Options(api_key="k"))
    call.receive_response(status, headers or [("content-type", "application/json")])
    call.receive_data(json.dumps(payload).encode())
    out = call.receive_eof()[-1]
    assert isinstance(out, Error)
    return out


def test_http_errors_from_real_gemini_bodies() -> None:
    # Bodies as the Gemini API returns them (ai.google.dev/gemini-api/docs/troubleshooting).
    bad_key = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ],
        }
    }
    assert _http_error(400, bad_key).kind == ErrorKind.AUTH
    exhausted = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "23s"}],
        }
    }
    throttled = _http_error(429, exhausted)
    assert throttled.kind == ErrorKind.THROTTLED and throttled.retry_after == 23.0
    overloaded = {
        "error": {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
    }
    assert _http_error(503, overloaded).kind == ErrorKind.NETWORK
    too_long = {
        "error": {
            "code": 400,
            "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            "status": "INVALID_ARGUMENT",
        }
    }
    assert _http_error(400, too_long).kind == ErrorKind.CONTEXT_OVERFLOW
    denied = {
        "error": {
            "code": 403,
            "message": "Permission denied on resource project p.",
            "status": "PERMISSION_DENIED",
        }
    }
    assert _http_error(403, denied).kind == ErrorKind.AUTH
    # Without alt=sse Gemini wraps the error in a JSON array; the message is still found.
    call = open_call(gemini(), Context.of("x"), Options(api_key="k"))
    call.receive_response(404, [("content-type", "application/json")])
    call.receive_data(
        json.dumps(
            [{"error": {"code": 404, "message": "models/nope is not found", "status": "NOT_FOUND"}}]
        ).encode()
    )
    error = call.receive_eof()[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.INVALID_REQUEST
    assert "models/nope is not found" in error.message


# ---------------------------------------------------------------------------
# Corpus conformance
# ---------------------------------------------------------------------------


def _fold_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            out.append({"kind": "text", "text": block.text, "sig": block.signature is not None})
        elif isinstance(block, ThinkingContent):
            out.append({"kind": "thought", "text": block.thinking})
        elif isinstance(block, ToolCall):
            out.append(
                {
                    "kind": "functionCall",
                    "name": block.name,
                    "args": block.arguments,
                    "sig": block.signature is not None,
                }
            )
    return out


def _want_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reducer's parts merged the way streamfn merges blocks (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for part in parts:
        kind = part["kind"]
        if kind == "functionCall":
            # The reducer gives args null for a call without args; streamfn's is {}.
            args = part.get("args") or {}
            out.append(
                {
                    "kind": kind,
                    "name": part["name"],
                    "args": args,
                    "sig": bool(part.get("thoughtSignature")),
                }
            )
        elif kind in ("text", "thought"):
            if not part["text"] and not part.get("thoughtSignature"):
                continue  # an empty closing part is no block
            if out and out[-1]["kind"] == kind:
                out[-1]["text"] += part["text"]
                if kind == "text":
                    out[-1]["sig"] = out[-1]["sig"] or bool(part.get("thoughtSignature"))
            elif kind == "text":
                out.append(
                    {"kind": kind, "text": part["text"], "sig": bool(part.get("thoughtSignature"))}
                )
            else:
                out.append({"kind": kind, "text": part["text"]})
    return out


@pytest.mark.parametrize("entry", corpus_entries("gemini"))
def test_corpus_conformance(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    data = body(entry)
    if entry["file"].endswith(".chunks.txt"):
        # The unframed fixture, framed here as the corpus framed its .sse copy.
        framed = "".join(
            f"data: {line}\r\n\r\n" for line in data.decode().splitlines() if line.strip()
        )
        copy = {**entry, "file": entry["file"].replace(".chunks.txt", ".sse")}
        assert run(framed.encode()) == run(body(copy))
        return
    events = run(data)
    check_protocol(events)
    assert isinstance(events[-1], Done), events[-1]
    want = expected(entry)
    assert want is not None
    message = accumulate(events)
    assert _fold_parts(message) == _want_parts(want["parts"])
    meta = want["usageMetadata"]
    thoughts = meta.get("thoughtsTokenCount", 0)
    assert message.usage.output == meta.get("candidatesTokenCount", 0) + thoughts
    assert message.usage.reasoning == thoughts
    assert message.usage.total == meta["totalTokenCount"]
    has_calls = any(p["kind"] == "functionCall" for p in want["parts"])
    assert want["finishReason"] == "STOP"
    assert message.stop_reason == (StopReason.TOOL_USE if has_calls else StopReason.STOP)


# ---------------------------------------------------------------------------
# Properties over generated transcripts
# ---------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=10)
_scalar = st.one_of(st.integers(-9, 9), st.text(max_size=6), st.booleans(), st.none())
_key = st.text("abcxyz", min_size=1, max_size=3)
_args = st.dictionaries(
    _key,
    st.one_of(_scalar, st.lists(_scalar, max_size=3), st.dictionaries(_key, _scalar, max_size=2)),
    max_size=3,
)


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{path}[{i}]")]
    return [(path, value)]


def _no_empty_container(args: dict[str, Any]) -> bool:
    # Paths name leaves only, so an empty list or object inside streamed args cannot
    # be expressed (Gemini would have to send it whole).
    return all(v != [] and v != {} for v in args.values())


def _partial(path: str, value: Any, more: bool) -> dict[str, Any]:
    arg: dict[str, Any] = {"jsonPath": path}
    if isinstance(value, bool):
        arg["boolValue"] = value
    elif isinstance(value, int):
        arg["numberValue"] = value
    elif value is None:
        arg["nullValue"] = "NULL_VALUE"
    else:
        arg["stringValue"] = value
    if more:
        arg["willContinue"] = True
    return arg


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[bytes, list[Any], StopReason]:
    """A valid Gemini SSE body and the blocks it means."""
    parts: list[dict[str, Any]] = []
    blocks: list[Any] = []
    calls = 0
    for kind in draw(
        st.lists(st.sampled_from(["text", "thought", "call", "streamed"]), max_size=5)
    ):
        if kind in ("text", "thought"):
            pieces = draw(st.lists(_text, min_size=1, max_size=3))
            thought = kind == "thought"
            new = [{"text": p, "thought": True} if thought else {"text": p} for p in pieces]
            prev = blocks[-1] if blocks else None
            if thought and isinstance(prev, ThinkingContent):
                prev.thinking += "".join(pieces)
            elif not thought and isinstance(prev, TextContent):
                prev.text += "".join(pieces)
            else:
                blocks.append(
                    ThinkingContent(thinking="".join(pieces))
                    if thought
                    else TextContent(text="".join(pieces))
                )
            parts.extend(new)
            continue
        args = draw(_args if kind == "call" else _args.filter(_no_empty_container))
        call = ToolCall(id=f"call_gen_{calls}", name=f"f{calls}", arguments=args)
        calls += 1
        if kind == "call":
            parts.append({"functionCall": {"name": call.name, "args": args}})
        else:
            parts.append({"functionCall": {"name": call.name, "willContinue": True}})
            for path, value in _leaves(args, "$"):
                if isinstance(value, str) and len(value) > 1 and draw(st.booleans()):
                    cut = draw(st.integers(1, len(value) - 1))
                    parts.append(
                        {
                            "functionCall": {
                                "partialArgs": [_partial(path, value[:cut], True)],
                                "willContinue": True,
                            }
                        }
                    )
                    value = value[cut:]
                parts.append(
                    {
                        "functionCall": {
                            "partialArgs": [_partial(path, value, False)],
                            "willContinue": True,
                        }
                    }
                )
            parts.append({"functionCall": {}})
        blocks.append(call)
    # Group parts into chunks of 1-3 parts; the last chunk carries the finish reason.
    chunks: list[list[dict[str, Any]]] = []
    i = 0
    while i < len(parts):
        n = draw(st.integers(1, 3))
        chunks.append(parts[i : i + n])
        i += n
    finish, stop = draw(
        st.sampled_from([("STOP", StopReason.STOP), ("MAX_TOKENS", StopReason.LENGTH)])
    )
    if finish == "STOP" and calls:
        stop = StopReason.TOOL_USE
    frames: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": c}}], "responseId": "gen"}
        for c in chunks
    ]
    frames.append(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": finish}
            ],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4},
            "responseId": "gen",
        }
    )
    sep = draw(st.sampled_from(["\r\n\r\n", "\n\n"]))
    data = "".join(f"data: {json.dumps(f, ensure_ascii=False)}{sep}" for f in frames).encode()
    return data, blocks, stop


@given(transcripts(), st.lists(st.integers(0, 10**6), max_size=8))
def test_any_chunking_gives_the_intended_stream(
    case: tuple[bytes, list[Any], StopReason], cuts: list[int]
) -> None:
    data, blocks, stop = case
    whole = run(data)
    offsets = sorted({c % (len(data) + 1) for c in cuts})
    assert run(split_at(data, offsets)) == whole
    check_protocol(whole)
    done = whole[-1]
    assert isinstance(done, Done) and done.stop_reason == stop
    assert done.usage == Usage(input=3, output=4)
    message = accumulate(whole)
    assert [
        (b.id, b.name, b.arguments) if isinstance(b, ToolCall) else b for b in message.content
    ] == [(b.id, b.name, b.arguments) if isinstance(b, ToolCall) else b for b in blocks]


@given(transcripts(), st.data())
def test_mutated_transcripts_end_in_a_typed_error_never_an_exception(
    case: tuple[bytes, list[Any], StopReason], data: st.DataObject
) -> None:
    raw = case[0]
    mutation = data.draw(st.sampled_from(["truncate", "flip", "drop_line"]))
    if mutation == "truncate":
        mutated = raw[: data.draw(st.integers(0, len(raw) - 1))]
    elif mutation == "flip":
        at = data.draw(st.integers(0, len(raw) - 1))
        mutated = raw[:at] + bytes([raw[at] ^ data.draw(st.integers(1, 255))]) + raw[at + 1 :]
    else:
        lines = raw.split(b"\n")
        drop = data.draw(st.integers(0, len(lines) - 1))
        mutated = b"\n".join(lines[:drop] + lines[drop + 1 :])
    events = run(mutated)
    check_protocol(events)
    if mutation == "truncate" and b"finishReason" not in mutated:
        last = events[-1]
        assert isinstance(last, Error) and last.kind is not None


# ---------------------------------------------------------------------------
# The JSON-array format (no alt=sse)
# ---------------------------------------------------------------------------

JSON = [("content-type", "application/json; charset=UTF-8")]
ARRAY_MODEL = gemini(base_url="http://127.0.0.1:9", extra={"stream_format": "json"})


def _as_array(sse: bytes) -> bytes:
    """An SSE recording re-framed as Gemini frames the same chunks without alt=sse."""
    elements = [
        block[6:]
        for block in sse.replace(b"\r\n", b"\n").split(b"\n\n")
        if block.startswith(b"data: ")
    ]
    return b"[" + b"\n,\r\n".join(elements) + b"]"


def test_json_array_request_has_no_alt_sse() -> None:
    req = build_request(ARRAY_MODEL, Context.of("x"), Options())
    assert req.url.endswith("/v1beta/models/gemini-2.5-flash:streamGenerateContent")


@pytest.mark.parametrize(
    "entry",  # a .chunks.txt file is a chunking record of an .sse recording, not a body
    [p for p in corpus_entries("gemini") if not str(p.id).endswith(".chunks.txt")],
)
def test_corpus_as_json_array_gives_the_same_events(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    data = body(entry)
    want = run(data)[1:]  # Start names the replay model, which differs
    array = _as_array(data)
    for size in (1, 13, 1 << 16):
        pieces = [array[i : i + size] for i in range(0, len(array), size)]
        assert replay("gemini", pieces, model=ARRAY_MODEL, headers=JSON)[1:] == want


def test_json_array_cut_before_finish_ends_early() -> None:
    array = _as_array((TRANSCRIPTS / "max-tokens.sse").read_bytes())
    events = replay(
        "gemini", array[: array.index(b"MAX_TOKENS") - 30], model=ARRAY_MODEL, headers=JSON
    )
    check_protocol(events)
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.NETWORK


_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text('ab"\\[]{},\n \u00e9')),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text('a"[{\\', max_size=3), inner, max_size=3),
    ),
    max_leaves=8,
)


@given(
    st.lists(st.dictionaries(st.text('k"]\\', max_size=3), _json_values, max_size=3), max_size=5),
    st.sampled_from([b",", b"\n,\r\n", b" , "]),
    st.lists(st.integers(0, 10**6), max_size=10),
)
def test_json_array_splitter_any_chunking(
    objects: list[dict[str, Any]], separator: bytes, cuts: list[int]
) -> None:
    encoded = [json.dumps(o).encode() for o in objects]
    data = b"[" + separator.join(encoded) + b"]\n"
    offsets = sorted({c % (len(data) + 1) for c in cuts})
    splitter = JSONArrayDecoder()
    got: list[bytes] = []
    for chunk in split_at(data, offsets):
        got += splitter.feed(chunk)
    assert [json.loads(e) for e in got] == objects
    assert splitter.complete


def test_json_array_splitter_caps_an_element() -> None:
    splitter = JSONArrayDecoder(max_element_bytes=64)
    with pytest.raises(JSONArrayError, match="larger than 64") as first:
        splitter.feed(b'[{"text": "' + b"x" * 100)
    assert first.value.limit
    with pytest.raises(JSONArrayError) as again:  # sticky, like every decoder
        splitter.feed(b"}]")
    assert again.value is first.value
    with pytest.raises(DecodeError, match="not a JSON array"):
        JSONArrayDecoder().feed(b'{"a": 1}')
