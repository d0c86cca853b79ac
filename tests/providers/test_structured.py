"""Structured output: schemas from types, the answer parsed on every wire format, the
forced-tool emulation shown as text, and a typed error when the answer does not validate.

Request bodies are checked against the SDK types in test_request_conformance.py; here
the responses: bodies in each wire format (the loopback fake provider's builders and
hand-written forced-tool streams) through the real state machines and the shells.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import msgspec
import pydantic
import pytest
import trio
from fake_provider import WIRE_FORMATS, FakeProvider

import streamfn.io_asyncio as aio
import streamfn.io_trio as tio
from streamfn.core import (
    Context,
    Model,
    Options,
    StopReason,
    TextDelta,
    ToolCallStart,
    accumulate,
    check_protocol,
    get_model,
    model,
    open_call,
)
from streamfn.core._completion import finish_completion
from streamfn.core._messages import AssistantMessage, TextContent
from streamfn.core._options import client_fields
from streamfn.core.json._structured import (
    ANSWER_TOOL,
    OutputValidationError,
    StructuredOutputUnsupported,
    output_schema,
    parse_output,
    strict_schema,
)
from streamfn.core.wire._eventstream import encode_message
from streamfn.core.wire._sse import encode_sse


class Day(msgspec.Struct):
    date: str
    high: float


class Forecast(msgspec.Struct):
    city: str
    days: list[Day]
    unit: Literal["c", "f"] | None = None


class Node(msgspec.Struct):
    name: str
    children: list[Node] = []


class PydanticForecast(pydantic.BaseModel):
    city: str
    days: list[int]


ANSWER = {"city": "Paris", "days": [{"date": "2025-06-01", "high": 21.5}], "unit": "c"}
ANSWER_JSON = json.dumps(ANSWER)
#: the answer cut where a streaming wire would cut it
FRAGMENTS = [ANSWER_JSON[:7], ANSWER_JSON[7:30], ANSWER_JSON[30:]]


# -- schemas --------------------------------------------------------------------------


def test_a_struct_becomes_an_object_schema_with_its_refs_inlined() -> None:
    out = output_schema(Forecast)
    assert out.name == "Forecast" and out.target is Forecast
    assert out.schema["type"] == "object" and "$defs" not in json.dumps(out.schema)
    assert out.schema["properties"]["days"]["items"]["properties"]["high"] == {"type": "number"}


def test_a_pydantic_model_uses_its_own_schema() -> None:
    out = output_schema(PydanticForecast)
    assert out.schema == PydanticForecast.model_json_schema()
    assert out.target is PydanticForecast


def test_a_dict_schema_is_named_from_its_title_in_wire_characters() -> None:
    out = output_schema({"title": "weather report!", "type": "object", "properties": {}})
    assert out.name == "weather_report_" and out.target is None


def test_what_is_not_an_object_schema_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="wrap a list"):
        output_schema(list[int])
    with pytest.raises(TypeError, match="neither a JSON Schema"):
        output_schema(object())
    remote = {"type": "object", "properties": {"a": {"$ref": "https://evil.example/s.json"}}}
    with pytest.raises(ValueError, match="not a local definition"):
        output_schema(remote)


def test_a_recursive_schema_keeps_its_defs_and_gemini_1_refuses_it() -> None:
    out = output_schema(Node)
    assert out.schema["type"] == "object" and "Node" in out.schema["$defs"]
    gemini_2 = get_model("google:gemini-2.0-flash")
    with pytest.raises(ValueError, match="recursive"):
        open_call(gemini_2, Context.of("tree"), Options(response_schema=Node))


def test_strict_mode_only_where_every_key_is_required() -> None:
    closed, strict = strict_schema(output_schema(Forecast).schema)
    assert not strict  # `unit` is optional: strict would make it required
    assert closed["additionalProperties"] is False
    assert closed["properties"]["days"]["items"]["additionalProperties"] is False
    _, strict = strict_schema(output_schema(Day).schema)
    assert strict
    _, strict = strict_schema({"type": "object", "additionalProperties": True, "properties": {}})
    assert not strict


def test_a_model_known_without_schema_output_is_a_clear_error() -> None:
    with pytest.raises(StructuredOutputUnsupported, match=r"deepseek.*response_schema"):
        open_call(
            get_model("deepseek:deepseek-chat"), Context.of("x"), Options(response_schema=Day)
        )


def test_a_tool_named_like_the_answer_tool_is_refused() -> None:
    from streamfn.core import Tool

    context = Context(messages=Context.of("x").messages, tools=[Tool(name=ANSWER_TOOL)])
    haiku = get_model("anthropic:claude-3-5-haiku-latest")
    with pytest.raises(ValueError, match="rename that tool"):
        open_call(haiku, context, Options(response_schema=Day))


# -- parsing ----------------------------------------------------------------------------


def _message(text: str, stop: StopReason = StopReason.STOP) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)], provider="openai", model="gpt-4o", stop_reason=stop
    )


def test_parse_output_validates_with_msgspec_and_pydantic() -> None:
    assert parse_output(_message(ANSWER_JSON), Forecast) == Forecast(
        city="Paris", days=[Day(date="2025-06-01", high=21.5)], unit="c"
    )
    parsed = parse_output(_message('{"city": "Oslo", "days": [3]}'), PydanticForecast)
    assert parsed == PydanticForecast(city="Oslo", days=[3])
    assert parse_output(_message(ANSWER_JSON), output_schema(Forecast).schema) == ANSWER


@pytest.mark.parametrize(
    ("text", "spec", "reason"),
    [
        ("I can't help with that.", Forecast, "is not JSON"),
        ('{"city": "Paris"}', Forecast, "does not validate as Forecast"),
        ('{"city": "Paris", "days": "x"}', PydanticForecast, "does not validate as Pydantic"),
        ('{"city": 3, "days": []}', {"type": "object", "properties": {"city": {"type": "string"}}},
         "/city: 3 is not of type string"),
        ('{"days": []}', {"type": "object", "required": ["city"]}, "the required property 'city' is missing"),
        ('{"unit": "k"}', {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}}},
         "not one of"),
    ],
)  # fmt: skip
def test_an_answer_that_does_not_validate_is_a_typed_error(
    text: str, spec: Any, reason: str
) -> None:
    with pytest.raises(OutputValidationError, match=reason) as caught:
        parse_output(_message(text), spec)
    error = caught.value
    assert (error.provider, error.model, error.raw) == ("openai", "gpt-4o", text)
    assert "openai/gpt-4o" in str(error) and repr(text[:20])[1:-1] in str(error)


def test_a_cut_off_answer_says_to_raise_max_tokens() -> None:
    with pytest.raises(OutputValidationError, match="max_tokens"):
        parse_output(_message(ANSWER_JSON[:20], StopReason.LENGTH), Forecast)


# -- every wire format ----------------------------------------------------------------------

#: (model, how it answers): native JSON text, or the forced answer tool
NATIVE = [
    get_model("openai:gpt-4o"),
    Model(id="gpt-4.1", provider="openai", api="openai-responses", base_url="x"),
    get_model("anthropic:claude-sonnet-4-5"),
    get_model("google:gemini-2.5-flash"),
    get_model("google:gemini-2.0-flash"),
    Model(id="qwen3", provider="ollama", api="ollama", base_url="x"),
    get_model("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    get_model("mistral:mistral-large-latest"),
]


def _drive(m: Model, options: Options, body: bytes, ctype: str) -> list[Any]:
    call = open_call(m, Context.of("Weather in Paris?"), options)
    events = call.receive_response(200, [("content-type", ctype)])
    for i in range(0, len(body), 7):  # small chunks: fragments split anywhere
        events += call.receive_data(body[i : i + 7])
    events += call.receive_eof()
    check_protocol(events)
    return events


@pytest.mark.parametrize("m", NATIVE, ids=lambda m: f"{m.api}-{m.id}")
def test_native_answers_parse_on_every_wire_format(m: Model) -> None:
    builder, ctype = WIRE_FORMATS[m.api]
    options = Options(response_schema=Forecast, api_key="k")
    events = _drive(m, options, builder(FRAGMENTS), ctype)
    message = finish_completion(events, raise_on_error=True, options=options)
    assert message.parsed == msgspec.convert(ANSWER, Forecast)
    bad = _drive(m, options, builder(['{"city": ', "3}"]), ctype)
    with pytest.raises(OutputValidationError, match=f"{m.provider}/{m.id}.*Forecast") as caught:
        finish_completion(bad, raise_on_error=True, options=options)
    assert caught.value.raw == '{"city": 3}'
    # raise_on_error=False: the message comes back, unparsed
    assert finish_completion(bad, raise_on_error=False, options=options).parsed is None


def _sse(data: dict[str, Any]) -> bytes:
    return encode_sse(json.dumps(data), event=data["type"])


def anthropic_tool_answer(fragments: list[str], name: str = ANSWER_TOOL) -> bytes:
    """Anthropic's stream for a forced tool call whose input is the answer."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
               "usage": {"input_tokens": 20, "output_tokens": 1}}  # fmt: skip
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    out = [
        _sse({"type": "message_start", "message": message}),
        _sse({"type": "content_block_start", "index": 0, "content_block": block}),
    ]
    out += [
        _sse({"type": "content_block_delta", "index": 0,
              "delta": {"type": "input_json_delta", "partial_json": f}})
        for f in fragments
    ]  # fmt: skip
    out += [
        _sse({"type": "content_block_stop", "index": 0}),
        _sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
              "usage": {"output_tokens": 30}}),
        _sse({"type": "message_stop"}),
    ]  # fmt: skip
    return b"".join(out)


