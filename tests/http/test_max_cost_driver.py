"""``Options.max_cost`` decided by `drive` alone: a scripted shell answers each step, so
the bound, the refusal and the retry bill are exact, and the closed socket is a step.

The priced model bills $1 an input token and $2 an output token; "hi" is an estimated
5 input tokens ($5) and every delta of the bodies below is one estimated token ($2).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import msgspec
import pytest

from streamfn.core import (
    Context,
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Options,
    TextDelta,
    Usage,
    UsageError,
)
from streamfn.core.http._driver import drive
from streamfn.core.http._steps import Answer, Connect, Emit, Receive, Release, Send, Sleep, Step
from streamfn.fuzz._fake_bodies import openai_body, sse

MODEL = Model(
    id="priced",
    provider="openai",
    api="openai-chat",
    base_url="http://h.test:8080/v1",
    price_input=1_000_000,  # $1 a token
    price_output=2_000_000,  # $2 a token
)
DELTAS = 10
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def chunks(body: bytes) -> list[bytes]:
    """A 200 answer, one SSE event per read: the head, then each event in a chunk."""
    events = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    return [HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"]


def answer(deltas: int = DELTAS) -> list[bytes]:
    return chunks(openai_body(["abcd"] * deltas))


class Shell:
    """Answers `drive`'s steps from scripted reads, one list of reads per connection."""

    def __init__(self, *connections: list[bytes]) -> None:
        self.connections = [list(reads) for reads in connections]
        self.steps: list[Step] = []
        self.unread = 0  # reads left on the connections when the stream ended

    def run(self, options: Options, model: Model = MODEL) -> list[Event]:
        steps = drive(
            model,
            Context.of("hi"),
            options,
            environ={},
            clock=lambda: 0.0,
            rand=lambda: 0.5,
            log=logging.getLogger("test"),
            wall_clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
        )
        events: list[Event] = []
        reads: list[bytes] = []
        reply: Answer = None
        while True:
            try:
                step = steps.send(reply)
            except StopIteration:
                self.unread = len(reads) + sum(len(c) for c in self.connections)
                return events
            self.steps.append(step)
            reply = None
            if isinstance(step, Connect):
                reads = self.connections.pop(0)
            elif isinstance(step, Receive):
                reply = reads.pop(0)
            elif isinstance(step, Emit):
                events += step.events

    def count(self, kind: type) -> int:
        return sum(isinstance(s, kind) for s in self.steps)


def options(cap: float | None, **more: object) -> Options:
    return Options(api_key="k", max_cost=cap, retry_base_delay=0.0, **more)  # type: ignore[arg-type]


@pytest.mark.parametrize("cap", [5.0, 6.0, 7.0, 7.5, 10.5, 12.999, 24.0, 25.0, 26.0, 1000.0])
def test_the_cut_lets_exactly_one_delta_past_the_cap(cap: float) -> None:
    """k deltas cost 5 + 2k: the caller sees every delta while that is at most the cap,
    and the one that crosses it, then the budget error; never a Done for a cut answer."""
    shell = Shell(answer())
    events = shell.run(options(cap))
    seen = sum(isinstance(e, TextDelta) for e in events)
    crossing = next((k for k in range(1, DELTAS + 1) if 5 + 2 * k > cap), None)
    if crossing is None:  # the whole answer fits: it is read to its end
        assert seen == DELTAS and isinstance(events[-1], Done)
        return
    assert seen == crossing
    assert 5 + 2 * (seen - 1) <= cap < 5 + 2 * seen <= cap + 2  # the bound: one delta past
    error = events[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.BUDGET
    assert not any(isinstance(e, Done) for e in events)
    assert error.usage == Usage(input=5, output=seen)
    assert f"max_cost=${cap:g}" in error.message and "Raise max_cost" in error.message


def test_the_connection_is_closed_unread_at_the_cut() -> None:
    """The socket is released unkept (closed) before the caller sees the error, and no
    read follows: the rest of the answer stays unread upstream."""
    shell = Shell(answer())
    events = shell.run(options(10.5))
    assert shell.unread > 0
    releases = [s for s in shell.steps if isinstance(s, Release)]
    assert [r.keep for r in releases] == [None]
    assert shell.steps.index(releases[0]) == len(shell.steps) - 2
    last = shell.steps[-1]
    assert isinstance(last, Emit) and last.events[-1] == events[-1]


def test_a_cap_below_the_input_sends_nothing() -> None:
    shell = Shell(answer())
    events = shell.run(options(4.99))
    assert shell.count(Connect) == shell.count(Send) == 0
    assert [type(e) for e in events] == [type(events[0]), Error]
    error = events[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.BUDGET
    assert error.attempts == 0 and "not sent" in error.message and "$5" in error.message


def test_a_cap_at_the_input_sends_it() -> None:
    shell = Shell(answer())
    events = shell.run(options(5.0))
    assert shell.count(Connect) == 1 and sum(isinstance(e, TextDelta) for e in events) == 1


def _cut_after_start() -> list[bytes]:
    """A 200 whose body is cut after its first event: a retryable error before output,
    after the provider took the request (its input is billed)."""
    first = sse(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
        }
    )
    return [HEAD, b"%x\r\n%s\r\n" % (len(first), first), b""]


def _status_500() -> list[bytes]:
    body = b'{"error": {"message": "boom", "type": "server_error"}}'
    return [b"HTTP/1.1 500 X\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)]


def test_a_retried_request_that_was_taken_counts_its_input() -> None:
    """$5 spent by the cut attempt + $5 for the retry's input > $9.99: not sent."""
    shell = Shell(_cut_after_start(), answer())
    events = shell.run(options(9.99, max_attempts=3))
    assert shell.count(Connect) == 1 and shell.count(Sleep) == 1
    error = events[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.BUDGET
    assert error.attempts == 1 and "on top of $5 already spent" in error.message


def test_a_retried_request_the_provider_refused_cost_nothing() -> None:
    """A 500 bills nothing: the retry has the whole cap ($5 input + 2 deltas = $9)."""
    shell = Shell(_status_500(), answer(2))
    events = shell.run(options(9.5, max_attempts=3))
    assert shell.count(Connect) == 2
    assert isinstance(events[-1], Done)


def test_a_model_without_prices_is_refused_not_run_uncapped() -> None:
    free = msgspec.structs.replace(MODEL, price_input=0.0, price_output=0.0)
    shell = Shell(answer())
    with pytest.raises(UsageError, match=r"has no prices.*price_input"):
        shell.run(options(1.0), free)
    assert shell.count(Connect) == 0
    assert isinstance(Shell(answer()).run(options(None), free)[-1], Done)  # uncapped: fine
