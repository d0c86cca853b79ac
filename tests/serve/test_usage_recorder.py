"""The usage recorder: what each closed request becomes on record, and how the records
reach a store that is slow, failing or far behind, without the event loop waiting."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from loopback_server import wait_until

from streamfn.asgi import _usage_recorder
from streamfn.asgi._observe import Flight
from streamfn.asgi._usage_recorder import UsageRecorder, usage_record
from streamfn.core import (
    Context,
    Cost,
    Done,
    Error,
    Model,
    Options,
    Start,
    TextDelta,
    Usage,
    UserMessage,
)
from streamfn.core.stages._spend import SpendCap
from streamfn.ledger import MemoryStore, UsageRecord

PRICED = Model(
    id="m", provider="openai", api="openai-chat", base_url="", price_input=1e6, price_output=2e6
)  # $1 an input token, $2 an output token


def _flight(**fields: object) -> Flight:
    flight = Flight(
        id="req_1",
        route="/v1/messages",
        model="m",
        stream=True,
        arrived=100.0,
        started=10.0,
        key_id="key_a",
        billed_by=PRICED,
        lease="l1",
    )
    for name, value in fields.items():
        setattr(flight, name, value)
    return flight


def test_a_whole_answer_is_its_reported_usage_and_cost() -> None:
    flight = _flight(
        usage=Usage(input=3, output=2, cache_read=5, reasoning=1),
        cost=Cost(input=3.0, output=4.0, cache_read=0.5),
        first_output=10.5,
    )
    flight.close(12.0, "ok")
    record = usage_record(flight)
    assert (record.input_tokens, record.cached_tokens, record.output_tokens) == (3, 5, 2)
    assert record.reasoning_tokens == 1 and record.cost == 7.5 and record.key_id == "key_a"
    assert (record.latency, record.first_token, record.outcome) == (2.0, 0.5, "ok")


def test_a_client_that_leaves_mid_answer_is_billed_what_was_generated() -> None:
    """Going away before the usage arrives must not make an answer free: the input
    estimated at admission and the output streamed so far, at 4 characters a token."""
    flight = _flight(prompt_estimate=7, output_chars=41, first_output=10.5)
    flight.close(11.0)
    record = usage_record(flight)
    assert record.outcome == "disconnected"
    assert (record.input_tokens, record.output_tokens) == (7, 11)
    assert record.cost == 7 + 2 * 11


def test_a_refusal_costs_nothing_and_an_unpriced_model_has_no_cost() -> None:
    refused = _flight(lease=None, prompt_estimate=7)
    refused.close(10.1, "refused:this key's budget for the month is spent")
    assert usage_record(refused).cost == 0.0 and usage_record(refused).input_tokens == 0
    unpriced = _flight(billed_by=None, usage=Usage(input=3, output=2), cost=Cost())
    unpriced.close(11.0, "ok")
    assert usage_record(unpriced).cost is None


class SlowStore(MemoryStore):
    """Settles only when let (``gate``), counting what it kept."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def settle(self, lease: str | None, record: UsageRecord) -> None:
        self.gate.wait(30)
        super().settle(lease, record)


def _close_flights(recorder: UsageRecorder, n: int) -> None:
    """``n`` requests end and reach ``recorder``."""
    for i in range(n):
        flight = _flight(id=f"req_{i}")
        flight.close(11.0, "ok")
        recorder.closed(flight)


def test_shutdown_keeps_every_record_queued_and_a_full_queue_says_it_is_behind() -> None:
    store = SlowStore()
    recorder = UsageRecorder(store, max_waiting=10)
    _close_flights(recorder, 6)  # returns at once, the store waiting
    assert recorder.behind  # half the queue: the gateway admits no more requests
    store.gate.set()
    recorder.close()
    assert len(store.records(since=0, until=1e9)) == 6 and recorder.lost == 0
    assert not recorder.behind


class BrokenStore(MemoryStore):
    def settle(self, lease: str | None, record: UsageRecord) -> None:
        raise RuntimeError("database is locked")


