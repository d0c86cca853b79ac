"""When to send a request again, and how long to wait first: pure policy, no clock.

Both shells use this one policy so trio and asyncio retry identically. The
randomness is an argument (``rand`` in ``[0, 1)``) so a test can pin it.

Retrying is only safe before the caller has seen any output: a second
attempt would otherwise repeat text the caller already showed. `FirstOutputGate`
enforces that rule: it holds back the `Start` event of an attempt until the
next event arrives, so an error that is the very first thing an attempt says
(HTTP 429/5xx, a connect failure, Anthropic's ``overloaded_error`` as the
first SSE event) can still be retried, and once anything else has been let
through every later failure is handed to the caller as an `Error`.

Where retrying sits among the other ways of trying again (deployments, fallback,
recovery) and what each costs: `streamfn.core.stages._try_again`.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from .._classify import retryable_status
from .._events import Error, Event, Start
from .._options import Options
from ._try_again import tries_again

__all__ = ["FirstOutputGate", "Retry", "RetryPolicy", "retryable_status"]


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Exponential backoff with full jitter, honouring the server's Retry-After.

    ``max_retry_after`` (``Options.retry_max_delay``) bounds how long a server
    may make us wait: a Retry-After up to it is waited exactly; one above it
    is not slept through (an hour-long throttle is the caller's decision, not
    a library's silent pause, and retrying earlier than asked only earns
    another refusal): the `Error` reaches the caller with ``retry_after`` set.
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 60.0

    @classmethod
    def from_options(cls, options: Options) -> RetryPolicy:
        return cls(
            max_attempts=max(1, options.max_attempts),
            base_delay=options.retry_base_delay,
            max_delay=options.retry_max_delay,
            max_retry_after=options.retry_max_delay,
        )

    def delay(
        self, attempt: int, error_or_status: Error | int, retry_after: float | None, rand: float
    ) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None to give up.

        ``attempt`` counts the attempts made so far (1 after the first).
        Retries connect failures, timeouts, 408/429/5xx/529 and in-stream
        overload (``Error.retryable``); never auth, context overflow, invalid
        requests, protocol errors or streamfn's own limits, which would fail
        the same way again.
        """
        if attempt >= self.max_attempts:
            return None
        if isinstance(error_or_status, Error):
            if not tries_again(error_or_status):
                return None
        elif not retryable_status(error_or_status):
            return None
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            return max(0.0, retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** max(0, attempt - 1))
        return min(max(rand, 0.0), 1.0) * ceiling


class Retry(NamedTuple):
    """Drop this attempt and start another after ``delay`` seconds."""

    delay: float
    error: Error


class FirstOutputGate:
    """Decides, event batch by event batch, whether the caller sees output or we retry.

    Use one gate per `stream()`: call `begin_attempt()` before each request,
    pass every batch of events the attempt produces to `feed`, and yield what
    it returns. The final `Error` is stamped with the number of attempts.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.attempts = 0
        self.released = False
        self._held: list[Event] = []

    def begin_attempt(self) -> None:
        self.attempts += 1
        self._held = []

    def feed(
        self, events: list[Event], rand: float, *, time_left: float | None = None
    ) -> list[Event] | Retry:
        """Events the caller may see now, or a `Retry`.

        ``time_left`` is what remains of the caller's total deadline; a retry
        that could not start before it is not attempted.
        """
        if self.released:
            return self._stamp(events)
        held = self._held + events
        first = next((e for e in held if not isinstance(e, Start)), None)
        if first is None:
            self._held = held
            return []
        if isinstance(first, Error):
            wait = self.policy.delay(self.attempts, first, first.retry_after, rand)
            if wait is not None and (time_left is None or wait < time_left):
                self._held = []
                return Retry(wait, first)
        self.released = True
        self._held = []
        return self._stamp(held)

    def _stamp(self, events: list[Event]) -> list[Event]:
        # An Error is always the terminal, last event: only the last one can need it.
        if events and isinstance(events[-1], Error):
            events = [*events[:-1], msgspec.structs.replace(events[-1], attempts=self.attempts)]
        return events
