"""`text_tool_calls`: tool calls written in text become tool-call blocks, whatever the chunking."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from chunking import split_at
from fake_provider import FakeProvider
from hypothesis import given
from hypothesis import strategies as st
from shell_runner import FAST, SHELLS, collect, run
from test_tagged import coalesced

from streamfn.core import (
    Done,
    Error,
    Event,
    Model,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    accumulate,
    check_protocol,
    replay,
)
from streamfn.core._messages import TextContent
from streamfn.core.stages._text_tools import (
    LLAMA_FUNCTION,
    TextToolCalls,
    correct_tool_name,
    text_tool_calls,
)

TRANSCRIPTS = Path(__file__).parents[1] / "transcripts"


def text_stream(*deltas: str, before: list[Event] | None = None) -> list[Event]:
    """Start, any leading blocks, one text block made of ``deltas``, Done."""
    head = before or []
    i = sum(isinstance(e, (TextStart, ThinkingStart, ToolCallStart)) for e in head)
    body: list[Event] = [TextStart(i), *(TextDelta(i, d) for d in deltas), TextEnd(i)]
    return [Start(api="test"), *head, *body, Done(usage=Usage(input=5, output=9))]


def content(events: list[Event]) -> list[tuple[str, ...]]:
    message = accumulate(events)
    out: list[tuple[str, ...]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            out.append(("text", block.text))
        elif isinstance(block, ToolCall):
            out.append(("call", block.name, block.arguments_json))
        else:
            out.append((type(block).__name__,))
    return out


def test_the_reference_mcp_example_becomes_a_tool_call_between_text_blocks() -> None:
    seed = '<mcp__puppeteer__navigate>{"url":"https://example.com"}</mcp__puppeteer__navigate>'
    events = text_tool_calls(text_stream("Opening it.\n", seed, "\n\nDone opening."))
    check_protocol(events)
    assert content(events) == [
        ("text", "Opening it.\n"),
        ("call", "mcp__puppeteer__navigate", '{"url":"https://example.com"}'),
        ("text", "Done opening."),
    ]
    message = accumulate(events)
    call = message.content[1]
    assert isinstance(call, ToolCall) and call.arguments == {"url": "https://example.com"}
    assert call.id == "text_call_0" and call.parse_error is None
    assert message.stop_reason == StopReason.TOOL_USE
    assert message.usage == Usage(input=5, output=9)


def test_hermes_calls_after_thinking_and_before_a_native_call_are_renumbered() -> None:
    thinking: list[Event] = [ThinkingStart(0), ThinkingDelta(0, "hmm"), ThinkingEnd(0, "sig")]
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    stream = text_stream("Sure. ", text, before=thinking)
    native: list[Event] = [ToolCallStart(2, "n1", "lookup"), ToolCallDelta(2, "{}"), ToolCallEnd(2)]
    stream = stream[:-1] + native + stream[-1:]
    events = text_tool_calls(stream)
    check_protocol(events)
    assert events[1:4] == [ThinkingStart(0), ThinkingDelta(0, "hmm"), ThinkingEnd(0, "sig")]
    assert content(events) == [
        ("ThinkingContent",),
        ("text", "Sure. "),
        ("call", "get_weather", '{"city":"Paris"}'),
        ("call", "lookup", "{}"),
    ]
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [2, 3]


def test_invalid_json_is_kept_raw_with_the_folds_parse_error() -> None:
    events = text_tool_calls(text_stream('<mcp__fs__read>{"path": "/tmp",}</mcp__fs__read>'))
    call = accumulate(events).content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments_json == '{"path": "/tmp",}' and call.arguments == {}
    assert call.parse_error is not None and "not valid JSON" in call.parse_error


def test_hermes_with_broken_arguments_keeps_the_name_and_the_raw_arguments() -> None:
    body = '<tool_call>{"name": "f", "arguments": {"a": 1,}}</tool_call>'
    call = accumulate(text_tool_calls(text_stream(body))).content[0]
    assert isinstance(call, ToolCall) and call.name == "f"
    assert call.arguments_json == '{"a": 1,}' and call.parse_error is not None


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"arguments": {}}</tool_call> no name',  # no readable name
        "a <mcp__ b> is not a tag",  # a space cannot be in a tool name
        "<mcp__x>{} and never closed",  # still open when the block ends
        "x < y and <tool_call is not a tag",
    ],
)
def test_markup_that_is_no_call_stays_verbatim_text(text: str) -> None:
    for cut in range(len(text) + 1):
        events = text_tool_calls(text_stream(text[:cut], text[cut:]))
        assert content(events) == [("text", text)]
        assert accumulate(events).stop_reason == StopReason.STOP


def test_a_body_over_the_cap_stays_text_and_scanning_resumes_after_the_cut() -> None:
    text = '<mcp__a>{"long": "xxxxxxxxxxxxxxxx"}</mcp__a><mcp__b>{}</mcp__b>'
    events = text_tool_calls(text_stream(text), max_markup_chars=20)
    assert content(events) == [
        ("text", '<mcp__a>{"long": "xxxxxxxxxxxxxxxx"}</mcp__a>'),
        ("call", "mcp__b", "{}"),
    ]


def test_a_stream_without_markup_comes_out_unchanged() -> None:
    recorded = (TRANSCRIPTS / "anthropic" / "parallel-tool-use-interleaved.sse").read_bytes()
    events = replay("anthropic", recorded)
    assert text_tool_calls(events) == events


def test_an_error_mid_markup_delivers_what_was_held_as_text() -> None:
    stream: list[Event] = [
        Start(),
        TextStart(0),
        TextDelta(0, "Checking <mcp__a__b>{"),
        Error.network("dropped"),
    ]
    events = text_tool_calls(stream)
    assert events[-1] == Error.network("dropped")
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "Checking <mcp__a__b>{"
    check_protocol(events)


def test_a_text_signature_and_an_empty_block_survive() -> None:
    stream: list[Event] = [
        Start(),
        TextStart(0),
        TextEnd(0),
        TextStart(1),
        TextDelta(1, "<mcp__a>{}</mcp__a>"),
        TextEnd(1, signature="sig"),
        Done(),
    ]
    events = text_tool_calls(stream)
    check_protocol(events)
    assert events[1:3] == [TextStart(0), TextEnd(0)]
    assert events[-3:-1] == [TextStart(2), TextEnd(2, "sig")]


def test_other_markups_come_from_configuration() -> None:
    text = 'Calling.<function=get_time>{"tz": "UTC"}</function>'
    events = text_tool_calls(text_stream(text), markups=[LLAMA_FUNCTION])
    assert content(events) == [("text", "Calling."), ("call", "get_time", '{"tz": "UTC"}')]
    with pytest.raises(ValueError, match="prefix"):
        TextToolCalls(markups=[LLAMA_FUNCTION, LLAMA_FUNCTION.__class__(open="<f", close="</f>")])


def test_names_are_corrected_against_the_declared_tools_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = [Tool(name="mcp__puppeteer__puppeteer_navigate"), Tool(name="read_file")]
    with caplog.at_level(logging.WARNING, logger="streamfn"):
        events = text_tool_calls(
            text_stream('<tool_call>{"name": "puppeteer_navigate", "arguments": {}}</tool_call>'),
            tools=tools,
        )
    assert content(events) == [("call", "mcp__puppeteer__puppeteer_navigate", "{}")]
    assert "'puppeteer_navigate'" in caplog.text
    assert "'mcp__puppeteer__puppeteer_navigate'" in caplog.text
    names = [t.name for t in tools]
    assert correct_tool_name("delete_everything", names) is None  # nothing like it: kept
    assert correct_tool_name("read_file", names) is None  # declared: nothing to correct


def test_the_three_correction_strategies_in_order() -> None:
    declared = ["mcp__puppeteer__puppeteer_navigate", "mcp__fs__readFile", "search_web"]
    assert correct_tool_name("puppeteer_navigate", declared) == declared[0]  # exact suffix
    assert correct_tool_name("READFILE", declared) == declared[1]  # substring
    assert correct_tool_name("web_search", declared) == "search_web"  # token overlap
    assert correct_tool_name("search", ["search_web", "search_files"]) is None  # ambiguous


_PIECES = [
    "Hi",
    " ",
    "\n",
    "<",
    ">",
    "é😀",
    "<mcp__",
    "mcp__s__t",
    "</mcp__s__t>",
    "<tool_call>",
    "</tool_call>",
    '{"name": "f", "arguments": {"x": "}"}}',
    '{"x": [1, "</tool_call>"]}',
    "{",
    "}",
    '"',
    "/",
]


@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=20),
    cuts=st.lists(st.integers(0, 400), max_size=8),
    cap=st.sampled_from([1 << 20, 12]),
)
def test_any_split_of_the_deltas_gives_the_same_events(
    pieces: list[str], cuts: list[int], cap: int
) -> None:
    text = "".join(pieces)
    whole = text_tool_calls(text_stream(text), max_markup_chars=cap)
    parts = split_at(text, sorted(c for c in cuts if c <= len(text)))
    split = text_tool_calls(text_stream(*parts), max_markup_chars=cap)
    check_protocol(split)
    assert coalesced(split) == coalesced(whole)
    # nothing is lost: every character is text or inside a call's markup
    message = accumulate(whole)
    texts = "".join(b.text for b in message.content if isinstance(b, TextContent))
    assert len(texts) <= len(text)
    if not any(isinstance(b, ToolCall) for b in message.content):
        assert texts == text


# -- on per request or per model, in both shells --------------------------------------


def _openai_text_body(*pieces: str) -> bytes:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chunks = [
        base | {"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
        for p in pieces
    ]
    chunks.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.register_body(
            "mcp-text",
            _openai_text_body(
                "Opening.<mcp__web__nav", 'igate>{"url": "https://a.b"}</mcp__w', "eb__navigate>"
            ),
        )
        yield fake


@pytest.mark.parametrize("shell", SHELLS)
def test_the_shells_apply_it_only_when_the_request_or_the_model_asks(
    upstream: FakeProvider, shell: str
) -> None:
    url = upstream.base_url("ok", "mcp-text", f"tt-{shell}")
    plain = Model(id="m", provider="openai", api="openai-chat", base_url=url)
    configured = Model(
        id="m", provider="openai", api="openai-chat", base_url=url, extra={"text_tool_calls": "mcp"}
    )
    off = run(shell, collect, plain, FAST)
    assert content(off) == [
        ("text", 'Opening.<mcp__web__navigate>{"url": "https://a.b"}</mcp__web__navigate>')
    ]
    asked = msgspec.structs.replace(FAST, text_tool_calls=["mcp", "hermes"])
    for events in (run(shell, collect, plain, asked), run(shell, collect, configured, FAST)):
        check_protocol(events)
        assert content(events) == [
            ("text", "Opening."),
            ("call", "mcp__web__navigate", '{"url": "https://a.b"}'),
        ]
        assert accumulate(events).stop_reason == StopReason.TOOL_USE
    refused = msgspec.structs.replace(FAST, text_tool_calls=["xml"])
    with pytest.raises(ValueError, match="unknown text tool-call markup"):
        run(shell, collect, plain, refused)


@pytest.mark.parametrize(
    "deltas",
    [
        ["<mcp__srv__t>", '{"a":1}</mcp', "__srv__t>"],  # the close split after a short body
        ["<tool_call>", '{"name":"t"}</to', "ol_call>"],
        ['<tool_call>{"name":"t"', "}</tool_call>"],
    ],
)
def test_a_close_tag_split_across_deltas_after_a_short_body_still_closes(
    deltas: list[str],
) -> None:
    events = [Start(), TextStart(0), *(TextDelta(0, d) for d in deltas), TextEnd(0), Done()]
    message = accumulate(text_tool_calls(events, tools=["t", "mcp__srv__t"]))
    assert [type(b).__name__ for b in message.content] == ["ToolCall"]
