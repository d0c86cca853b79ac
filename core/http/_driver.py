"""The whole life of one `stream()` call as I/O steps: the attempt loop every shell runs.

`drive` yields `streamfn.core.http._steps` and the shell answers each one. An
attempt (`_attempt`) opens the provider call, asks for a connection, sends
the request and reads the answer through an `Exchange` (a `SocketExchange` for
``Options(transport="websocket")``); `FirstOutputGate`
decides, batch by batch, whether the caller sees the events or the attempt is
dropped for a retry; a `Meter` (``Options.max_cost``, `streamfn.core.stages._spend`) prices
each request before it is sent and each batch as it arrives, and ends the stream
with the connection closed once the call's spending cap is crossed. Nothing here reads a clock, the environment or a random
source: the shell passes its monotonic ``clock``, ``wall_clock``, ``rand``
and ``environ`` in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping
from datetime import datetime
from typing import Final

import msgspec

from .._call import Call, open_call
from .._events import Error, Event, Start
from .._messages import Context
from .._options import Options
from .._redact import redact_url
from ..catalogue._models import Model
from ..stages._retry import FirstOutputGate, Retry, RetryPolicy
from ..stages._spend import Meter, SpendCap
from ._exchange import Exchange
from ._proxy_env import proxy_for
from ._socket_exchange import SocketExchange
from ._steps import (
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
from ._target import Target, connect_timeout_error, parse_target

__all__ = ["TAIL_GRACE", "Steps", "drive", "wire_headers"]

#: How long a shell waits for the end of the HTTP body after the terminal event
#: before giving up on reusing the socket (the terminal event waits for it).
TAIL_GRACE: Final = 1.0

#: One stream's steps: yields `Step`, is answered with `Answer`.
Steps = Generator[Step, Answer, None]


class _Reconnect:
    """An attempt's outcome: the pooled socket was already closed; resend on a new one."""


_RECONNECT: Final = _Reconnect()


def wire_headers(call: Call, now: datetime) -> list[tuple[str, str]]:
    """The headers to send, signed (Bedrock SigV4) at the moment of sending.

    Signing happens in the send path, not in the request builder: the
    signature covers the time, and a retry minutes later needs a fresh one.
    The provider module owns the signing; the shell only supplies the clock.
    """
    return list(call.sign(now).headers)


class _Run:
    """What every attempt of one stream shares: the shell's clocks, the gate, the deadline."""

    def __init__(
        self,
        options: Options,
        environ: Mapping[str, str],
        clock: Callable[[], float],
        rand: Callable[[], float],
        log: logging.Logger,
        wall_clock: Callable[[], datetime],
        opener: Callable[[Model, Context, Options], Call],
        spend: SpendCap | None,
    ) -> None:
        self.environ = environ
        self.clock = clock
        self.rand = rand
        self.log = log
        self.wall_clock = wall_clock
        self.gate = FirstOutputGate(RetryPolicy.from_options(options))
        self.began = clock()
        total = options.total_timeout
        self.deadline = None if total is None else self.began + total
        self.debug = log.isEnabledFor(logging.DEBUG)
        #: makes each attempt's call (`open_call`, or stream recovery's own)
        self.opener = opener
        #: the call's spending cap (``Options.max_cost``), shared with its other streams
        self.spend = spend

    def feed(self, events: list[Event]) -> list[Event] | Retry:
        """The gate's verdict on a batch, with what is left of the total deadline."""
        jitter = self.rand()
        left = None if self.deadline is None else self.deadline - self.clock()
        return self.gate.feed(events, jitter, time_left=left)

    def capped(self, until: float) -> float:
        """``until``, or the total deadline if that comes first."""
        return until if self.deadline is None else min(until, self.deadline)


def _answer(exchange: Exchange, result: Answer, on_expiry: Error) -> list[Event]:
    """Feed a `Send` or `Receive` answer to the exchange."""
    if isinstance(result, BaseException):
        return exchange.connection_lost(result)
    if isinstance(result, bytes | bytearray):
        return exchange.receive_bytes(result, eager=True) if result else exchange.receive_eof()
    if result is EXPIRED:
        return exchange.fail(on_expiry)
    return []


