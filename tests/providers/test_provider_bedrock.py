"""AWS Bedrock ConverseStream: Converse bodies, SigV4, event-stream frames, corpus, properties."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from chunking import bytewise, split_at
from corpus_support import body, corpus_dir, corpus_entries, expected, require_corpus
from hypothesis import given
from hypothesis import strategies as st
from request_oracles import violations

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
    UserMessage,
    open_call,
    replay,
)
from streamfn.core._accumulate import accumulate, check_protocol
from streamfn.core.dialects.bedrock._response import (
    AWSCredentials,
    BedrockCall,
    build_request,
    format_aws_key,
    parse_aws_key,
    sign,
)
from streamfn.core.wire._eventstream import encode_message

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts" / "bedrock"
API = "bedrock"
ES = [("content-type", "application/vnd.amazon.eventstream")]
CLAUDE = "us.anthropic.claude-sonnet-4-20250514-v1:0"


def model(id: str = CLAUDE, **kw: Any) -> Model:
    kw.setdefault("extra", {"region": "eu-west-1"})
    return Model(id=id, provider="bedrock", api=API, base_url="", **kw)


def frame(event: str, payload: dict[str, Any]) -> bytes:
    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload).encode())


def exception(kind: str, message: str) -> bytes:
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())


def run(data: bytes | list[bytes]) -> list[Event]:
    events = replay(API, data, headers=ES)
    check_protocol(events)
    return events


START = frame("messageStart", {"role": "assistant"})


def stop(reason: str) -> bytes:
    return frame("messageStop", {"stopReason": reason})


def metadata(inp: int = 10, out: int = 5, **extra: int) -> bytes:
    usage = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out, **extra}
    return frame("metadata", {"usage": usage, "metrics": {"latencyMs": 1}})


def text(index: int, delta: str) -> bytes:
    return frame("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": delta}})


def block_stop(index: int) -> bytes:
    return frame("contentBlockStop", {"contentBlockIndex": index})


# -- requests ----------------------------------------------------------------------


def test_request_url_region_and_model_id_encoding() -> None:
    req = build_request(model(), Context.of("Hi", system_prompt="Be kind."), Options())
    assert req.url == (
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/"
        "us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    )
    assert json.loads(req.body) == {
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "system": [{"text": "Be kind."}],
    }
    assert not any(k.lower() == "authorization" for k, _ in req.headers)


def test_request_converse_blocks_tools_and_inference_config() -> None:
    previous = AssistantMessage(
        content=[
            ThinkingContent(thinking="hmm", signature="sig=="),
            ThinkingContent(thinking="", signature="UkVEQUNURUQ=", redacted=True),
            TextContent(text="Checking."),
            ToolCall(id="tooluse_1", name="weather", arguments={"city": "Lyon"}),
            ToolCall(id="tooluse_2", name="time", arguments={}),
        ],
        api=API,
        provider="bedrock",
        model=CLAUDE,
        stop_reason=StopReason.TOOL_USE,
    )
    context = Context(
        messages=[
            UserMessage(
                content=[
                    TextContent(text="Look"),
                    ImageContent(data="/9j/4AAQ", mime_type="image/jpeg"),
                ]
            ),
            previous,
            ToolResultMessage(
                tool_call_id="tooluse_1", tool_name="weather", content=[TextContent(text="sunny")]
            ),
            ToolResultMessage(
                tool_call_id="tooluse_2",
                tool_name="time",
                content=[TextContent(text="boom")],
                is_error=True,
            ),
        ],
        tools=[Tool(name="weather", description="Weather", parameters={"type": "object"})],
    )
    options = Options(
        max_tokens=500, temperature=0.3, top_p=0.9, stop=["END"], tool_choice="required"
    )
    got = json.loads(build_request(model(), context, options).body)
    assert got["messages"] == [
        {
            "role": "user",
            "content": [
                {"text": "Look"},
                {"image": {"format": "jpeg", "source": {"bytes": "/9j/4AAQ"}}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "sig=="}}},
                {"reasoningContent": {"redactedContent": "UkVEQUNURUQ="}},
                {"text": "Checking."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_1",
                        "name": "weather",
                        "input": {"city": "Lyon"},
                    }
                },
                {"toolUse": {"toolUseId": "tooluse_2", "name": "time", "input": {}}},
            ],
        },
        {  # consecutive tool results merge into one user turn: Converse alternates roles
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "sunny"}]}},
                {
                    "toolResult": {
                        "toolUseId": "tooluse_2",
                        "content": [{"text": "boom"}],
                        "status": "error",
                    }
                },
            ],
        },
    ]
    assert got["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "weather",
                    "description": "Weather",
                    "inputSchema": {"json": {"type": "object"}},
                }
            }
        ],
        "toolChoice": {"any": {}},
    }
    assert got["inferenceConfig"] == {
        "maxTokens": 500,
        "temperature": 0.3,
        "topP": 0.9,
        "stopSequences": ["END"],
    }


def test_request_thinking_budget_for_reasoning_models() -> None:
    got = json.loads(
        build_request(
            model(reasoning=True, max_output=64000),
            Context.of("x"),
            Options(thinking=ThinkingLevel.MEDIUM, temperature=0.7, max_tokens=2000),
        ).body
    )
    assert got["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 8192}
    }
    # the caller's answer room on top of the budget, as on Anthropic's own API
    assert got["inferenceConfig"] == {"maxTokens": 8192 + 2000}


@pytest.mark.parametrize(
    "claude", ["eu.anthropic.claude-opus-4-1-20250805-v1:0", "us.anthropic.claude-sonnet-4-5-v1:0"]
)
def test_claude_ids_keep_thinking_whatever_the_reasoning_flag(claude: str) -> None:
    """A Claude id of a thinking generation thinks on Bedrock though its `Model` says
    nothing about reasoning (it used to be dropped without a word)."""
    got = json.loads(
        build_request(
            model(claude, max_output=32_000), Context.of("x"), Options(thinking="medium")
        ).body
    )
    assert got["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 8192}
    }
    assert got["inferenceConfig"]["maxTokens"] > 8192
    assert violations(model(claude), got) == []


def test_claude_4_6_on_bedrock_thinks_adaptively() -> None:
    got = json.loads(
        build_request(
            model("global.anthropic.claude-opus-4-6-v1"), Context.of("x"), Options(thinking="low")
        ).body
    )
    assert got["additionalModelRequestFields"] == {
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "low"},
    }
    assert "maxTokens" not in got.get("inferenceConfig", {})  # no budget to fit around


def test_a_model_that_cannot_think_says_so(caplog: pytest.LogCaptureFixture) -> None:
    got = json.loads(
        build_request(
            model("amazon.nova-pro-v1:0"), Context.of("x"), Options(thinking=ThinkingLevel.HIGH)
        ).body
    )
    assert "additionalModelRequestFields" not in got
    assert "thinking is not supported by this model" in caplog.text


def test_bearer_api_key_needs_no_signing() -> None:
    call = open_call(model(), Context.of("x"), Options(api_key="ABSKbedrockapikey"))
    assert isinstance(call, BedrockCall) and not call.needs_signing
    assert ("authorization", "Bearer ABSKbedrockapikey") in call.request.headers


def test_aws_credentials_hide_their_secrets() -> None:
    creds = AWSCredentials(
        access_key_id="AKIDEXAMPLE",
        secret_access_key="wJalr/K7MDENG+bPxRfiCY",
        session_token="FwoGZXIvYXdzEJr==",
    )
    options = Options(aws_credentials=creds)
    for text in (repr(creds), repr(options), str(creds)):
        assert "wJalr" not in text and "AKIDEXAMPLE" not in text and "FwoG" not in text
    with pytest.raises(ValueError, match="non-empty"):
        AWSCredentials(access_key_id="", secret_access_key="s")


def test_packed_aws_key_still_signs_for_one_release_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="AWSCredentials"):
        key = format_aws_key("AKIDEXAMPLE", "wJalr/K7MDENG+bPxRfiCY", "FwoGZXIvYXdzEJr==")
    with pytest.warns(DeprecationWarning, match="aws_credentials="):
        creds = parse_aws_key(key)
    assert creds == AWSCredentials(
        access_key_id="AKIDEXAMPLE",
        secret_access_key="wJalr/K7MDENG+bPxRfiCY",
        session_token="FwoGZXIvYXdzEJr==",
    )
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError):
        parse_aws_key("a:b:c:d")
    with pytest.warns(DeprecationWarning, match="ACCESS:SECRET"):
        call = open_call(model(), Context.of("Hello"), Options(api_key=key))
    assert isinstance(call, BedrockCall) and call.credentials == creds
    assert not any(k.lower() == "authorization" for k, _ in call.request.headers)


def test_sigv4_signature_matches_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shell signs right before sending; the result is what botocore would send."""
    botocore_auth = pytest.importorskip("botocore.auth")
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    when = datetime(2025, 3, 1, 12, 30, 45, tzinfo=UTC)
    creds = AWSCredentials(
        access_key_id="AKIDEXAMPLE", secret_access_key="secret/key+1", session_token="tok"
    )
    options = Options(aws_credentials=creds)
    call = open_call(model(), Context.of("Hello"), options)
    assert isinstance(call, BedrockCall) and call.needs_signing
    unsigned = call.request
    signed = call.sign(when)
    assert call.request is signed and signed.body == unsigned.body
    headers = dict(signed.headers)
    assert headers["X-Amz-Date"] == "20250301T123045Z"
    assert headers["X-Amz-Security-Token"] == "tok"

    reference = AWSRequest(
        method="POST", url=unsigned.url, data=unsigned.body, headers=dict(unsigned.headers)
    )
    monkeypatch.setattr(botocore_auth, "get_current_datetime", lambda: when.replace(tzinfo=None))
    botocore_auth.SigV4Auth(
        Credentials("AKIDEXAMPLE", "secret/key+1", "tok"), "bedrock", "eu-west-1"
    ).add_auth(reference)
    assert headers["Authorization"] == reference.headers["Authorization"]
    # pure: the same instant signs the same way
    assert sign(unsigned, creds, when, region="eu-west-1") == signed


