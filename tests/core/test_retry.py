"""The retry policy and the rule that nothing is retried once the caller saw output."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamfn.core._events import Error, Start, TextDelta, TextStart
from streamfn.core.stages._retry import FirstOutputGate, Retry, RetryPolicy

POLICY = RetryPolicy(max_attempts=4, base_delay=0.5, max_delay=3.0, max_retry_after=20.0)
RETRYABLE = [
    Error.network("reset"),
    Error.throttled("slow down", retry_after=None),
    503,
    529,
    429,
    408,
]
FINAL = [
    Error.auth("bad key", status=401),
    Error.context_overflow("too long"),
    Error.invalid_request("bad", status=400),
    Error.protocol("garbage"),
    Error.limit("too big"),
    400,
    401,
    404,
]


def test_only_retryable_failures_are_retried() -> None:
    for failure in RETRYABLE:
        assert POLICY.delay(1, failure, None, 0.5) is not None, failure
    for failure in FINAL:
        assert POLICY.delay(1, failure, None, 0.5) is None, failure


def test_attempts_are_bounded() -> None:
    assert POLICY.delay(3, 503, None, 0.5) is not None
    assert POLICY.delay(4, 503, None, 0.5) is None


@given(attempt=st.integers(1, 3), rand=st.floats(0, 1, exclude_max=True))
def test_backoff_is_full_jitter_under_an_exponential_ceiling(attempt: int, rand: float) -> None:
    delay = POLICY.delay(attempt, 500, None, rand)
    ceiling = min(3.0, 0.5 * 2 ** (attempt - 1))
    assert delay is not None and 0 <= delay <= ceiling
    assert delay == rand * ceiling


def test_retry_after_is_honoured_and_capped() -> None:
    assert POLICY.delay(1, 429, 7.0, 0.0) == 7.0
    assert POLICY.delay(1, 429, 21.0, 0.0) is None  # longer than the cap: the caller decides
    assert POLICY.delay(1, Error.auth("no", status=401), 1.0, 0.0) is None


def test_gate_holds_start_back_and_retries_an_error_that_comes_first() -> None:
    gate = FirstOutputGate(POLICY)
    gate.begin_attempt()
    assert gate.feed([Start(model="m")], 0.0) == []
    outcome = gate.feed([Error.throttled("busy", retry_after=2.0)], 0.0)
    assert isinstance(outcome, Retry) and outcome.delay == 2.0
    gate.begin_attempt()
    events = gate.feed([Start(model="m"), TextStart(0), TextDelta(0, "hi")], 0.0)
    assert events == [Start(model="m"), TextStart(0), TextDelta(0, "hi")]


def test_gate_never_retries_after_output_and_stamps_attempts() -> None:
    gate = FirstOutputGate(POLICY)
    gate.begin_attempt()
    gate.feed([Start(), TextStart(0)], 0.0)
    [error] = gate.feed([Error.network("reset")], 0.0)
    assert isinstance(error, Error) and error.attempts == 1


def test_gate_gives_up_when_the_wait_would_pass_the_total_deadline() -> None:
    gate = FirstOutputGate(POLICY)
    gate.begin_attempt()
    out = gate.feed([Start(), Error.throttled("busy", retry_after=5.0)], 0.0, time_left=1.0)
    assert isinstance(out, list) and isinstance(out[-1], Error) and out[-1].attempts == 1


def test_gate_stops_at_max_attempts() -> None:
    gate = FirstOutputGate(RetryPolicy(max_attempts=2))
    gate.begin_attempt()
    assert isinstance(gate.feed([Start(), Error.network("x", status=503)], 0.0), Retry)
    gate.begin_attempt()
    out = gate.feed([Start(), Error.network("x", status=503)], 0.0)
    assert isinstance(out, list) and out[-1].attempts == 2  # type: ignore[union-attr]