def _receive(
    run: _Run, exchange: Exchange, until: float, on_expiry: Error
) -> Generator[Step, Answer, list[Event]]:
    """One `Receive` step, its answer (`ReceiveAnswer`) fed to the exchange.

    A deadline already past ends the exchange here, whatever the shell's read
    would do: a read that finds bytes waiting may return without ever letting
    the shell's timer fire (asyncio's ``sock_recv`` under a flood does).
    """
    if run.clock() >= until:
        return exchange.fail(on_expiry)
    return _answer(exchange, (yield Receive(until)), on_expiry)


def _drain_tail(run: _Run, exchange: Exchange) -> Generator[Step, Answer, None]:
    """Read what is left of the HTTP body after the terminal event, briefly and boundedly."""
    until = run.capped(run.clock() + TAIL_GRACE)
    while exchange.needs_tail:
        yield from _receive(run, exchange, until, Error.network("tail"))


def drive(
    model: Model,
    context: Context,
    options: Options,
    *,
    environ: Mapping[str, str],
    clock: Callable[[], float],
    rand: Callable[[], float],
    log: logging.Logger,
    wall_clock: Callable[[], datetime],
    opener: Callable[[Model, Context, Options], Call] = open_call,
    spend: SpendCap | None = None,
) -> Steps:
    """The whole life of one `stream()` call, as steps for a shell to perform.

    ``clock`` is the shell's monotonic clock (deadlines are on it), ``rand``
    the jitter source, ``wall_clock`` the UTC time (request signing and
    Retry-After dates). Retries happen only before the caller saw an event
    (`FirstOutputGate`); a pooled socket the server had already closed is
    replaced without counting an attempt. ``opener`` makes each attempt's call
    (`open_call`; stream recovery passes its own, see `resume_request` in `streamfn.core`).
    ``spend`` is the call's spending cap when this stream is one of several requests
    of one call (a fallback chain, continued turns, recoveries); by default
    ``Options.max_cost`` caps this stream's attempts alone.
    """
    if spend is None:
        spend = SpendCap.of(options)
    run = _Run(options, environ, clock, rand, log, wall_clock, opener, spend)
    fresh = False
    while True:
        if not fresh:
            run.gate.begin_attempt()
        outcome = yield from _attempt(run, model, context, options, fresh)
        fresh = outcome is _RECONNECT
        if isinstance(outcome, Retry):
            log.warning(
                "attempt %d failed (%s); retrying in %.2f s",
                run.gate.attempts,
                outcome.error.message,
                outcome.delay,
            )
            yield Sleep(outcome.delay)
        elif not fresh:
            return


def _attempt(
    run: _Run, model: Model, context: Context, options: Options, fresh: bool
) -> Generator[Step, Answer, Retry | _Reconnect | None]:
    """One request: connect, send, read. Returns how it ended (None: the stream is over)."""
    meter = None if run.spend is None else run.spend.meter(model, context, options)
    refused = None if meter is None else meter.refusal()
    if refused is not None:  # nothing is sent: the attempts stamped are the requests made
        run.log.warning("%s", refused.message)
        start = Start(api=model.api, provider=model.provider, model=model.id)
        yield Emit([start, msgspec.structs.replace(refused, attempts=run.gate.attempts - 1)])
        return None
    call = run.opener(model, context, options)
    target = parse_target(call.request.url)
    proxy = proxy_for(target.scheme, target.host, target.port, run.environ)
    run.log.info(
        "%s %s (attempt %d)", call.request.method, redact_url(call.request.url), run.gate.attempts
    )
    t0 = run.clock()
    key = (target.scheme, target.host, target.port, proxy)
    limit = run.capped(t0 + options.connect_timeout)
    socket = options.transport == "websocket"
    # a WebSocket takes a socket of its own: never a pooled one, never pooled after
    conn = yield Connect(target, proxy, key, fresh or socket, limit)  # a `ConnectAnswer`
    if conn is EXPIRED or isinstance(conn, Error):
        error = (
            conn
            if isinstance(conn, Error)
            else connect_timeout_error(target, options.connect_timeout)
        )
        outcome = run.feed(Exchange(call, model, options).fail(error))
        if isinstance(outcome, Retry):
            return outcome
        if outcome:
            yield Emit(outcome)
        return None
    run.log.debug("connected to %s:%d in %.3f s", target.host, target.port, run.clock() - t0)
    sent_at = run.wall_clock()
    kind = SocketExchange if socket else Exchange
    exchange = kind(
        call,
        model,
        options,
        headers=wire_headers(call, sent_at),
        deadline=run.deadline,
        reuse=conn if isinstance(conn, Exchange) else None,  # None for a WebSocket
        sent_at=sent_at,
    )
    return (yield from _exchange(run, exchange, target, t0, meter))


