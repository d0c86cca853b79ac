"""Streams that survive a cut, through every shell, against a loopback upstream that
cuts the connection mid-answer and counts the requests (the bill).

- resume: ``POST /v1/responses`` (background, stored) is cut mid-text; one
  ``GET /v1/responses/{id}?stream=true&starting_after=N`` serves the rest; the
  caller's events equal the uncut stream's, with ``Done.recovered == 1``. A GET
  that does not go on from there (from the start again, numbered anew, a gap, a
  repeat, unnumbered) ends the stream in an `Error`, the text before the cut once.
- continue: an Anthropic answer is cut mid-text; one more ``POST /v1/messages``
  carries the text so far as the last assistant message; the joined text is the
  prefix plus the continuation, usage is the sum of both requests.
- bounds: a cut inside a tool call is not continued (one request, the `Error`);
  an upstream that always cuts gets ``1 + max_recoveries`` requests, then the
  `Error` with the usage of them all; without ``recover`` a cut is an `Error` after one request.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
import trio

from streamfn.core import (
    Context,
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Options,
    Start,
    TextStart,
    Usage,
    accumulate,
    open_call,
)
from streamfn.fuzz._fake_bodies import anthropic_body, sse
from streamfn.fuzz._raw_http import Request, ThreadedServer, chunk, head, read_request
from streamfn.io_asyncio import stream as asyncio_stream
from streamfn.io_sync import stream as sync_stream
from streamfn.io_trio import stream as trio_stream

SHELLS = ["trio", "asyncio", "sync"]
OPTIONS = Options(
    api_key="sk-test",
    max_attempts=1,
    connect_timeout=2,
    first_byte_timeout=2,
    idle_timeout=2,
)

#: what to send for the n-th request (1-based): the body, and whether to cut after it
Script = Callable[[Request, int], tuple[bytes, bool]]


class Upstream(ThreadedServer):
    """Answers each request as ``script`` says; a cut closes the connection with the
    body unfinished: a read-until-close body that ends early (the provider's decoder
    sees the cut), or a chunked body without its last chunk (the HTTP layer does)."""

    def __init__(self, script: Script, framing: str = "close") -> None:
        super().__init__(None)
        self.script = script
        self.framing = framing
        self.requests: list[Request] = []

    def handle(self, sock: socket.socket) -> None:
        buffer = bytearray()
        while (request := read_request(sock, buffer)) is not None:
            self.requests.append(request)
            data, cut = self.script(request, len(self.requests))
            if cut and self.framing == "chunked":
                sock.sendall(head(200, "text/event-stream", Transfer_Encoding="chunked"))
                sock.sendall(chunk(data))
                sock.shutdown(socket.SHUT_WR)
                return
            if cut:
                sock.sendall(head(200, "text/event-stream", Connection="close") + data)
                sock.shutdown(socket.SHUT_WR)
                return
            sock.sendall(head(200, "text/event-stream", Content_Length=str(len(data))) + data)


def _collect(shell: str, model: Model, options: Options) -> list[Event]:
    context = Context.of("Hi")
    if shell == "sync":
        with sync_stream(model, context, options) as events:
            return list(events)

    async def run(stream: Any) -> list[Event]:
        async with stream(model, context, options) as events:
            return [event async for event in events]

    if shell == "trio":
        result: list[Event] = trio.run(run, trio_stream)
        return result
    return asyncio.run(run(asyncio_stream))


# -- resume: OpenAI Responses background mode -------------------------------------------


def _responses_events(words: list[str]) -> list[bytes]:
    """A Responses stream as OpenAI sends it, every event numbered."""
    text = "".join(words)
    response: dict[str, Any] = {"id": "resp_cut", "status": "in_progress", "model": "gpt-5"}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    payloads: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *(
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": w,
            }
            for w in words
        ),
        {"type": "response.output_text.done", "output_index": 0, "content_index": 0, "text": text},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": item | {"content": [{"type": "output_text", "text": text, "annotations": []}]},
        },
        {
            "type": "response.completed",
            "response": response
            | {"status": "completed", "usage": {"input_tokens": 5, "output_tokens": len(words)}},
        },
    ]
    return [sse(p | {"sequence_number": n}, p["type"]) for n, p in enumerate(payloads)]


WORDS = ["The", " cut", " came", " in", " the", " middle", "."]
RESPONSES_EVENTS = _responses_events(WORDS)
CUT_AFTER = 4  # events 0..3 reach the client: created, item added, two deltas


def _resuming(request: Request, n: int) -> tuple[bytes, bool]:
    if request.method == "POST":
        first = b"".join(RESPONSES_EVENTS[:CUT_AFTER])
        return first + RESPONSES_EVENTS[CUT_AFTER][:30], True  # cut inside the next event
    after = int(request.path.split("starting_after=")[1].split("&")[0])
    return b"".join(RESPONSES_EVENTS[after + 1 :]), False


def _responses_model(url: str) -> Model:
    return Model(id="gpt-5", provider="openai", api="openai-responses", base_url=url + "/v1")


@pytest.mark.parametrize("framing", ["close", "chunked"])
@pytest.mark.parametrize("shell", SHELLS)
def test_resume_continues_the_same_response_with_one_get(shell: str, framing: str) -> None:
    with Upstream(_resuming, framing) as upstream:
        model = _responses_model(f"http://127.0.0.1:{upstream.port}")
        options = msgspec.structs.replace(OPTIONS, recover="resume")
        events = _collect(shell, model, options)
        methods = [(r.method, r.path) for r in upstream.requests]
    call = open_call(model, Context.of("Hi"), OPTIONS)
    uncut = call.receive_response(200, [("content-type", "text/event-stream")])
    uncut += call.receive_data(b"".join(RESPONSES_EVENTS)) + call.receive_eof()
    assert events == [*uncut[:-1], msgspec.structs.replace(uncut[-1], recovered=1)]
    assert methods == [
        ("POST", "/v1/responses"),
        (
            "GET",
            f"/v1/responses/resp_cut?stream=true&starting_after={CUT_AFTER - 1}"
            "&include%5B%5D=reasoning.encrypted_content",  # gpt-5 reasons: asked for as posted
        ),
    ]
    posted = json.loads(upstream.requests[0].body)
    assert posted["background"] is True and posted["store"] is True
    assert upstream.requests[1].headers["authorization"] == "Bearer sk-test"


def _resuming_twice(request: Request, n: int) -> tuple[bytes, bool]:
    """The POST and the first GET are both cut; the second GET serves the rest."""
    if n == 2:
        return b"".join(RESPONSES_EVENTS[CUT_AFTER:6]) + RESPONSES_EVENTS[6][:20], True
    return _resuming(request, n)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_resumed_stream_cut_again_resumes_from_where_it_got(shell: str) -> None:
    with Upstream(_resuming_twice, "chunked") as upstream:
        model = _responses_model(f"http://127.0.0.1:{upstream.port}")
        options = msgspec.structs.replace(OPTIONS, recover="resume")
        events = _collect(shell, model, options)
        paths = [r.path.split("&include")[0] for r in upstream.requests]
    assert paths == [
        "/v1/responses",
        f"/v1/responses/resp_cut?stream=true&starting_after={CUT_AFTER - 1}",
        "/v1/responses/resp_cut?stream=true&starting_after=5",
    ]
    assert accumulate(events).text == "".join(WORDS)
    done = events[-1]
    assert isinstance(done, Done) and done.recovered == 2
    assert sum(isinstance(e, Start) for e in events) == 1


def _renumbered(events: list[bytes], numbers: list[int | None]) -> bytes:
    """``events`` with their ``sequence_number``s replaced (None: left out)."""
    out = []
    for raw, number in zip(events, numbers, strict=True):
        payload = json.loads(raw.split(b"data: ", 1)[1])
        payload.pop("sequence_number")
        if number is not None:
            payload["sequence_number"] = number
        out.append(sse(payload, payload["type"]))
    return b"".join(out)


REST = RESPONSES_EVENTS[CUT_AFTER:]
#: how a resume GET can fail to go on from ``starting_after``: what it serves instead
MISBEHAVIOURS = {
    # the whole response again, from its first event
    "ignores starting_after": b"".join(RESPONSES_EVENTS),
    # the right events, numbered from 0 again
    "numbers anew": _renumbered(REST, list(range(len(REST)))),
    # one event left out
    "skips one": b"".join(REST[1:]),
    # the last event read, again
    "repeats one": b"".join(RESPONSES_EVENTS[CUT_AFTER - 1 :]),
    # the right events, numbered by nobody
    "unnumbered": _renumbered(REST, [None] * len(REST)),
}


@pytest.mark.parametrize("misbehaviour", sorted(MISBEHAVIOURS))
@pytest.mark.parametrize("shell", SHELLS)
def test_a_resumed_stream_that_does_not_go_on_where_it_was_cut_is_an_error(
    shell: str, misbehaviour: str
) -> None:
    """Text said twice, or a hole in it, is never passed off as a recovered answer: the
    stream ends in an `Error` naming the cause, with only the text before the cut."""

    def resuming_badly(request: Request, n: int) -> tuple[bytes, bool]:
        if request.method == "POST":
            return _resuming(request, n)
        return MISBEHAVIOURS[misbehaviour], False

    with Upstream(resuming_badly) as upstream:
        model = _responses_model(f"http://127.0.0.1:{upstream.port}")
        options = msgspec.structs.replace(OPTIONS, recover="resume")
        events = _collect(shell, model, options)
        assert [r.method for r in upstream.requests] == ["POST", "GET"]
    error = events[-1]
    assert isinstance(error, Error) and error.kind == ErrorKind.PROTOCOL, error
    assert "starting_after" in error.message and "expected event 4" in error.message
    assert not any(isinstance(e, Done) for e in events)
    assert accumulate(events).text == "".join(WORDS[:2])  # what came before the cut, once


@pytest.mark.parametrize("shell", SHELLS)
def test_without_recover_a_cut_is_an_error_after_one_request(shell: str) -> None:
    with Upstream(_resuming) as upstream:
        events = _collect(shell, _responses_model(f"http://127.0.0.1:{upstream.port}"), OPTIONS)
        assert len(upstream.requests) == 1
        assert "background" not in json.loads(upstream.requests[0].body)
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.NETWORK


# -- continue: Anthropic prefill -----------------------------------------------------------

HEAD_WORDS = ["Once", " upon", " a", " time "]
TAIL_WORDS = [" there", " was", " a", " cut", "."]


def _prefix_cut(words: list[str], keep: int) -> bytes:
    """An Anthropic answer cut after ``keep`` text deltas (inside the next event)."""
    data = anthropic_body(words)
    marker = b"event: content_block_delta"
    at = -1
    for _ in range(keep + 1):
        at = data.index(marker, at + 1)
    return data[: at + 12]


def _continuing(request: Request, n: int) -> tuple[bytes, bool]:
    if n == 1:
        return _prefix_cut([*HEAD_WORDS, "never sent"], len(HEAD_WORDS)), True
    return anthropic_body(TAIL_WORDS), False


def _claude(url: str) -> Model:
    return Model(
        id="claude-sonnet-4-5",
        provider="anthropic",
        api="anthropic",
        base_url=url,
        price_input=3.0,
        price_output=15.0,
    )


def _read(model: Model, data: bytes) -> list[Event]:
    call = open_call(model, Context.of("Hi"), OPTIONS)
    events = call.receive_response(200, [("content-type", "text/event-stream")])
    return events + call.receive_data(data) + call.receive_eof()


@pytest.mark.parametrize("framing", ["close", "chunked"])
@pytest.mark.parametrize("shell", SHELLS)
def test_continue_prefills_the_partial_answer_and_bills_both_requests(
    shell: str, framing: str
) -> None:
    with Upstream(_continuing, framing) as upstream:
        model = _claude(f"http://127.0.0.1:{upstream.port}")
        options = msgspec.structs.replace(OPTIONS, recover="continue")
        events = _collect(shell, model, options)
        bodies = [json.loads(r.body) for r in upstream.requests]
    assert len(bodies) == 2  # the bill: one request per cut survived
    prefill = bodies[1]["messages"][-1]
    assert prefill == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Once upon a time"}],
    }
    assert bodies[1]["messages"][:-1] == bodies[0]["messages"]
    message = accumulate(events)
    assert message.text == "Once upon a time there was a cut."  # the held-back space once
    assert sum(isinstance(e, Start) for e in events) == 1
    assert sum(isinstance(e, TextStart) for e in events) == 1
    done = events[-1]
    assert isinstance(done, Done) and done.recovered == 1
    cut, whole = (
        _read(model, _continuing(upstream.requests[0], 1)[0]),
        _read(model, anthropic_body(TAIL_WORDS)),
    )
    cut_error, whole_done = cut[-1], whole[-1]
    assert isinstance(cut_error, Error) and isinstance(whole_done, Done)
    assert cut_error.usage is not None and cut_error.usage.total > 0
    expected = msgspec.structs.replace(whole_done.usage, total=0)
    expected = Usage(
        input=cut_error.usage.input + expected.input,
        output=cut_error.usage.output + expected.output,
    )
    assert done.usage == expected
    assert done.cost.total == pytest.approx(
        whole_done.cost.total + (cut_error.usage.input * 3.0 + cut_error.usage.output * 15.0) / 1e6
    )


def _tool_cut(request: Request, n: int) -> tuple[bytes, bool]:
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {}}
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    delta = {"type": "input_json_delta", "partial_json": '{"a": '}
    return b"".join(
        [
            sse({"type": "message_start", "message": message}, "message_start"),
            sse(
                {"type": "content_block_start", "index": 0, "content_block": block},
                "content_block_start",
            ),
            sse({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta"),
        ]
    ), True


@pytest.mark.parametrize("shell", SHELLS)
def test_a_cut_inside_a_tool_call_is_not_continued(shell: str) -> None:
    with Upstream(_tool_cut) as upstream:
        model = _claude(f"http://127.0.0.1:{upstream.port}")
        events = _collect(shell, model, msgspec.structs.replace(OPTIONS, recover="continue"))
        assert len(upstream.requests) == 1
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.NETWORK


@pytest.mark.parametrize("shell", SHELLS)
def test_recoveries_are_bounded(shell: str) -> None:
    def always_cut(request: Request, n: int) -> tuple[bytes, bool]:
        return _prefix_cut(["a", "b", "c"], 1), True

    with Upstream(always_cut) as upstream:
        model = _claude(f"http://127.0.0.1:{upstream.port}")
        options = msgspec.structs.replace(OPTIONS, recover="continue", max_recoveries=2)
        events = _collect(shell, model, options)
        assert len(upstream.requests) == 3  # the first, then max_recoveries continuations
        last = json.loads(upstream.requests[-1].body)["messages"][-1]
    assert last["content"][0]["text"] == "aa"  # the text of the two requests before
    assert accumulate(events).text == "aaa"
    assert isinstance(events[-1], Error) and events[-1].kind == ErrorKind.NETWORK


@pytest.mark.parametrize("framing", ["close", "chunked"])
@pytest.mark.parametrize("shell", SHELLS)
def test_when_every_request_is_cut_the_error_bills_every_one(shell: str, framing: str) -> None:
    """The last request's usage is in the final `Error` too, whether the provider's
    decoder saw the cut (``close``) or the HTTP layer did (``chunked``)."""
    body = _prefix_cut(["a", "b", "c"], 1)
    with Upstream(lambda request, n: (body, True), framing) as upstream:
        model = _claude(f"http://127.0.0.1:{upstream.port}")
        options = msgspec.structs.replace(OPTIONS, recover="continue", max_recoveries=2)
        events = _collect(shell, model, options)
        requests = len(upstream.requests)
    one = _read(model, body)[-1]  # what one cut request reports
    assert isinstance(one, Error) and one.usage is not None and one.usage.input > 0
    error = events[-1]
    assert isinstance(error, Error) and requests == 3
    assert error.usage == Usage(input=3 * one.usage.input, output=3 * one.usage.output)


def _first_text_then_leave(shell: str, model: Model, options: Options) -> list[Event]:
    """The caller reads up to the first text and leaves the stream."""
    context = Context.of("Hi")
    if shell == "sync":
        with sync_stream(model, context, options) as events:
            for event in events:
                if isinstance(event, TextStart):
                    return [event]
        return []

    async def run(stream: Any) -> list[Event]:
        async with stream(model, context, options) as events:
            async for event in events:
                if isinstance(event, TextStart):
                    return [event]
        return []

    if shell == "trio":
        result: list[Event] = trio.run(run, trio_stream)
        return result
    return asyncio.run(run(asyncio_stream))


@pytest.mark.parametrize("shell", SHELLS)
def test_leaving_the_stream_is_no_cut_and_costs_no_request(shell: str) -> None:
    """A caller who stops reading is not recovered: one request, nothing resumed."""
    with Upstream(_resuming) as upstream:
        model = _responses_model(f"http://127.0.0.1:{upstream.port}")
        options = msgspec.structs.replace(OPTIONS, recover="resume")
        assert _first_text_then_leave(shell, model, options) == [TextStart(0)]
        assert [r.method for r in upstream.requests] == ["POST"]