def test_a_failing_store_is_logged_and_retried_never_raised(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_usage_recorder, "_RETRIES", (0.0, 0.0))
    recorder = UsageRecorder(BrokenStore())
    flight = _flight()
    flight.close(11.0, "ok")
    recorder.closed(flight)
    recorder.close()
    assert recorder.lost == 1
    [said] = [r.getMessage() for r in caplog.records if r.name == "streamfn"]
    assert "key_a" in said and "RuntimeError: database is locked" in said


def test_a_store_that_quotes_the_key_in_its_error_has_it_hidden_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from streamfn.asgi._keys import _store_down
    from streamfn.ledger._secrets import hash_secret

    secret = "sfn-" + "s" * 43
    refusal = _store_down(
        "look a key up", RuntimeError(f"bad {secret} {hash_secret(secret)}"), secret
    )
    assert refusal.status == 503 and secret not in refusal.message
    [said] = [r.getMessage() for r in caplog.records]
    assert secret not in said and hash_secret(secret) not in said and "bad *** ***" in said


class CountingStore(SlowStore):
    """Counts the transactions its records were settled in."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def settle_many(self, settled: Sequence[tuple[str | None, UsageRecord]]) -> None:
        self.gate.wait(30)
        self.batches.append(len(settled))
        super().settle_many(settled)


def test_records_waiting_together_are_settled_in_one_transaction() -> None:
    store = CountingStore()
    recorder = UsageRecorder(store, max_waiting=1000)
    _close_flights(recorder, 300)
    store.gate.set()  # the first record was taken alone; the 299 behind it wait together
    recorder.close()
    assert sum(store.batches) == 300 and len(store.records(since=0, until=1e9)) == 300
    assert len(store.batches) <= 3 and recorder.lost == 0


def test_a_whole_answer_from_a_server_that_reports_no_usage_is_billed_its_estimate() -> None:
    """An upstream that never sends usage (an OpenAI-compatible server ignoring
    ``include_usage``, or a hostile one) must not make every answer free."""
    flight = _flight(
        usage=Usage(), cost=Cost(), prompt_estimate=7, output_chars=40, first_output=10.5
    )
    flight.answered = True
    flight.close(11.0, "ok")
    record = usage_record(flight)
    assert (record.input_tokens, record.output_tokens) == (7, 10)
    assert record.cost == 7 + 2 * 10 and record.outcome == "ok"


def test_a_client_that_leaves_before_the_upstream_answered_is_not_billed() -> None:
    """Admitted (a lease) but gone while waiting for a slot: nothing went upstream
    (one that left for its upstream is billed its input: see the hostile-usage tests)."""
    flight = _flight(prompt_estimate=7)
    flight.close(11.0)
    record = usage_record(flight)
    assert record.outcome == "disconnected" and record.cost == 0.0
    assert record.input_tokens == 0


def test_refusals_wait_for_no_room_while_the_store_is_behind() -> None:
    """A client retrying fast into refusals must not crowd out the records of requests
    that spent: while the store is behind, a refusal is counted, not queued."""
    store = SlowStore()
    recorder = UsageRecorder(store, max_waiting=10)
    _close_flights(recorder, 6)  # behind now
    for i in range(20):
        refused = _flight(id=f"refused_{i}", lease=None)
        refused.close(10.1, "refused:this key's limit of 5 requests per minute is reached")
        recorder.closed(refused)
    assert recorder.refusals_skipped == 18 and recorder.lost == 0  # room for two
    _close_flights(recorder, 3)  # what spent still has room
    store.gate.set()
    recorder.close()
    assert len(store.records(since=0, until=1e9)) == 11 and recorder.lost == 0


def test_a_key_that_may_do_nothing_is_refused_when_made() -> None:
    store = MemoryStore()
    for limits in ({"rpm": 0}, {"tpm": 0}, {"budget": -1.0}):
        with pytest.raises(ValueError, match="must be"):
            store.create_key("k", now=0.0, **limits)  # type: ignore[arg-type]


def test_refusals_take_a_quarter_of_the_queue_at_most_and_never_make_it_behind() -> None:
    """Refusals of many keys at once (each its first, so none answered from memory)
    must not make the gateway turn away the requests of keys in order."""
    store = SlowStore()
    recorder = UsageRecorder(store, max_waiting=40)
    _close_flights(recorder, 1)
    wait_until(lambda: recorder._queue.qsize() == 0, 10)  # the worker holds it, waiting
    for i in range(30):
        refused = _flight(id=f"refused_{i}", key_id=f"key_{i}", lease=None)
        refused.close(10.1, "refused:this key's limit of 5 requests per minute is reached")
        recorder.closed(refused)
    assert not recorder.behind and recorder.refusals_skipped == 20
    repeat = _flight(id="again", lease=None, repeat=True)
    repeat.close(10.2, "refused:this key's limit of 5 requests per minute is reached")
    recorder.closed(repeat)
    assert recorder.refusals_repeated == 1
    _close_flights(recorder, 19)
    assert not recorder.behind
    _close_flights(recorder, 1)
    assert recorder.behind  # half the queue holds records of requests admitted
    store.gate.set()
    recorder.close()
    assert len(store.records(since=0, until=1e9)) == 31 and recorder.lost == 0


def test_a_record_says_whether_its_usage_is_an_estimate() -> None:
    reported = _flight(usage=Usage(input=3, output=2), cost=Cost(input=3.0, output=4.0))
    reported.answered = True
    reported.close(11.0, "ok")
    guessed = _flight(prompt_estimate=7, output_chars=40, first_output=10.5)
    guessed.answered = True
    guessed.close(11.0, "ok")
    refused = _flight(lease=None)
    refused.close(10.1, "refused:this key's budget for the month is spent")
    records = [usage_record(f) for f in (reported, guessed, refused)]
    assert [r.estimated for r in records] == [False, True, False]
    assert [r.attempts for r in records] == [1, 1, 0]  # a refusal never left the gateway


def test_a_request_that_failed_over_keeps_every_deployment_it_tried() -> None:
    flight = _flight(deployment="third", tried=["first", "second"], usage=Usage(input=3))
    flight.answered = True
    flight.close(11.0, "ok")
    record = usage_record(flight)
    assert (record.deployment, record.attempts, record.tried) == ("third", 3, ("first", "second"))


def test_a_cut_answer_whose_report_stopped_short_is_billed_the_output_it_streamed() -> None:
    """An upstream that reports its usage as it starts (Anthropic: the input, and one
    output token) and then drops the connection or stalls past its idle timeout ends
    with an `Error` carrying that early report: its output stops short of what was
    streamed, so the record takes the streamed output instead, marked an estimate
    (else each such answer would spend almost nothing of its key's budget)."""
    flight = _flight(prompt_estimate=10)
    flight.note([Start(), TextDelta(0, "x" * 4000)], 10.5)
    flight.note([Error.network("stream ended early", usage=Usage(input=12, output=1))], 11.0)
    flight.close(11.0)
    record = usage_record(flight)
    assert (record.outcome, record.input_tokens, record.output_tokens) == ("cut", 12, 1000)
    assert record.estimated and record.cost == 12 + 2 * 1000
    whole = _flight()  # a finished answer's report is the bill, however short
    whole.note([Start(), TextDelta(0, "x" * 4000)], 10.5)
    whole.note([Done(usage=Usage(input=12, output=1))], 11.0)
    whole.close(11.0)
    done = usage_record(whole)
    assert (done.outcome, done.output_tokens, done.estimated) == ("ok", 1, False)


def test_a_stream_cut_at_its_budget_is_recorded_as_an_estimate() -> None:
    """The spending cap's own cut carries the cap's estimate as its usage (the input
    counted here, the output from the streamed text): the upstream reported nothing,
    so the record says it is an estimate."""
    spend = SpendCap(20.0)  # $5 of input, then $2 an output token
    meter = spend.meter(PRICED, Context(messages=[UserMessage(content="hi")]), Options())
    flight = _flight(prompt_estimate=1)
    flight.metered_by(spend)
    events, cut = meter.count([Start(), *(TextDelta(0, "abcd") for _ in range(1000))])
    assert cut is not None and cut.usage is not None  # the cap's own estimate
    flight.note([*events, cut], 10.5)
    flight.close(11.0)
    record = usage_record(flight)
    assert record.outcome == "cut" and record.output_tokens == spend.streamed > 0
    assert record.estimated