# -- frames ----------------------------------------------------------------------


def test_text_tool_use_and_usage_with_cache() -> None:
    data = b"".join(
        [
            START,
            text(0, "Let me "),
            text(0, "check."),
            block_stop(0),
            frame(
                "contentBlockStart",
                {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tu_1", "name": "w"}}},
            ),
            frame(
                "contentBlockDelta",
                {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"ci'}}},
            ),
            frame(
                "contentBlockDelta",
                {"contentBlockIndex": 1, "delta": {"toolUse": {"input": 'ty":"Oslo"}'}}},
            ),
            block_stop(1),
            stop("tool_use"),
            metadata(12, 8, cacheReadInputTokens=100, cacheWriteInputTokens=20),
        ]
    )
    events = run(data)
    assert run(bytewise(data)) == events
    message = accumulate(events)
    assert message.text == "Let me check."
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("tu_1", "w", {"city": "Oslo"})
    ]
    assert message.stop_reason == StopReason.TOOL_USE
    u = message.usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total) == (12, 8, 100, 20, 140)


def test_finishes_at_eof_after_message_stop_without_metadata() -> None:
    events = run(START + text(0, "hi") + block_stop(0) + stop("max_tokens"))
    assert isinstance(events[-1], Done) and events[-1].stop_reason == StopReason.LENGTH


