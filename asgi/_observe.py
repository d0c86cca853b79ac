"""Who watches the requests a gateway serves: one record per request, seen by observers.

The App opens a `Flight` for every admitted request (a completion, a count, a
WebSocket turn), keeps it up to date as batches pass (first output, deltas, the
final usage and cost) and closes it when the request ends, however it ends.
Observers (the usage store's recorder, `/metrics`, the dashboard's live view)
see ``opened`` and ``closed``; while a request runs they may read its flight
(`App.flights`) but never change it. An observer's failure is logged and never
reaches the client.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from streamfn.core import (
    Cost,
    Done,
    Error,
    ErrorKind,
    Event,
    Model,
    Start,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)
from streamfn.core.stages._spend import billable

if TYPE_CHECKING:
    from streamfn.core.stages._spend import SpendCap

__all__ = ["Flight", "Flights", "Observer", "calling_as", "current_flight"]

log = logging.getLogger("streamfn")

#: the events whose text is output the provider bills as it generates it
_DELTAS: Final = (TextDelta, ThinkingDelta, ToolCallDelta)


@dataclass(slots=True, eq=False)
class Flight:
    """One request as it goes: what it asked, who asked, and how far it got.

    ``arrived`` is wall-clock Unix seconds (for records); ``started`` and the
    times after it are the runtime's clock (for durations). ``deltas`` counts
    the answer's events between its `Start` and its end, a proxy for tokens while
    usage is not yet known.
    """

    id: str
    route: str
    model: str
    stream: bool
    arrived: float
    started: float
    key_id: str | None = None
    key_name: str | None = None
    deployment: str | None = None
    #: the deployments that failed over before ``deployment``, in order
    tried: list[str] = field(default_factory=list)
    provider: str | None = None
    first_output: float | None = None  # runtime clock
    ended: float | None = None  # runtime clock
    deltas: int = 0
    usage: Usage | None = None
    cost: Cost | None = None
    #: the request left for its backend (a slot was free): the upstream may bill it
    dispatched: bool = False
    #: the upstream answered (a `Start`)
    answered: bool = False
    #: ``ok``, ``cut``, ``error:<kind>``, ``refused:<reason>`` or ``disconnected``;
    #: None while it runs
    outcome: str | None = None
    error: str | None = field(default=None, repr=False)  # the client-facing message
    #: a refusal answered from the key's remembered one (its Retry-After not over):
    #: the store not asked, no usage record queued; `/metrics` counts it
    repeat: bool = False
    #: with client keys: the store's reservation for this request, settled when it ends
    lease: str | None = None
    #: Unix seconds by which a stream under that reservation must end (the store lets
    #: an unsettled reservation go after its ``lease_ttl``); None: no budget holds it
    lease_until: float | None = None
    #: US dollars that reservation holds (the stream's cap), None without a budget
    reserved: float | None = None
    #: the model whose prices bill it (None: no prices known), and its input, estimated
    billed_by: Model | None = field(default=None, repr=False)
    prompt_estimate: int = 0
    #: characters of text, thinking and tool arguments streamed: the output's estimate
    #: when the answer never reports its usage (the client went away), counted here
    #: only while no spending cap meters the stream (`output_estimate`)
    output_chars: int = 0
    #: the spending cap of the stream's upstream call (set by the backend), whose meters
    #: count the output already
    spend: SpendCap | None = field(default=None, repr=False)

    def note(self, batch: Sequence[Event], now: float) -> None:
        """Take in one batch of the answer's events as it goes to the client."""
        first, last = batch[0], batch[-1]
        if isinstance(first, Start):
            self.provider = first.provider or self.provider
            self.answered = True
        self.deltas += len(batch)
        spend = self.spend
        if spend is None or not spend.metering:  # else the cap's meters count it
            for event in batch:
                if isinstance(event, _DELTAS):
                    self.output_chars += len(event.delta)
        if self.first_output is None and any(not isinstance(e, (Start, Error)) for e in batch):
            self.first_output = now
        if isinstance(last, Done):
            self.usage, self.cost, self.outcome = last.usage, last.cost, "ok"
            self._keep_billable()
        elif isinstance(last, Error):
            if last.kind != ErrorKind.BUDGET:  # a spending cap's cut carries its own
                self.usage = last.usage or self.usage  # estimate: no upstream's report
            self._keep_billable()
            self.error = last.message
            self.outcome = "cut" if self.output_began else f"error:{last.kind or 'unknown'}"

    def _keep_billable(self) -> None:
        """The upstream's report within bounds (`billable`); a cost priced from one that
        was not is dropped (the usage record prices the bounded counts afresh)."""
        if self.usage is not None:
            fit = billable(self.usage)
            if fit is not self.usage:
                self.usage, self.cost = fit, None

    def close(self, now: float, outcome: str | None = None) -> None:
        """The request ended at ``now``; ``outcome`` when the App knows better (a
        disconnect, a refusal) or when the answer never said."""
        self.ended = now
        if outcome is not None:
            self.outcome = outcome
        elif self.outcome is None:
            self.outcome = "disconnected"

    def metered_by(self, spend: SpendCap | None) -> None:
        """The spending cap of the stream's upstream call (None: uncapped)."""
        self.spend = spend

    @property
    def counted(self) -> int | None:
        """The output tokens the spending cap's meters counted, where they meter the
        stream (None: the characters here are the count)."""
        spend = self.spend
        return spend.streamed if spend is not None and spend.metering else None

    @property
    def output_began(self) -> bool:
        """Whether any of the answer reached the client (its first output is timed)."""
        return self.first_output is not None

    @property
    def latency(self) -> float | None:
        """Seconds from arrival to the end (None while it runs)."""
        return None if self.ended is None else self.ended - self.started

    @property
    def time_to_first_output(self) -> float | None:
        return None if self.first_output is None else self.first_output - self.started