def _exchange(
    run: _Run, exchange: Exchange, target: Target, t0: float, meter: Meter | None
) -> Generator[Step, Answer, Retry | _Reconnect | None]:
    """Send the request and read the answer, handing events out as the gate allows."""
    until, on_expiry = exchange.timer(run.clock())
    events = _answer(exchange, (yield Send(exchange.bytes_to_send(), until)), on_expiry)
    logged_status = False
    while True:
        if not events and not exchange.finished:
            events = exchange.pump(some=True)  # what the last read still holds first
        if not events and not exchange.finished:
            until, on_expiry = exchange.timer(run.clock())
            events = yield from _receive(run, exchange, until, on_expiry)
        if exchange.pending:  # what the answer made the exchange say (a WebSocket's)
            events += yield from _send_pending(run, exchange)
        if exchange.stale_keep_alive:
            run.log.debug("pooled connection was closed by the server; reconnecting")
            yield Release(None)
            return _RECONNECT
        if not logged_status and exchange.status is not None:
            logged_status = True
            run.log.info(
                "HTTP %d from %s after %.3f s", exchange.status, target.host, run.clock() - t0
            )
        if meter is not None:
            meter.answer(exchange.status)
            events, over = meter.count(events)
            if over is not None:
                yield from _over_budget(run, events, over)
                return None
        outcome = run.feed(events)
        events = []
        if isinstance(outcome, Retry):
            yield Release(exchange if exchange.reusable else None)
            return outcome
        if run.debug:
            for event in outcome:
                run.log.debug("event %r", event)
        if exchange.finished:
            yield from _finish(run, exchange, outcome)
            return None
        if outcome:
            yield Emit(outcome)


def _over_budget(run: _Run, events: list[Event], error: Error) -> Generator[Step, Answer, None]:
    """The call's spending cap crossed: the connection is closed at once, unread (the
    provider stops generating what nobody would pay for), then the caller sees the
    events up to the delta that crossed it and the budget `Error`."""
    run.log.warning("%s", error.message)
    outcome = run.feed([*events, error])
    yield Release(None)
    assert not isinstance(outcome, Retry), "a budget error is never retried"
    yield Emit(outcome)


def _send_pending(run: _Run, exchange: Exchange) -> Generator[Step, Answer, list[Event]]:
    """Send what the exchange has to say now (a WebSocket's message after the 101, a
    pong, the closing Close frame), within the read timer's deadline."""
    data, exchange.pending = exchange.pending, b""
    until, on_expiry = exchange.timer(run.clock())
    return _answer(exchange, (yield Send(data, until)), on_expiry)


def _finish(run: _Run, exchange: Exchange, outcome: list[Event]) -> Generator[Step, Answer, None]:
    """The end of a stream: the terminal event waits for the end of the HTTP body, so
    a caller who stops reading at `Done` still leaves a reusable socket."""
    if outcome[:-1]:
        yield Emit(outcome[:-1])
    yield from _drain_tail(run, exchange)
    run.log.info(
        "stream finished after %.3f s (%d body bytes, %d attempt(s))",
        run.clock() - run.began,
        exchange.body_bytes,
        run.gate.attempts,
    )
    yield Release(exchange if exchange.reusable else None)
    if outcome[-1:]:
        yield Emit(outcome[-1:])
