"""`drive` with a scripted shell: no socket, no event loop, every clock and random
source passed in, each step answered with its typed answer."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from test_http11 import EXPECTED, MODEL, OPENAI_BODY, chunked_response

from streamfn.core import Context, Error, Event, Options
from streamfn.core.http._driver import drive
from streamfn.core.http._exchange import Exchange
from streamfn.core.http._steps import (
    EXPIRED,
    Answer,
    Connect,
    Emit,
    Receive,
    Release,
    Send,
    Sleep,
    Step,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class Script:
    """A shell that answers from a script and a clock it moves itself."""

    def __init__(self, receives: list[Answer]) -> None:
        self.receives = receives
        self.now = 100.0
        self.walls = 0
        self.steps: list[Step] = []

    def wall(self) -> datetime:
        self.walls += 1
        return NOW

    def run(self, options: Options) -> list[Event]:
        steps = drive(
            MODEL,
            Context.of("hi"),
            options,
            environ={},
            clock=lambda: self.now,
            rand=lambda: 0.5,
            log=logging.getLogger("test"),
            wall_clock=self.wall,
        )
        events: list[Event] = []
        answer: Answer = None
        for _ in range(100):
            try:
                step = steps.send(answer)
            except StopIteration:
                return events
            self.steps.append(step)
            answer = None
            if isinstance(step, Emit):
                events += step.events
            elif isinstance(step, Receive):
                answer = self.receives.pop(0)
                if answer is EXPIRED:
                    self.now = step.deadline
            elif isinstance(step, Sleep):
                self.now += step.seconds
        raise AssertionError("drive did not end")


OPTIONS = Options(api_key="sk-x", first_byte_timeout=5.0, max_attempts=2, retry_base_delay=1.0)


def test_one_clean_exchange_is_connect_send_receive_release_emit() -> None:
    shell = Script([chunked_response(OPENAI_BODY)])
    assert shell.run(OPTIONS) == EXPECTED
    kinds = [type(s) for s in shell.steps]
    assert kinds[:3] == [Connect, Send, Receive]
    assert kinds[-2:] == [Release, Emit]  # the socket goes back before the terminal event
    release = shell.steps[-2]
    assert isinstance(release, Release) and isinstance(release.keep, Exchange)
    assert shell.walls == 1  # the request was dated (and signed) once, by the shell's clock
    connect = shell.steps[0]
    assert isinstance(connect, Connect) and connect.deadline == 100.0 + OPTIONS.connect_timeout


def test_an_expired_first_byte_is_retried_after_the_jittered_backoff() -> None:
    shell = Script([EXPIRED, chunked_response(OPENAI_BODY)])
    assert shell.run(OPTIONS) == EXPECTED
    receive = shell.steps[2]
    assert isinstance(receive, Receive) and receive.deadline == 100.0 + 5.0
    [sleep] = [s for s in shell.steps if isinstance(s, Sleep)]
    assert sleep.seconds == 0.5 * 1.0  # rand() * base delay: the shell's randomness
    assert [type(s) for s in shell.steps].count(Connect) == 2


def test_the_last_attempt_ends_with_the_timer_error() -> None:
    shell = Script([EXPIRED, EXPIRED])
    events = shell.run(OPTIONS)
    error = events[-1]
    assert isinstance(error, Error) and error.attempts == 2
    assert error.message == "first-byte timeout: no response body within 5.0 s"
