"""Streams that survive a cut, the sans-I/O half (`streamfn.core.stages._recovery`).

The resume property runs over every recorded OpenAI Responses stream: cut the
recording at many byte offsets, resume the same decoder from the last
``sequence_number`` it read with the rest of the recording (what
``GET /responses/{id}?stream=true&starting_after=N`` serves), and the joined
event list is the uncut one. The request shape is checked against the openai
SDK's own ``responses.retrieve(..., stream=True, starting_after=N)``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import msgspec
import openai
import pytest
from corpus_support import body, corpus_entries, require_corpus

from streamfn.client._recovery import recovering
from streamfn.core import (
    AssistantMessage,
    Context,
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Options,
    Start,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    accumulate,
    open_call,
)
from streamfn.core.catalogue._models import compute_cost
from streamfn.core.providers._base import ProviderCall
from streamfn.core.stages._recovery import (
    Splice,
    continue_request,
    recovery_mode,
    resumable,
    resume_request,
)

RESPONSES = Model(
    id="gpt-5", provider="openai", api="openai-responses", base_url="https://api.openai.com/v1"
)
CLAUDE = Model(
    id="claude-sonnet-4-5",
    provider="anthropic",
    api="anthropic",
    base_url="https://api.anthropic.com",
    price_input=3.0,
    price_output=15.0,
)
SSE = [("content-type", "text/event-stream")]


def _read(call: ProviderCall, data: bytes) -> list[Event]:
    return call.receive_response(200, SSE) + call.receive_data(data) + call.receive_eof()


def _numbered_blocks(data: bytes) -> list[tuple[int | None, bytes]]:
    """The recording's SSE events with their ``sequence_number`` (None where absent)."""
    out = []
    for block in re.split(rb"(?<=\n\n)", data):
        if block.strip():
            found = re.search(rb'"sequence_number":\s*(\d+)', block)
            out.append((int(found.group(1)) if found else None, block))
    return out