def _frame(event: str, payload: dict[str, Any]) -> bytes:
    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload).encode())


def bedrock_tool_answer(fragments: list[str], name: str = ANSWER_TOOL) -> bytes:
    """ConverseStream's frames for a forced tool call whose input is the answer."""
    start = {"toolUse": {"toolUseId": "tooluse_1", "name": name}}
    out = [
        _frame("messageStart", {"role": "assistant"}),
        _frame("contentBlockStart", {"contentBlockIndex": 0, "start": start}),
    ]
    out += [
        _frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": f}}})
        for f in fragments
    ]
    out += [
        _frame("contentBlockStop", {"contentBlockIndex": 0}),
        _frame("messageStop", {"stopReason": "tool_use"}),
        _frame("metadata", {"usage": {"inputTokens": 20, "outputTokens": 30, "totalTokens": 50}}),
    ]
    return b"".join(out)


EMULATED = [
    (get_model("anthropic:claude-3-5-haiku-latest"), anthropic_tool_answer, "text/event-stream"),
    (get_model("anthropic:claude-opus-4-1"), anthropic_tool_answer, "text/event-stream"),
    (
        get_model("bedrock:us.anthropic.claude-opus-4-1-20250805-v1:0"),
        bedrock_tool_answer,
        "application/vnd.amazon.eventstream",
    ),
    (get_model("bedrock:us.amazon.nova-pro-v1:0"), bedrock_tool_answer,
     "application/vnd.amazon.eventstream"),
]  # fmt: skip


