"""Cross-provider replay rules (`prepare_messages`): what each target receives of a conversation."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfn.core import (
    AssistantMessage,
    Context,
    Model,
    OpaqueContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from streamfn.core.providers._convert import (
    MISSING_RESULT_TEXT,
    normalize_tool_call_id,
    prepare_messages,
)

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

CLAUDE = Model(id="claude-sonnet-4-5", provider="anthropic", api="anthropic", base_url="x")
CLAUDE_OTHER = Model(id="claude-opus-4-1", provider="anthropic", api="anthropic", base_url="x")
GPT = Model(id="gpt-5", provider="openai", api="openai-responses", base_url="x")
GPT_CHAT = Model(id="gpt-4o", provider="openai", api="openai-chat", base_url="x")
GEMINI = Model(id="gemini-2.5-flash", provider="google", api="gemini", base_url="x")
MISTRAL = Model(id="mistral-large", provider="mistral", api="openai-chat", base_url="x")
BEDROCK = Model(id="anthropic.claude", provider="bedrock", api="bedrock", base_url="x")


def turn(source: Model, *content: Any, stop: StopReason = StopReason.STOP) -> AssistantMessage:
    return AssistantMessage(
        content=list(content),
        api=source.api,
        provider=source.provider,
        model=source.id,
        stop_reason=stop,
    )


def result(call_id: str, text: str = "ok", name: str = "f") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)])


def prepared(target: Model, *messages: Any) -> list[Any]:
    return prepare_messages(Context(messages=[UserMessage(content="hi"), *messages]), target)


def content_of(target: Model, *blocks: Any, source: Model = CLAUDE) -> list[Any]:
    out = prepared(target, turn(source, *blocks))
    assert isinstance(out[1], AssistantMessage)
    return out[1].content


# -- thinking ------------------------------------------------------------------


def test_anthropic_thinking_replayed_to_openai_becomes_text() -> None:
    blocks = content_of(
        GPT_CHAT, ThinkingContent(thinking="Because.", signature="sig"), TextContent(text="Yes")
    )
    assert blocks == [TextContent(text="Because."), TextContent(text="Yes")]


def test_same_model_thinking_keeps_its_signature() -> None:
    thinking = ThinkingContent(thinking="Because.", signature="sig")
    assert content_of(CLAUDE, thinking) == [thinking]


def test_same_provider_other_model_thinking_becomes_text() -> None:
    # A signature is valid only for the model that made it.
    blocks = content_of(CLAUDE_OTHER, ThinkingContent(thinking="Because.", signature="sig"))
    assert blocks == [TextContent(text="Because.")]


def test_redacted_thinking_is_kept_for_its_model_and_dropped_elsewhere() -> None:
    redacted = ThinkingContent(thinking="", signature="encrypted", redacted=True)
    assert content_of(CLAUDE, redacted, TextContent(text="a")) == [redacted, TextContent(text="a")]
    for target in (GPT, GEMINI, CLAUDE_OTHER):
        assert content_of(target, redacted, TextContent(text="a")) == [TextContent(text="a")]


def test_empty_thinking_is_not_turned_into_empty_text() -> None:
    assert content_of(
        GPT, ThinkingContent(thinking="  ", signature="s"), TextContent(text="a")
    ) == [TextContent(text="a")]


def test_gemini_text_signature_only_to_google() -> None:
    signed = TextContent(text="Answer", signature="thought-sig")
    assert content_of(GEMINI, signed, source=GEMINI) == [signed]
    assert content_of(CLAUDE, signed, source=GEMINI) == [TextContent(text="Answer")]


def test_tool_call_signature_only_to_its_provider() -> None:
    call = ToolCall(id="call_1", name="f", signature="sig")
    same = content_of(GEMINI, call, source=GEMINI)[0]
    other = content_of(GPT, call, source=GEMINI)[0]
    assert isinstance(same, ToolCall) and same.signature == "sig"
    assert isinstance(other, ToolCall) and other.signature is None


# -- opaque blocks ------------------------------------------------------------------


def test_opaque_blocks_only_to_their_provider() -> None:
    block = OpaqueContent(
        provider="anthropic", block_type="server_tool_use", json='{"type":"server_tool_use"}'
    )
    assert content_of(CLAUDE_OTHER, block, TextContent(text="t")) == [block, TextContent(text="t")]
    assert content_of(GPT, block, TextContent(text="t")) == [TextContent(text="t")]
    assert content_of(GEMINI, block, TextContent(text="t")) == [TextContent(text="t")]


def test_a_turn_left_empty_by_the_rules_is_not_sent() -> None:
    block = OpaqueContent(provider="anthropic", block_type="web_search_tool_result", json="{}")
    out = prepared(GPT, turn(CLAUDE, block), UserMessage(content="next"))
    assert [type(m).__name__ for m in out] == ["UserMessage", "UserMessage"]


# -- tool-call ids ------------------------------------------------------------------


def test_openai_responses_ids_are_normalized_for_anthropic_and_results_follow() -> None:
    call = ToolCall(id="call_abc|fc_0123456789abcdef", name="f")
    out = prepared(CLAUDE, turn(GPT, call, stop=StopReason.TOOL_USE), result(call.id))
    new_call = out[1].content[0]
    assert isinstance(new_call, ToolCall)
    assert ANTHROPIC_ID.match(new_call.id) and new_call.id != call.id
    assert isinstance(out[2], ToolResultMessage) and out[2].tool_call_id == new_call.id
    assert len(out) == 3  # no synthetic result: the real one matched


def test_long_ids_are_shortened_consistently_and_stay_distinct() -> None:
    a = ToolCall(id="x" * 80 + "a", name="f")
    b = ToolCall(id="x" * 80 + "b", name="g")
    out = prepared(
        BEDROCK, turn(GPT, a, b, stop=StopReason.TOOL_USE), result(b.id, name="g"), result(a.id)
    )
    ids = [c.id for c in out[1].content]
    assert all(ANTHROPIC_ID.match(i) for i in ids) and ids[0] != ids[1]
    assert [m.tool_call_id for m in out[2:]] == [ids[1], ids[0]]


def test_valid_ids_are_left_alone() -> None:
    assert normalize_tool_call_id("toolu_01ABC-def", CLAUDE) == "toolu_01ABC-def"
    assert normalize_tool_call_id("call_1", GEMINI) == "call_1"
    assert normalize_tool_call_id("abcDEF123", MISTRAL) == "abcDEF123"


def test_mistral_ids_are_nine_alphanumerics() -> None:
    new = normalize_tool_call_id("toolu_01NRLabsLyVHZPKxbKvkfSMn", MISTRAL)
    assert re.fullmatch(r"[a-zA-Z0-9]{9}", new)


@given(st.text(min_size=0, max_size=200))
def test_anthropic_ids_always_match_the_pattern_and_are_stable(tool_id: str) -> None:
    new = normalize_tool_call_id(tool_id, CLAUDE)
    assert ANTHROPIC_ID.match(new)
    assert normalize_tool_call_id(tool_id, CLAUDE) == new
    assert normalize_tool_call_id(new, CLAUDE) == new  # normalizing twice changes nothing


@given(st.lists(st.text(min_size=1, max_size=100), min_size=2, max_size=6, unique=True))
def test_distinct_ids_stay_distinct_for_anthropic(ids: list[str]) -> None:
    assert len({normalize_tool_call_id(i, CLAUDE) for i in ids}) == len(ids)


# -- orphans and failed turns ------------------------------------------------------


def test_orphaned_tool_call_gets_a_synthetic_error_result() -> None:
    calls = [ToolCall(id="toolu_1", name="a"), ToolCall(id="toolu_2", name="b")]
    out = prepared(
        CLAUDE,
        turn(CLAUDE, *calls, stop=StopReason.TOOL_USE),
        result("toolu_1", name="a"),
        UserMessage(content="go on"),
    )
    assert [type(m).__name__ for m in out] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "ToolResultMessage",
        "UserMessage",
    ]
    synthetic = out[3]
    assert synthetic.tool_call_id == "toolu_2" and synthetic.is_error
    assert synthetic.content == [TextContent(text=MISSING_RESULT_TEXT)]


def test_orphan_at_the_end_of_the_conversation_also_gets_a_result() -> None:
    out = prepared(GEMINI, turn(GEMINI, ToolCall(id="c", name="f"), stop=StopReason.TOOL_USE))
    assert isinstance(out[-1], ToolResultMessage) and out[-1].is_error


def test_errored_and_aborted_turns_are_skipped() -> None:
    cut = turn(
        CLAUDE,
        TextContent(text="half"),
        ToolCall(id="toolu_x", name="f", arguments_json='{"a":'),
        stop=StopReason.ERROR,
    )
    aborted = turn(CLAUDE, ThinkingContent(thinking="hmm"), stop=StopReason.ABORTED)
    out = prepared(CLAUDE, cut, UserMessage(content="retry"), aborted, UserMessage(content="again"))
    assert [type(m).__name__ for m in out] == ["UserMessage", "UserMessage", "UserMessage"]


def test_results_of_a_skipped_turn_are_dropped_too() -> None:
    # A tool_result without its tool_use is a 400 at Anthropic and Bedrock.
    cut = turn(CLAUDE, ToolCall(id="toolu_x", name="f"), stop=StopReason.ERROR)
    out = prepared(CLAUDE, cut, result("toolu_x"), UserMessage(content="again"))
    assert [type(m).__name__ for m in out] == ["UserMessage", "UserMessage"]


def test_the_input_conversation_is_not_modified() -> None:
    call = ToolCall(id="call|1", name="f", signature="s")
    message = turn(
        GPT, ThinkingContent(thinking="t", signature="x"), call, stop=StopReason.TOOL_USE
    )
    prepared(CLAUDE, message, result("call|1"))
    assert message.content[1] is call and call.id == "call|1" and call.signature == "s"


@pytest.mark.parametrize(
    ("key", "provider"),
    [
        ("anthropic:claude-sonnet-4-5", "anthropic"),
        ("google:gemini-2.5-flash", "gemini"),
        ("openai:gpt-5", "openai"),
    ],
)
def test_an_opaque_block_cannot_inject_fields_into_the_request(key: str, provider: str) -> None:
    """A gateway's client sends whole conversations: an opaque block's text that closes
    the block early and adds its own model and limits must never reach the body."""
    import msgspec

    from streamfn.core import Context, Options, get_model, open_call
    from streamfn.core._messages import AssistantMessage, OpaqueContent, UserMessage

    model = get_model(key)
    if provider == "openai":
        model = msgspec.structs.replace(model, api="openai-responses")
    injected = '{"type":"x"}]}],"model":"evil-model","max_tokens":99999,"zz":[{"k":[1'
    honest = '{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}'
    turn = AssistantMessage(
        content=[
            OpaqueContent(provider=model.provider, block_type="x", json=injected),
            OpaqueContent(provider=model.provider, block_type="y", json=honest),
        ],
        provider=model.provider,
        api=model.api,
        model=model.id,
    )
    context = Context(messages=[UserMessage(content="q"), turn, UserMessage(content="more")])
    body = open_call(model, context, Options(api_key="k")).request.body
    assert b"evil-model" not in body and b"99999" not in body
    assert b"srvtoolu_1" in body  # a well-formed block still goes back to its provider
    assert msgspec.json.decode(body)["model" if provider != "gemini" else "contents"]