class Observer(Protocol):
    """Something told of every request as it opens and as it closes.

    Both calls run on the event loop and must return at once: an observer that
    writes to a database hands the write to a thread or a queue of its own.
    """

    def opened(self, flight: Flight) -> None: ...

    def closed(self, flight: Flight) -> None: ...


#: the `Flight` of the request the current task serves (its producer task inherits it)
_FLIGHT: Final[ContextVar[Flight | None]] = ContextVar("streamfn_flight", default=None)


def current_flight() -> Flight | None:
    """The flight of the request the current task serves, if any."""
    return _FLIGHT.get()


#: fields the flights opened in this context take whatever the App said (who asks)
_CALLER: Final[ContextVar[dict[str, Any] | None]] = ContextVar("streamfn_caller", default=None)


@contextmanager
def calling_as(**fields: Any) -> Iterator[None]:
    """Flights opened inside take ``fields`` (the dashboard's playground: the admin's
    own use, recorded under its name like any client's)."""
    token = _CALLER.set(fields)
    try:
        yield
    finally:
        _CALLER.reset(token)


class Flights:
    """The requests running now (``running``, by request id) and who is told of them."""

    def __init__(self, observers: Sequence[Observer] = ()) -> None:
        self.observers = list(observers)
        self.running: dict[str, Flight] = {}

    def open(self, **fields: Any) -> Flight:
        """A new `Flight` of ``fields``, running from now on."""
        flight = Flight(**{**fields, **(_CALLER.get() or {})})
        self.running[flight.id] = flight
        _FLIGHT.set(flight)
        _tell(self.observers, "opened", flight)
        return flight

    def close(self, flight: Flight, now: float) -> None:
        flight.close(now)
        self.running.pop(flight.id, None)
        _FLIGHT.set(None)
        _tell(self.observers, "closed", flight)


def _tell(observers: Sequence[Observer], what: str, flight: Flight) -> None:
    for observer in observers:
        try:
            getattr(observer, what)(flight)
        except Exception:
            log.exception("a request observer failed as a request %s", what)