def _cut_points(size: int) -> Iterable[int]:
    """About a hundred offsets spread over the body (every byte of a big recording would
    take minutes; the spread reaches every kind of event and the cuts inside them)."""
    return range(1, size, max(1, size // 100))


def _resumed(data: bytes, cut: int, *, off_by: int = 0) -> tuple[list[Event], bool]:
    """The caller's events for ``data`` cut at ``cut`` and resumed, and whether it resumed."""
    call = open_call(RESPONSES, Context.of("Hi"), Options(api_key="k"))
    events = _read(call, data[:cut])
    splice = Splice(RESPONSES, "resume", 2)
    seen = [out for event in events[:-1] for out in splice.admit(event)]
    last = events[-1]
    if not (isinstance(last, Error) and splice.recovers(last) and resumable(call)):
        return seen + splice.admit(last), False
    after = call.last_sequence - off_by
    rest = b"".join(b for n, b in _numbered_blocks(data) if n is not None and n > after)
    splice.resume()
    again = call.resume(resume_request(call.request, str(call.response_id), after))
    return seen + [out for event in _read(again, rest) for out in splice.admit(event)], True


def _whole(data: bytes) -> list[Event]:
    return _read(open_call(RESPONSES, Context.of("Hi"), Options(api_key="k")), data)


def _first_text_deltas(data: bytes) -> list[bytes]:
    """The text-delta events of the first response in ``data`` (not its resumed copy)."""
    numbered = [(n, b) for n, b in _numbered_blocks(data) if n is not None]
    first = [b for i, (n, b) in enumerate(numbered) if all(m < n for m, _ in numbered[:i])]
    return [b for b in first if b"output_text.delta" in b]


def _resumable(keep: Callable[[bytes], bool]) -> list[Any]:
    """pytest params: the recorded Responses SSE bodies with sequence numbers (something
    to resume from) that ``keep`` accepts, chosen here rather than skipped in the test;
    the corpus's one ``no-corpus`` case without the corpus."""
    entries = corpus_entries("openai-responses")
    if entries[0].values[0] is None:
        return entries
    found = []
    for param in entries:
        entry = param.values[0]
        if entry["file"].endswith(".sse"):  # not a chunking record
            data = body(entry)
            if b'"sequence_number"' in data and keep(data):
                found.append(param)
    return found


def _recording(entry: dict[str, Any] | None) -> bytes:
    return body(require_corpus(entry))


@pytest.mark.parametrize("entry", _resumable(lambda data: isinstance(_whole(data)[-1], Done)))
def test_a_resumed_responses_stream_is_the_uncut_one_at_every_cut(
    entry: dict[str, Any] | None,
) -> None:
    data = _recording(entry)
    whole = _whole(data)
    expected = [*whole[:-1], msgspec.structs.replace(whole[-1], recovered=1)]
    resumed = 0
    for cut in _cut_points(len(data)):
        joined, did = _resumed(data, cut)
        if did:
            resumed += 1
            assert joined == expected, f"cut at byte {cut}"
    assert resumed > 0


@pytest.mark.parametrize("entry", _resumable(lambda data: len(_first_text_deltas(data)) >= 3))
def test_resuming_from_the_wrong_event_is_caught(entry: dict[str, Any] | None) -> None:
    """The property above can fail: one event too early repeats it in the joined stream."""
    data = _recording(entry)
    deltas = _first_text_deltas(data)
    whole = _whole(data)
    cut = data.index(deltas[2]) + len(deltas[2]) + 5  # the last event read is a text delta
    joined, did = _resumed(data, cut, off_by=1)
    assert did and joined[:-1] != whole[:-1]


def test_the_resume_request_is_the_one_the_openai_sdk_sends() -> None:
    """The oracle: ``client.responses.retrieve(id, stream=True, starting_after=N, include=...)``."""
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"")

    base = "http://upstream.test/v1"
    sdk = openai.OpenAI(
        api_key="sk-x",
        base_url=base,
        http_client=httpx.Client(transport=httpx.MockTransport(record)),
    )
    include: Any = ["reasoning.encrypted_content"]
    list(sdk.responses.retrieve("resp_9", stream=True, starting_after=41, include=include))
    model = msgspec.structs.replace(
        RESPONSES, id="o4-mini", reasoning=True, base_url=base
    )  # a reasoning model: the request asks for the encrypted reasoning
    posted = open_call(model, Context.of("Hi"), Options(api_key="sk-x")).request
    ours = resume_request(posted, "resp_9", 41)
    theirs = sent[0]
    assert ours.method == theirs.method == "GET"
    ours_url, theirs_url = urlsplit(ours.url), urlsplit(str(theirs.url))
    assert ours_url.path == theirs_url.path == "/v1/responses/resp_9"
    assert sorted(parse_qsl(ours_url.query)) == sorted(parse_qsl(theirs_url.query))
    assert dict(ours.headers)["authorization"] == theirs.headers["authorization"]
    assert ours.body == b""


def test_resume_asks_for_a_stored_background_response() -> None:
    from streamfn.core.stages._recovery import background

    options = background(Options(api_key="k", extra_body={"metadata": {"a": "b"}}))
    request = open_call(RESPONSES, Context.of("Hi"), options).request
    sent = msgspec.json.decode(request.body)
    assert sent["background"] is True and sent["store"] is True and sent["stream"] is True
    assert sent["metadata"] == {"a": "b"}


@pytest.mark.parametrize(
    ("model", "options", "mode"),
    [
        (RESPONSES, Options(recover="resume"), "resume"),
        (RESPONSES, Options(recover="resume", max_recoveries=0), None),
        (RESPONSES, Options(recover="continue"), None),
        (msgspec.structs.replace(RESPONSES, api="openai-chat"), Options(recover="resume"), None),
        (CLAUDE, Options(recover="continue"), "continue"),
        (CLAUDE, Options(recover="continue", thinking="high"), None),
        (CLAUDE, Options(recover="continue", thinking="off"), "continue"),
        (CLAUDE, Options(recover="resume"), None),
        # Claude 4.6 and later answer a prefill with a 400: no request is made for it
        (msgspec.structs.replace(CLAUDE, id="claude-opus-4-6"), Options(recover="continue"), None),
        (
            msgspec.structs.replace(CLAUDE, id="claude-sonnet-4-6"),
            Options(recover="continue"),
            None,
        ),
        (msgspec.structs.replace(CLAUDE, id="claude-opus-4-7"), Options(recover="continue"), None),
        (
            Model(id="q", provider="vllm", api="openai-chat", base_url="http://x/v1"),
            Options(recover="continue"),
            "continue",
        ),
        (
            Model(id="q", provider="llamacpp", api="openai-chat", base_url="http://x/v1"),
            Options(recover="continue", thinking_budget=512),
            None,
        ),
        (RESPONSES, Options(), None),
    ],
)
def test_which_models_recover_how(model: Model, options: Options, mode: str | None) -> None:
    assert recovery_mode(model, options) == mode


def test_recover_is_checked_when_set() -> None:
    with pytest.raises(ValueError, match="recover="):
        Options(recover="again")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_recoveries"):
        Options(max_recoveries=-1)


@pytest.mark.parametrize(
    ("error", "recovers"),
    [
        (Error.network("stream ended early"), True),
        (Error.auth("bad key", status=401), False),
        (Error.context_overflow("too long"), False),
        (Error.throttled("slow down"), False),
        (Error.protocol("garbage"), False),
        (Error.aborted(), False),
    ],
)
def test_only_a_network_cut_after_output_is_recovered(error: Error, recovers: bool) -> None:
    splice = Splice(CLAUDE, "continue", 1)
    assert not splice.recovers(Error.network("before output"))
    splice.admit(Start(model="m"))
    splice.admit(TextStart(0))
    assert splice.recovers(error) is recovers
    splice.continue_from(Error.network("cut"), "")
    assert not splice.recovers(Error.network("a second cut, past max_recoveries=1"))


def _continued(first: list[Event], second: list[Event], held: str = "") -> list[Event]:
    splice = Splice(CLAUDE, "continue", 2)
    out = [e for event in first[:-1] for e in splice.admit(event)]
    cut = first[-1]
    assert isinstance(cut, Error) and splice.recovers(cut)
    assert splice.prefix() is not None
    splice.continue_from(cut, held)
    return out + [e for event in second for e in splice.admit(event)]


def test_a_continuation_goes_on_in_the_open_text_block() -> None:
    cut_usage = Usage(input=10, output=3)
    first: list[Event] = [
        Start(model="m"),
        TextStart(0),
        TextDelta(0, "Hello "),
        Error.network("cut", usage=cut_usage),
    ]
    second: list[Event] = [
        Start(model="m"),
        TextStart(0),
        TextDelta(0, " "),
        TextDelta(0, "world"),
        TextEnd(0),
        ToolCallStart(1, "t1", "f"),
        ToolCallEnd(1),  # any block after the text keeps its place
        Done(usage=Usage(input=13, output=2), cost=compute_cost(CLAUDE, Usage(input=13, output=2))),
    ]
    joined = _continued(first, second, held=" ")
    assert sum(isinstance(e, Start) for e in joined) == 1
    assert sum(isinstance(e, TextStart) for e in joined) == 1
    assert [e.index for e in joined if hasattr(e, "index")] == [0, 0, 0, 0, 1, 1]
    message = accumulate(joined)
    assert message.text == "Hello world"
    done = joined[-1]
    assert isinstance(done, Done) and done.recovered == 1
    assert done.usage == Usage(input=23, output=5)
    assert done.cost.total == pytest.approx(
        compute_cost(CLAUDE, cut_usage).total
        + compute_cost(CLAUDE, Usage(input=13, output=2)).total
    )
    assert done.cost.total > 0


def test_a_continuation_that_opens_something_else_closes_the_text_first() -> None:
    first: list[Event] = [Start(), TextStart(0), TextDelta(0, "Hi"), Error.network("cut")]
    second: list[Event] = [Start(), ToolCallStart(0, "c", "f"), ToolCallEnd(0), Done()]
    joined = _continued(first, second)
    tail = [TextEnd(0), ToolCallStart(1, "c", "f"), ToolCallEnd(1), Done(recovered=1)]
    assert joined[3:] == tail


def test_a_cut_inside_a_tool_call_or_thinking_is_not_continued() -> None:
    splice = Splice(CLAUDE, "continue", 2)
    for event in [Start(), TextStart(0), TextDelta(0, "x"), TextEnd(0), ToolCallStart(1, "c", "f")]:
        splice.admit(event)
    assert splice.prefix() is None


def test_the_anthropic_prefill_holds_back_trailing_whitespace() -> None:
    context, options, held = continue_request(CLAUDE, Context.of("Hi"), Options(), "Hello \n")
    last = context.messages[-1]
    assert isinstance(last, AssistantMessage) and last.text == "Hello"
    assert held == " \n" and options.extra_body is None
    sent = msgspec.json.decode(open_call(CLAUDE, context, Options(api_key="k")).request.body)
    assert sent["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello"}],
    }