def test_no_message_stop_is_an_early_end() -> None:
    final = run(START + text(0, "hi"))[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.NETWORK


@pytest.mark.parametrize(
    ("kind", "message", "want"),
    [
        # Real Bedrock exception messages (botocore/boto3 issues, AWS docs).
        (
            "throttlingException",
            "Too many tokens, please wait before trying again.",
            ErrorKind.THROTTLED,
        ),
        (
            "throttlingException",
            "Too many requests, please wait before trying again.",
            ErrorKind.THROTTLED,
        ),
        (
            "validationException",
            "Input is too long for requested model.",
            ErrorKind.CONTEXT_OVERFLOW,
        ),
        (
            "validationException",
            "The model returned the following errors: prompt is too long: 201025 tokens > 200000 maximum",
            ErrorKind.CONTEXT_OVERFLOW,
        ),
        (
            "validationException",
            "The provided model identifier is invalid.",
            ErrorKind.INVALID_REQUEST,
        ),
        (
            "modelStreamErrorException",
            "Model stream error: The system encountered an unexpected error during processing. "
            "Try your request again.",
            ErrorKind.NETWORK,
        ),
        (
            "internalServerException",
            "The system encountered an unexpected error.",
            ErrorKind.NETWORK,
        ),
        (
            "serviceUnavailableException",
            "Bedrock is unable to process your request.",
            ErrorKind.NETWORK,
        ),
        (
            "accessDeniedException",
            "You don't have access to the model with the specified model ID.",
            ErrorKind.AUTH,
        ),
    ],
)
def test_exception_frames_are_classified(kind: str, message: str, want: ErrorKind) -> None:
    events = run(START + text(0, "par") + exception(kind, message))
    final = events[-1]
    assert isinstance(final, Error) and final.kind == want
    assert kind in final.message and final.status is None
    assert accumulate(events).text == "par"


def test_exception_mid_stream_transcript() -> None:
    data = (TRANSCRIPTS / "exception-mid-stream.bin").read_bytes()
    final = run(data)[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.NETWORK


def test_http_error_body() -> None:
    events = replay(
        API,
        b'{"message":"The security token included in the request is invalid."}',
        status=403,
        headers=[
            ("content-type", "application/json"),
            ("x-amzn-ErrorType", "UnrecognizedClientException"),
        ],
    )
    final = events[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.AUTH and final.status == 403


def test_corrupt_frame_is_a_protocol_error_and_huge_frame_a_limit() -> None:
    data = bytearray(START + text(0, "x"))
    data[len(START) + 20] ^= 0xFF
    final = run(bytes(data))[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.PROTOCOL
    big = text(0, "y" * 5000)
    events = replay(API, START + big, headers=ES, options=Options(max_event_bytes=1000))
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.LIMIT


@pytest.mark.parametrize("reason", ["guardrail_intervened", "content_filtered"])
def test_filtered_stop_reasons_are_content_filter_errors(reason: str) -> None:
    events = run(START + text(0, "The {NAME}") + block_stop(0) + stop(reason) + metadata())
    final = events[-1]
    assert isinstance(final, Error) and final.kind == ErrorKind.CONTENT_FILTER
    assert final.usage is not None and final.usage.output == 5
    assert accumulate(events).text == "The {NAME}"


# -- corpus ----------------------------------------------------------------------


@pytest.mark.parametrize("entry", corpus_entries("bedrock-eventstream"))
def test_corpus_conformance(entry: dict[str, Any] | None) -> None:
    entry = require_corpus(entry)
    data = body(entry)
    events = run(data)
    want = expected(entry)
    assert want is not None
    message = accumulate(events)
    final = events[-1]
    # invoke-stream-nova.bin is InvokeModelWithResponseStream: `chunk` frames whose
    # base64 bytes hold Converse-shaped events (with a guardrail every token is its
    # own block: 56 text blocks, kept as they came).
    got: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent):
            got.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            got.append(("reasoning", block.thinking, bool(block.signature), block.redacted))
        elif isinstance(block, ToolCall):
            got.append(("toolUse", block.id, block.name, block.arguments))
        elif isinstance(block, OpaqueContent):
            got.append(("opaque", json.loads(block.json)))
    wanted: list[Any] = []
    for b in want["content"]:
        if b["type"] == "text":
            wanted.append({"type": "text", "text": b["text"]})
        elif b["type"] == "reasoning":
            redacted = "redactedContent" in b or b.get("redacted", False)
            wanted.append(
                (
                    "reasoning",
                    b.get("reasoning", ""),
                    bool(b.get("signature") or redacted),
                    redacted,
                )
            )
        elif b["type"] == "toolUse" and b.get("toolType") == "server_tool_use":
            # carried whole as an opaque Converse block, replayed verbatim
            wanted.append(
                (
                    "opaque",
                    {
                        "toolUse": {
                            "toolUseId": b["toolUseId"],
                            "name": b["name"],
                            "type": "server_tool_use",
                            "input": b["input"],
                        }
                    },
                )
            )
        elif b["type"] == "toolUse":
            wanted.append(("toolUse", b["toolUseId"], b["name"], b["input"]))
        elif b["type"] == "toolResult":
            wanted.append(
                (
                    "opaque",
                    {
                        "toolResult": {
                            "toolUseId": b["toolUseId"],
                            "status": b["status"],
                            "type": b["resultType"],
                            "content": b["content"],
                        }
                    },
                )
            )
    assert got == wanted
    usage = want["usage"]
    assert (message.usage.input, message.usage.output) == (
        usage["inputTokens"],
        usage["outputTokens"],
    )
    stop_reason = want["stopReason"]
    if stop_reason in ("guardrail_intervened", "content_filtered"):
        assert isinstance(final, Error) and final.kind == ErrorKind.CONTENT_FILTER
    else:
        assert isinstance(final, Done)
        assert (
            final.stop_reason
            == {"end_turn": StopReason.STOP, "tool_use": StopReason.TOOL_USE}[stop_reason]
        )


def test_corpus_redacted_thinking_keeps_the_payload_for_replay() -> None:
    entries = [
        e
        for e in corpus_entries("bedrock-eventstream")
        if e.values[0] and "redacted" in e.values[0]["file"]
    ]
    corpus_dir()
    assert entries, "the corpus holds no redacted-thinking Bedrock recording"
    events = run(body(entries[0].values[0]))
    thinking = [b for b in accumulate(events).content if isinstance(b, ThinkingContent)]
    assert len(thinking) == 2 and all(b.redacted and b.signature for b in thinking)
    base64.b64decode(thinking[0].signature or "", validate=True)


# -- properties ------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=10)


@st.composite
def wire_transcripts(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, Any]]]:
    frames = [START]
    want: list[tuple[str, Any]] = []
    for index in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "reasoning", "tool"]))
        if kind == "tool":
            args = draw(st.dictionaries(st.sampled_from("ab"), st.integers() | _text, max_size=2))
            raw = json.dumps(args)
            frames.append(
                frame(
                    "contentBlockStart",
                    {
                        "contentBlockIndex": index,
                        "start": {"toolUse": {"toolUseId": f"t{index}", "name": "f"}},
                    },
                )
            )
            cut = draw(st.integers(0, len(raw)))
            for part in (raw[:cut], raw[cut:]):
                if part:
                    frames.append(
                        frame(
                            "contentBlockDelta",
                            {"contentBlockIndex": index, "delta": {"toolUse": {"input": part}}},
                        )
                    )
            want.append(("tool", (f"t{index}", args)))
        else:
            parts = draw(st.lists(_text, min_size=1, max_size=3))
            for p in parts:
                delta = {"text": p} if kind == "text" else {"reasoningContent": {"text": p}}
                frames.append(
                    frame("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})
                )
            want.append((kind, "".join(parts)))
        frames.append(block_stop(index))
    frames += [stop("end_turn"), metadata()]
    return b"".join(frames), want


@given(wire_transcripts(), st.data())
def test_any_chunking_gives_the_intended_stream(
    generated: tuple[bytes, list[tuple[str, Any]]], data: st.DataObject
) -> None:
    wire, want = generated
    events = run(wire)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    assert run(split_at(wire, cuts)) == events
    got: list[tuple[str, Any]] = []
    for block in accumulate(events).content:
        if isinstance(block, TextContent):
            got.append(("text", block.text))
        elif isinstance(block, ThinkingContent):
            got.append(("reasoning", block.thinking))
        elif isinstance(block, ToolCall):
            got.append(("tool", (block.id, block.arguments)))
    assert got == want


@given(wire_transcripts(), st.data())
def test_property_mutations_end_in_a_typed_terminal(
    generated: tuple[bytes, list[tuple[str, Any]]], data: st.DataObject
) -> None:
    wire, _ = generated
    i = data.draw(st.integers(0, len(wire) - 1))
    if data.draw(st.booleans()):
        wire = wire[:i]
    else:
        wire = wire[:i] + bytes([wire[i] ^ data.draw(st.integers(1, 255))]) + wire[i + 1 :]
    events = run(wire)
    assert isinstance(events[-1], (Done, Error))
