"""A hostile or broken upstream's usage report never gives money back nor loses a record.

The counts an upstream reports are its own text: a negative one priced below zero
would hand spend back to a client key's budget (and to ``Options.max_cost``'s
running total), and one past a 64-bit integer would make the store refuse the
record, so the request's spend would go unrecorded. Each is taken within bounds.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import msgspec
import pytest

from streamfn.asgi._observe import Flight
from streamfn.asgi._usage_recorder import usage_record
from streamfn.core import Model
from streamfn.core._events import Done, Start, TextDelta, Usage
from streamfn.core._messages import Context, UserMessage
from streamfn.core._options import Options
from streamfn.core.catalogue._model_spec import compute_cost
from streamfn.core.stages._spend import MOST_TOKENS, SpendCap
from streamfn.ledger import SQLiteStore

MODEL = Model(
    id="fake",
    provider="openai",
    api="openai-chat",
    base_url="",
    price_input=1.0,
    price_output=2.0,
    price_cache_read=0.5,
    price_cache_write=1.25,
)
#: reports no provider makes in good faith
HOSTILE = [
    Usage(input=5, output=-(10**12)),
    Usage(input=-(10**12), output=8),
    Usage(input=5, output=8, cache_read=-(10**9), cache_write=-(10**9)),
]


def _flight_of(usage: Usage, key_id: str) -> Flight:
    flight = Flight(
        id="req_1", route="/v1/chat/completions", model="priced", stream=True,
        arrived=time.time(), started=0.0, key_id=key_id, billed_by=MODEL,
    )  # fmt: skip
    done = Done(usage=usage, cost=compute_cost(MODEL, usage))
    flight.note([Start(), TextDelta(index=0, delta="hi"), done], 0.5)
    flight.close(1.0)
    return flight


@pytest.mark.parametrize("usage", HOSTILE)
def test_a_negative_report_gives_no_budget_back(tmp_path: Path, usage: Usage) -> None:
    store = SQLiteStore(tmp_path / "usage.db")
    key, _ = store.create_key("k", now=time.time(), budget=1.0)
    record = usage_record(_flight_of(usage, key.id))
    assert record.cost is not None and record.cost >= 0
    assert min(record.input_tokens, record.output_tokens, record.cached_tokens) >= 0
    store.settle(None, record)
    assert store.spent(key.id, now=time.time()) >= 0
    store.close()


def test_a_report_past_any_integer_column_is_kept_on_record(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "usage.db")
    key, _ = store.create_key("k", now=time.time(), budget=1.0)
    record = usage_record(_flight_of(Usage(input=2**64 - 1, output=8), key.id))
    store.settle(None, record)  # an integer past 64 bits: the store refused it, lost
    [kept] = store.records(since=0, until=time.time() + 60, key_id=key.id)
    assert kept.input_tokens == MOST_TOKENS
    assert store.spent(key.id, now=time.time()) >= MOST_TOKENS * MODEL.price_input / 1e6
    store.close()


@pytest.mark.parametrize("usage", HOSTILE)
def test_a_negative_report_gives_max_cost_nothing_back(usage: Usage) -> None:
    cap = SpendCap(1.0)
    context = Context(messages=[UserMessage(content="hi")])
    cap.meter(MODEL, context, Options()).count(
        [TextDelta(index=0, delta="abcd"), Done(usage=usage)]
    )
    assert cap.spent >= 0


@pytest.mark.parametrize("outcome", ["disconnected", "cut"])
def test_a_reasoning_answer_ended_unreported_is_charged_its_reservation(outcome: str) -> None:
    """A reasoning model bills the tokens it thought before its first visible word;
    a client that ends the stream there (or a cap that cuts it) leaves no usage report,
    and the streamed text counts none of them: the record holds the reservation."""
    thinker = msgspec.structs.replace(MODEL, reasoning=True)
    flight = Flight(
        id="req_1", route="/v1/chat/completions", model="priced", stream=True,
        arrived=time.time(), started=0.0, key_id="key_1", billed_by=thinker,
        lease="l1", reserved=0.25, prompt_estimate=5,
    )  # fmt: skip
    queued = dataclasses.replace(flight, dispatched=True)
    queued.close(1.0, outcome)  # gone before its upstream answered: nothing reasoned
    assert usage_record(queued).cost == compute_cost(MODEL, Usage(input=5)).total
    flight.note([Start(provider="openai"), TextDelta(index=0, delta="The")], 0.5)
    flight.close(1.0, outcome)
    record = usage_record(flight)
    assert record.outcome == outcome and record.cost == 0.25
    plain = dataclasses.replace(flight, billed_by=MODEL)  # its text is its output
    estimated = compute_cost(MODEL, Usage(input=5, output=1)).total
    assert usage_record(plain).cost == pytest.approx(estimated)