def test_a_vllm_continuation_asks_to_continue_the_final_message() -> None:
    vllm = Model(id="q", provider="vllm", api="openai-chat", base_url="http://x/v1")
    context, options, held = continue_request(vllm, Context.of("Hi"), Options(), "Hello ")
    sent = msgspec.json.decode(open_call(vllm, context, options).request.body)
    assert sent["continue_final_message"] is True and sent["add_generation_prompt"] is False
    assert sent["messages"][-1]["role"] == "assistant"
    assert sent["messages"][-1]["content"] == "Hello " and held == ""


def test_an_error_after_a_continuation_carries_the_usage_of_every_request() -> None:
    first: list[Event] = [
        Start(),
        TextStart(0),
        TextDelta(0, "a"),
        Error.network("cut", usage=Usage(input=4)),
    ]
    second: list[Event] = [Start(), TextStart(0), Error.auth("revoked")]
    joined = _continued(first, second)
    assert isinstance(joined[-1], Error) and joined[-1].kind == ErrorKind.AUTH
    assert joined[-1].usage == Usage(input=4)


def test_the_resume_request_keeps_a_gateways_query() -> None:
    from streamfn.core.providers._request import HTTPRequest

    posted = HTTPRequest(
        method="POST",
        url="https://r.openai.azure.com/openai/v1/responses?api-version=preview",
        headers=[("content-type", "application/json"), ("api-key", "k")],
        body=b"{}",
    )
    got = resume_request(posted, "resp/1", 3)
    assert got.url == (
        "https://r.openai.azure.com/openai/v1/responses/resp%2F1"
        "?api-version=preview&stream=true&starting_after=3"
    )
    assert got.headers == [("api-key", "k")] and got.body == b""