@pytest.mark.parametrize(("m", "body", "ctype"), EMULATED, ids=lambda v: getattr(v, "key", ""))
def test_the_forced_answer_tool_streams_as_text(m: Model, body: Any, ctype: str) -> None:
    """The user sees what a native provider shows: text deltas of the JSON, stop, and
    the parsed value; no tool call to run."""
    options = Options(response_schema=Forecast, api_key="k")
    events = _drive(m, options, body(FRAGMENTS), ctype)
    assert not any(isinstance(e, ToolCallStart) for e in events)
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == ANSWER_JSON
    message = finish_completion(events, raise_on_error=True, options=options)
    assert message.stop_reason is StopReason.STOP and message.tool_calls == []
    assert message.text == ANSWER_JSON and message.parsed.days[0].high == 21.5
    # an empty answer object streams no delta: still one JSON text
    empty = accumulate(_drive(m, Options(response_schema={"type": "object"}), body([]), ctype))
    assert empty.text == "{}"
    # without a response schema the same tool is an ordinary tool call
    plain = accumulate(_drive(m, Options(api_key="k"), body(FRAGMENTS), ctype))
    assert plain.stop_reason is StopReason.TOOL_USE and plain.tool_calls[0].arguments == ANSWER


def test_the_caller_s_own_tools_stay_tool_calls_under_emulation() -> None:
    m, body, ctype = EMULATED[0]
    options = Options(response_schema=Forecast, api_key="k")
    events = _drive(m, options, body(FRAGMENTS, name="weather"), ctype)
    message = accumulate(events)
    assert message.tool_calls[0].name == "weather" and message.stop_reason is StopReason.TOOL_USE


