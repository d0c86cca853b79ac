"""Usage on record: each request a gateway with client keys served, kept in its store.

An `Observer` that turns each closed `Flight` into a `UsageRecord` and hands it to
one worker thread, which settles it in the store (`Store.settle_many`: the record
kept, the request's reservation freed), with every other record waiting by then
in the same transaction. The event loop never waits on the database: a
record waits in a bounded queue, and while the records of admitted requests fill
half of it the gateway admits no new request (`UsageRecorder.behind`: a 503 until
the store catches up), so no answer is ever served off the record. Refusals (which
spent nothing) wait in a room of their own, a quarter as large, and never count
towards ``behind``: past it they are counted (`UsageRecorder.refusals_skipped`), not
queued, and a refusal answered from a key's remembered one (`Flight.repeat`) is
never queued (`UsageRecorder.refusals_repeated`; `/metrics` counts each request). A failing store is logged (the error's
type and words, never a key) and retried a few times; it never breaks a response.
At shutdown the queue is flushed before the store is closed.

What a request used comes from its answer: the usage the provider reported and its
cost. An answer that never reported (the client went away, a cut without usage) is
billed its estimate: the input estimated at admission and the output streamed so
far at four characters a token (`Flight.counted`: the spending cap's own count
where one meters the stream), so leaving early never spends less than was
generated.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from typing import Final

from streamfn.core import Model, Usage
from streamfn.core._count import text_tokens
from streamfn.core.catalogue._model_spec import compute_cost
from streamfn.ledger import Store, UsageRecord

from ._observe import Flight

__all__ = ["MAX_WAITING_RECORDS", "UsageRecorder", "usage_record"]

log = logging.getLogger("streamfn")

#: records that may wait for the store; past half of it no request is admitted
MAX_WAITING_RECORDS: Final = 10_000
#: refusals may wait in a room of a quarter of that, on top: never in spent requests' room
_REFUSALS_SHARE: Final = 4
#: seconds between a failed settle and the next try (then the record is given up)
_RETRIES: Final = (0.1, 0.5, 2.0)
#: the most records settled in one transaction
_BATCH: Final = 256
#: seconds the shutdown waits for the records still queued
_FLUSH_WAIT: Final = 60.0


def _went_up(flight: Flight) -> bool:
    """Whether ``flight`` left for its upstream (which may bill it from then)."""
    return flight.dispatched or flight.answered or flight.output_began


def _used(flight: Flight) -> Usage | None:
    """What ``flight`` used: its reported usage, else its estimate when it left for its
    upstream and never said (the client went away, a cut without usage, or a whole
    answer from a server that reports none: it is billed all the same), else what it
    reported (None, or nothing). A cut answer's report may stop short (the usage an
    upstream sent as it started, then the connection dropped): its output is then the
    output streamed, like the spending cap's own count of a cut request."""
    reported = flight.usage
    if reported is not None and reported.total:
        if flight.outcome == "ok" or not flight.output_began:
            return reported  # a finished answer's report is the bill
        streamed = _output(flight)
        if reported.output >= streamed:
            return reported
        return Usage(
            input=reported.input,
            output=streamed,
            cache_read=reported.cache_read,
            cache_write=reported.cache_write,
            reasoning=reported.reasoning,
        )
    if not _went_up(flight) or flight.outcome not in ("ok", "disconnected", "cut"):
        return reported
    return Usage(input=flight.prompt_estimate, output=_output(flight))


def _output(flight: Flight) -> int:
    """The output ``flight`` streamed, in estimated tokens: the spending cap's own count
    where one meters the stream (one count for the cut and the record), else the
    characters it saw at four a token."""
    counted = flight.counted
    return text_tokens(flight.output_chars) if counted is None else counted


def _unseen_reasoning(flight: Flight, model: Model) -> bool:
    """Whether ``flight`` ended with no usage report after its upstream took it (its
    `Start`, which comes with the upstream's status), on a model that may have reasoned
    unseen: the streamed text then says nothing of the reasoning tokens billed before
    it (a client could end every stream at its first word and pay for none), so it
    is charged its reservation, the most it could cost."""
    return model.reasoning and flight.answered and flight.outcome in ("disconnected", "cut")


