"""The Responses API from the server's side: requests in, the whole response out.

Oracles we did not write: the request bodies streamfn builds for OpenAI's Responses
API (themselves checked against the openai SDK's ``ResponseCreateParams``) parse back
to a conversation that builds the very same body; every final response validates as
the openai SDK's ``Response`` and reads (``output_text``, function calls) as our fold
of the same events; a replayed reasoning item gives the model its own signature back,
whichever provider signed it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from test_request_conformance import all_contexts

from streamfn.core import (
    AssistantMessage,
    Context,
    Done,
    Event,
    Model,
    Options,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    accumulate,
)
from streamfn.core.dialects._request_fields import BadRequest
from streamfn.core.dialects.openai_responses import ResponsesEncoder, build_request
from streamfn.core.dialects.openai_responses._inbound import parse_responses_request
from streamfn.core.dialects.openai_responses._signatures import CARRIED
from streamfn.core.serve._replayed_turns import attribute_client_turns
from streamfn.fuzz import event_streams

O3 = Model(id="o3", provider="openai", api="openai-responses", base_url="x", reasoning=True)
OPTIONS = [
    Options(),
    Options(max_tokens=300, temperature=0.5, top_p=0.9, tool_choice="required"),
    Options(thinking=ThinkingLevel.HIGH, tool_choice="weather"),
    Options(response_schema={"type": "object", "properties": {"a": {"type": "string"}}}),
]


@pytest.mark.parametrize("options", OPTIONS, ids=range(len(OPTIONS)))
def test_our_own_requests_parse_back_to_the_same_request(
    options: Options, caplog: pytest.LogCaptureFixture
) -> None:
    """build -> parse -> build is a fixed point: nothing the client said is lost or
    invented (reasoning items, function calls and outputs, images, instructions)."""
    caplog.set_level(logging.ERROR, logger="streamfn")
    for name, context in all_contexts(O3).items():
        sent = build_request(O3, context, options).body
        parsed = parse_responses_request(sent)
        assert parsed.model == "o3"
        again = attribute_client_turns(parsed.context, O3)  # as the gateway does
        rebuilt = build_request(O3, again, parsed.options).body
        assert json.loads(rebuilt) == json.loads(sent), name


def test_a_plain_string_input_and_instructions() -> None:
    parsed = parse_responses_request(
        b'{"model": "m", "input": "Hi", "instructions": "Be brief.", "stream": true,'
        b' "reasoning": {"effort": "none", "summary": "auto"}, "max_output_tokens": 50}'
    )
    assert parsed.stream and parsed.context.system_prompt == "Be brief."
    assert parsed.context.messages[0].content == "Hi"
    assert parsed.options.thinking == ThinkingLevel.OFF and parsed.options.max_tokens == 50


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"store": True}, "request.store: this server keeps no conversations"),
        ({"previous_response_id": "resp_1"}, "request.previous_response_id"),
        ({"conversation": "conv_1"}, "request.conversation"),
        ({"background": True}, "request.background"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "'item_reference' items"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
            "file_id",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "file_id",
        ),
        ({"tools": [{"type": "code_interpreter"}]}, "tools[0].type"),
        ({"base_url": "http://169.254.169.254"}, "request.base_url: not accepted"),
        ({"input": []}, "request.input"),
        ({"reasoning": {"effort": "galaxy"}}, "request.reasoning.effort"),
        ({"tools": [{"type": "web_search"}]}, "server tool 'web_search' is not enabled"),
        (
            {"tools": [{"type": "namespace", "name": "multi_agent_v1", "tools": []}]},
            "tools[0].type: 'namespace' tools ('multi_agent_v1') are not supported",
        ),
        (
            {"input": [{"type": "reasoning", "summary": [], "encrypted_content": CARRIED + "%%"}]},
            "encrypted_content",
        ),
    ],
)
def test_what_the_server_refuses_it_names(body: dict[str, Any], named: str) -> None:
    whole = {"model": "m", "input": "Hi", **body}
    with pytest.raises(BadRequest, match=None) as refused:
        parse_responses_request(json.dumps(whole).encode())
    assert named in str(refused.value)


def test_store_false_or_left_out_is_accepted() -> None:
    for store in ({"store": False}, {}):
        body = {"model": "m", "input": "Hi", **store}
        assert parse_responses_request(json.dumps(body).encode()).context.messages


def test_the_fields_codex_cli_sends_every_turn_are_accepted() -> None:
    """Codex CLI's request (0.171): its bookkeeping fields change nothing it may not choose."""
    body = {
        "model": "m",
        "input": [
            {"type": "message", "id": "msg_1", "role": "developer", "content": "Be careful."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        ],
        "stream": True,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0195-session",
        "client_metadata": {"session_id": "0195-session", "x-codex-turn-metadata": "{}"},
    }
    parsed = parse_responses_request(json.dumps(body).encode())
    assert parsed.context.system_prompt == "Be careful."
    assert parsed.context.messages[0].content == [TextContent(text="Hi")]


def _final(events: list[Event]) -> dict[str, Any] | None:
    encoder = ResponsesEncoder(response_id="resp_1", model="m", created=1_764_000_000)
    for event in events:
        encoder.encode(event)
    return encoder.final


SOME = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@SOME
@given(event_streams(redacted_thinking=False))
def test_the_final_response_is_the_sdks_response_and_reads_as_our_fold(
    events: list[Event],
) -> None:
    from openai.types.responses import Response

    final = _final(events)
    if not isinstance(events[-1], Done) or events[-1].stop_reason not in ("stop", "tool_use"):
        return  # a cut or failed answer has no completed response (see the cut tests)
    assert final is not None
    response = Response.model_validate(json.loads(msgspec.json.encode(final)))
    folded = accumulate(events)
    assert response.output_text == folded.text
    calls = [(c.call_id, c.name, c.arguments) for c in response.output if c.type == "function_call"]
    assert calls == [
        (b.id, b.name, b.arguments_json or json.dumps(b.arguments))
        for b in folded.content
        if isinstance(b, ToolCall)
    ]


@SOME
@given(event_streams(redacted_thinking=False))
def test_replaying_the_response_gives_each_model_its_own_signature_back(
    events: list[Event],
) -> None:
    """The client sends the response's output items back as input (as the openai SDK's
    users do): every signed thinking block comes back with its signature."""
    final = _final(events)
    if final is None:
        return
    body = {"model": "m", "input": [{"role": "user", "content": "Hi"}, *final["output"]]}
    parsed = parse_responses_request(msgspec.json.encode(body))
    replayed = [m for m in parsed.context.messages if isinstance(m, AssistantMessage)]
    got = [b.signature for m in replayed for b in m.content if isinstance(b, ThinkingContent)]
    sent = [
        b.signature
        for b in accumulate(events).content
        if isinstance(b, ThinkingContent) and not b.redacted and (b.signature or b.thinking)
    ]
    assert got == sent
    texts = [b.text for m in replayed for b in m.content if isinstance(b, TextContent)]
    assert "".join(texts) == accumulate(events).text


def test_a_claude_signature_rides_in_encrypted_content_and_comes_back() -> None:
    signature = "EqQBCkYIBxgCKkDtQ0H6r0pXb8w=="
    context = Context(
        messages=[
            AssistantMessage(
                content=[ThinkingContent(thinking="Hmm.", signature=signature)],
                api="anthropic",
                provider="anthropic",
                model="claude-sonnet-4-6",
            )
        ]
    )
    from streamfn.core import ThinkingEnd, ThinkingStart

    encoder = ResponsesEncoder(response_id="r", model="m")
    encoder.encode(ThinkingStart(index=0))
    frames = encoder.encode(ThinkingEnd(index=0, signature=signature))
    assert CARRIED.encode() in frames
    item = json.loads(frames.split(b"data: ")[-1])["item"]
    parsed = parse_responses_request(json.dumps({"model": "m", "input": [item]}).encode())
    [message] = parsed.context.messages
    assert isinstance(message, AssistantMessage)
    assert message.content == [ThinkingContent(thinking="", signature=signature)]
    assert context.messages  # the block the stream came from
