"""``Options.max_cost`` on every shell, against the loopback fake provider that counts
its requests and what it sent before the client went away.

The priced models bill $1 an input token and $2 an output token ("hi" is an
estimated 5 input tokens, every ``abcd`` delta one token), so each figure is exact.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from fake_provider import FakeProvider
from shell_runner import SHELLS, collect, run

from streamfn.core import (
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Options,
    TextDelta,
    Usage,
    UsageError,
    fallback,
)
from streamfn.fuzz._fake_bodies import anthropic_body, openai_body

PRICES: dict[str, Any] = {"price_input": 1_000_000, "price_output": 2_000_000}
#: deltas in the long answer: far more than any cap below lets through
LONG = 2000


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def _model(base_url: str, api: str = "openai-chat", **prices: Any) -> Model:
    provider = "anthropic" if api == "anthropic" else "openai"
    return Model(id="m", provider=provider, api=api, base_url=base_url, **(prices or PRICES))


def _options(cap: float, attempts: int = 1) -> Options:
    return Options(api_key="k", max_cost=cap, max_attempts=attempts, retry_base_delay=0.0)


def _requests(fake: FakeProvider, base_url: str) -> int:
    path = base_url.split("/", 3)[3]
    return sum(r.path.startswith("/" + path + "/") for r in fake.requests)


def _paced_record(fake: FakeProvider, name: str) -> tuple[int, bool]:
    deadline = time.monotonic() + 10.0  # a hang guard: the fake notices at its next send
    while name not in fake.paced and time.monotonic() < deadline:
        time.sleep(0.005)
    return fake.paced[name]


@pytest.mark.parametrize("shell", SHELLS)
def test_crossing_the_cap_mid_answer_ends_it_and_closes_the_upstream(
    shell: str, fake: FakeProvider
) -> None:
    """$10.5: 5 + 2 + 2 = $9, the third delta takes it to $11 and is the last one seen;
    the fake, sending one event every few milliseconds, finds the connection closed
    long before its 2000 deltas are out."""
    url = fake.serve(openai_body(["abcd"] * LONG), fault="paced")
    events: list[Event] = run(shell, collect, _model(url), _options(10.5))
    assert sum(isinstance(e, TextDelta) for e in events) == 3
    assert not any(isinstance(e, Done) for e in events)
    error = events[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.BUDGET, error
    assert error.usage == Usage(input=5, output=3) and error.attempts == 1
    assert "$11" in error.message and "max_cost=$10.5" in error.message
    assert _requests(fake, url) == 1
    sent, left = _paced_record(fake, url.rsplit("/", 1)[1])
    assert left and sent < LONG


@pytest.mark.parametrize("shell", SHELLS)
def test_a_cap_below_the_input_makes_no_request(shell: str, fake: FakeProvider) -> None:
    url = fake.serve(openai_body(["abcd"] * 4))
    events: list[Event] = run(shell, collect, _model(url), _options(4.5))
    error = events[-1]
    assert isinstance(error, Error) and error.kind is ErrorKind.BUDGET
    assert error.attempts == 0 and "not sent" in error.message
    assert _requests(fake, url) == 0


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(("cap", "requests"), [(9.5, 1), (100.0, 2)])
def test_a_retried_request_counts_the_input_it_spent(
    shell: str, fake: FakeProvider, cap: float, requests: int
) -> None:
    """The first answer is a 200 whose first event is Anthropic's overloaded error: a
    retry, after the provider took the request ($5). A second $5 input passes $9.5
    (refused, one request); under $100 the retry answers."""
    url = fake.serve(anthropic_body(["abcd"] * 3), fault="overloaded-then-ok")
    model = _model(url, "anthropic")
    events: list[Event] = run(shell, collect, model, _options(cap, attempts=3))
    assert _requests(fake, url) == requests
    last = events[-1]
    if requests == 1:
        assert isinstance(last, Error) and last.kind is ErrorKind.BUDGET
        assert "on top of $5 already spent" in last.message and last.attempts == 1
    else:
        assert isinstance(last, Done)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_request_the_provider_refused_costs_nothing(shell: str, fake: FakeProvider) -> None:
    """A 500 bills nothing: the retry spends the whole $9.5 ($5 input, 2 deltas)."""
    url = fake.serve(openai_body(["abcd"] * 2), fault="500-then-ok")
    events: list[Event] = run(shell, collect, _model(url), _options(9.5, attempts=3))
    assert isinstance(events[-1], Done) and _requests(fake, url) == 2


#: the chains' keys: a fallback chain takes each model's key from its own variable
KEYS = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(("cap", "requests"), [(9.5, 1), (100.0, 2)])
def test_a_fallback_chain_shares_one_cap(
    shell: str, fake: FakeProvider, cap: float, requests: int
) -> None:
    """The first model fails over after its provider took the request ($5); the
    backup's $5 input passes $9.5 (not sent) and fits under $100."""
    first = fake.serve(anthropic_body(["abcd"]), fault="overloaded-then-ok")
    backup = fake.serve(openai_body(["abcd"] * 2))
    chain = fallback([_model(first, "anthropic"), _model(backup)])
    options = Options(max_cost=cap, max_attempts=1)
    events: list[Event] = run(shell, collect, chain, options, environ=KEYS)
    assert _requests(fake, first) == 1
    assert _requests(fake, backup) == requests - 1
    last = events[-1]
    if requests == 1:
        assert isinstance(last, Error) and last.kind is ErrorKind.BUDGET, last
    else:
        assert isinstance(last, Done)


def test_a_chain_with_an_unpriced_model_is_refused_before_any_request(
    fake: FakeProvider,
) -> None:
    first = fake.serve(openai_body(["abcd"]))
    free = msgspec.structs.replace(
        _model(fake.serve(openai_body(["abcd"]))), price_input=0.0, price_output=0.0
    )
    chain = fallback([_model(first), free])
    with pytest.raises(UsageError, match="has no prices"):
        run("sync", collect, chain, Options(max_cost=100.0), environ=KEYS)
    assert _requests(fake, first) == 0