def usage_record(flight: Flight) -> UsageRecord:
    """The record of a closed ``flight``: who, which model, the tokens of each kind, the
    cost (None where the model has no prices), latency, first output and outcome,
    whether that usage is an estimate, and the upstreams it was sent to."""
    used = _used(flight)
    estimated = used is not None and used is not flight.usage
    model = flight.billed_by
    cost: float | None = None
    if model is not None:
        if flight.cost is not None and flight.outcome == "ok" and used is flight.usage:
            cost = flight.cost.total
        else:
            cost = 0.0 if used is None else compute_cost(model, used).total
            if _unseen_reasoning(flight, model) and flight.reserved is not None:
                estimated, cost = estimated or flight.reserved > cost, max(cost, flight.reserved)
    used = used or Usage()
    return UsageRecord(
        at=flight.arrived,
        key_id=flight.key_id,
        route=flight.route,
        model=flight.model,
        deployment=flight.deployment,
        input_tokens=used.input,
        cached_tokens=used.cache_read,
        cache_write_tokens=used.cache_write,
        output_tokens=used.output,
        reasoning_tokens=used.reasoning,
        cost=cost,
        latency=flight.latency or 0.0,
        first_token=flight.time_to_first_output,
        outcome=flight.outcome or "disconnected",
        estimated=estimated,
        attempts=len(flight.tried) + _went_up(flight),
        tried=tuple(flight.tried),
    )


def _refusal(lease: str | None, outcome: str) -> bool:
    """Whether a request that ended with ``outcome`` was refused before it spent."""
    return lease is None and outcome.startswith("refused:")


class UsageRecorder:
    """Settles each closed flight's record in ``store`` from one worker thread."""

    def __init__(self, store: Store, *, max_waiting: int | None = None) -> None:
        self.store = store
        self.max_waiting = MAX_WAITING_RECORDS if max_waiting is None else max_waiting
        #: the refusals that may wait, on top of ``max_waiting``
        self.refusal_room = self.max_waiting // _REFUSALS_SHARE
        self._queue: queue.Queue[tuple[str | None, UsageRecord] | None] = queue.Queue(
            self.max_waiting + self.refusal_room
        )
        #: records given up on (the queue full, or the store failing every try)
        self.lost = 0
        #: refusals not recorded: their share of the queue full
        self.refusals_skipped = 0
        #: refusals answered from a key's remembered one, never queued
        self.refusals_repeated = 0
        #: refusals queued (by the loop) and taken from the queue (by the worker):
        #: each written by one thread only, their difference is what waits
        self._refusals_queued = 0
        self._refusals_taken = 0
        self._worker = threading.Thread(target=self._drain, name="streamfn-usage", daemon=True)
        self._worker.start()
        self._closed = False
        #: a second `close` (the app's shutdown, then its owner's) waits for the first
        self._closing = threading.Lock()

    @property
    def behind(self) -> bool:
        """Whether the store is so far behind that no request should be admitted: the
        records of requests admitted fill half the queue (refusals are not counted)."""
        refusals = self._refusals_queued - self._refusals_taken
        return (self._queue.qsize() - refusals) * 2 >= self.max_waiting

    def opened(self, flight: Flight) -> None:
        pass

    def closed(self, flight: Flight) -> None:
        if flight.repeat:
            self.refusals_repeated += 1
            return
        refused = _refusal(flight.lease, flight.outcome or "")
        # the room is for the records of requests that spent: a refusal spent
        # nothing, and clients retrying fast must not crowd them out
        if refused and self._refusals_queued - self._refusals_taken >= self.refusal_room:
            self.refusals_skipped += 1
            return
        self._refusals_queued += refused  # before the worker can take it
        try:
            self._queue.put_nowait((flight.lease, usage_record(flight)))
        except queue.Full:
            self._refusals_queued -= refused
            self.lost += 1
            log.error(
                "usage record of request %s (key %s) lost: %d records wait for the store",
                flight.id,
                flight.key_id,
                self.max_waiting,
            )

    def close(self) -> None:
        """Settle every record queued (for at most a minute), then stop the worker.
        Blocks: the app calls it off the loop."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
            deadline = time.monotonic() + _FLUSH_WAIT
            with contextlib.suppress(queue.Full):  # behind the records queued: kept, then stop
                self._queue.put(None, timeout=_FLUSH_WAIT)
            self._worker.join(max(0.0, deadline - time.monotonic()))
            left = self._queue.qsize()
            if self._worker.is_alive() and left:
                log.error("shutdown: %d usage records not kept (the store is not answering)", left)

    def _drain(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < _BATCH:  # whatever else waits: settled in one transaction
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            settled = [item for item in batch if item is not None]
            self._refusals_taken += sum(_refusal(lease, r.outcome) for lease, r in settled)
            if settled:
                self._settle(settled)
            if len(settled) < len(batch):  # the shutdown's mark: everything before it kept
                return

    def _settle(self, settled: list[tuple[str | None, UsageRecord]]) -> None:
        for wait in (*_RETRIES, None):
            try:
                self.store.settle_many(settled)
                return
            except Exception as exc:  # the store's words name no key; the records none either
                if wait is None:
                    self.lost += len(settled)
                    log.error(
                        "%d usage records (keys %s) lost: the store failed (%s: %s)",
                        len(settled),
                        ", ".join(sorted({str(record.key_id) for _, record in settled})),
                        type(exc).__name__,
                        exc,
                    )
                    return
                time.sleep(wait)