# -- end to end through the shells ------------------------------------------------------------


@pytest.fixture(scope="module")
def fake() -> Any:
    with FakeProvider(stall=1.0) as server:
        yield server


def _complete(shell: str, m: Model, options: Options) -> AssistantMessage:
    context = Context.of("Weather in Paris?")
    if shell == "trio":
        return trio.run(lambda: tio.complete(m, context, options))
    return asyncio.run(aio.complete(m, context, options))


@pytest.mark.parametrize("shell", ["trio", "asyncio"])
def test_complete_returns_the_parsed_answer_from_a_forced_tool(
    fake: FakeProvider, shell: str
) -> None:
    url = fake.serve(anthropic_tool_answer(FRAGMENTS), token=f"structured-{shell}")
    m = model("anthropic:claude-3-5-haiku-latest", base_url=url)
    options = Options(response_schema=Forecast, api_key="sk-test", idle_timeout=5)
    message = _complete(shell, m, options)
    assert message.parsed == msgspec.convert(ANSWER, Forecast)
    sent = json.loads(fake.requests[-1].body)
    assert sent["tool_choice"] == {"type": "tool", "name": ANSWER_TOOL}
    assert sent["tools"][-1]["input_schema"]["properties"]["city"] == {"type": "string"}
    # an answer that does not validate raises, and is not retried (one request billed)
    bad = fake.serve(anthropic_tool_answer(['{"city": 3}']), token=f"bad-{shell}")
    with pytest.raises(OutputValidationError, match="anthropic/claude-3-5-haiku"):
        _complete(shell, model("anthropic:claude-3-5-haiku-latest", base_url=bad), options)
    assert fake.hits(f"bad-{shell}") == 1


# -- the gateway ------------------------------------------------------------------------------


def test_a_gateway_client_sends_the_schema_as_json_and_only_auto_cache() -> None:
    from streamfn.core.content._cache_points import CachePoint

    fields = client_fields(Options(response_schema=Forecast, cache="auto", cache_key="k"))
    assert fields == {"response_schema": output_schema(Forecast).schema, "cache": "auto"}
    assert "cache" not in client_fields(Options(cache=[CachePoint("system", ttl="1h")]))


def test_the_proxy_provider_forwards_the_schema_and_parses_on_the_client_side() -> None:
    """Through a `streamfn serve` proxy the server applies the schema upstream; the
    client, which still holds the type, parses the answer."""
    from streamfn.core.dialects import proxy

    m = Model(id="anthropic:claude-sonnet-4-5", provider="proxy", api="proxy", base_url="x")
    options = Options(response_schema=Forecast, cache="auto")
    sent = json.loads(proxy.build_request(m, Context.of("hi"), options).body)
    assert sent["options"] == {"response_schema": output_schema(Forecast).schema, "cache": "auto"}