def _continue_budgets(
    answers: list[list[Event]], max_tokens: int | None
) -> tuple[list[int | None], list[Event]]:
    """Each request's ``max_tokens`` when `recovering` continues ``answers`` one after
    another, and the events the caller saw."""
    asked: list[int | None] = []

    async def events_for(model: Model, context: Context, options: Options, opener: Any) -> Any:
        asked.append(options.max_tokens)
        yield answers[len(asked) - 1]

    async def go() -> list[Event]:
        options = Options(recover="continue", max_recoveries=5, max_tokens=max_tokens)
        return [
            e async for b in recovering(events_for, CLAUDE, Context.of("Hi"), options) for e in b
        ]

    return asked, asyncio.run(go())


def _cut_after(text: str, output: int | None) -> list[Event]:
    usage = None if output is None else Usage(output=output)
    return [Start(), TextStart(0), TextDelta(0, text), Error.network("cut", usage=usage)]


def test_continuations_share_one_max_tokens() -> None:
    done: list[Event] = [Start(), TextStart(0), TextDelta(0, "end"), TextEnd(0), Done()]
    asked, seen = _continue_budgets([_cut_after("a", 60), _cut_after("b", 30), done], 100)
    assert asked == [100, 40, 10] and isinstance(seen[-1], Done)


def test_no_continuation_once_max_tokens_is_spent() -> None:
    asked, seen = _continue_budgets([_cut_after("a", 100), _cut_after("b", 1)], 100)
    assert asked == [100] and isinstance(seen[-1], Error)


def test_without_usage_the_text_said_is_counted() -> None:
    done: list[Event] = [Start(), TextStart(0), TextDelta(0, "."), TextEnd(0), Done()]
    asked, _ = _continue_budgets([_cut_after("x" * 40, None), done], 100)
    assert asked == [100, 90]  # 40 characters, 4 to a token
    asked, _ = _continue_budgets([_cut_after("x" * 40, None), done], None)
    assert asked == [None, None]  # no limit asked: none is made up


def test_a_usage_count_from_the_streams_start_does_not_hide_what_was_said() -> None:
    """Anthropic's ``message_start`` reports 1 output token; a stream cut after 400
    characters of text produced far more: the continuation must not get the whole
    max_tokens again (each one would bill nearly max_tokens more)."""
    done: list[Event] = [Start(), TextStart(0), TextDelta(0, "."), TextEnd(0), Done()]
    asked, _ = _continue_budgets([_cut_after("x" * 400, 1), done], 200)
    assert asked == [200, 100]  # 400 characters, 4 to a token, not the 1 reported
    asked, _ = _continue_budgets([_cut_after("x" * 40, 60), done], 100)
    assert asked == [100, 40]  # a report above the count stands
