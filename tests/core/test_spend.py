"""`Meter`: what one request of a capped call costs, in the meter's own figures.

A $1-a-token input, $2-a-token output model ("hi" is an estimated 5 input tokens);
the reported usage, where there is one, is priced by `compute_cost` like `Done.cost`.
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfn.core import (
    CachePoint,
    Context,
    Done,
    Error,
    Model,
    Options,
    PriceTier,
    Start,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)
from streamfn.core.catalogue._models import compute_cost
from streamfn.core.stages._spend import Meter, SpendCap, dollars, priced

MODEL = Model(
    id="m",
    provider="openai",
    api="openai-chat",
    base_url="http://h.test",
    price_input=1_000_000,
    price_output=2_000_000,
)
HI = Context.of("hi")


def meter(
    cap: float = 100.0, model: Model = MODEL, options: Options | None = None
) -> tuple[SpendCap, Meter]:
    spend = SpendCap(cap)
    return spend, spend.meter(model, HI, options or Options())


def test_every_kind_of_delta_counts_as_output() -> None:
    _, m = meter()
    events = [
        Start(),
        TextDelta(0, "abcd"),
        ThinkingDelta(1, "abcdefgh"),
        ToolCallDelta(2, '{"a":1}'),  # 7 characters: 2 tokens
        TextDelta(0, ""),
    ]
    assert m.count(events) == (events, None)
    assert m.usage() == Usage(input=5, output=5)
    assert m.estimate() == 5 + 2 * 5


def test_a_finished_answer_is_settled_with_the_usage_the_provider_reported() -> None:
    spend, m = meter()
    m.answer(200)
    reported = Usage(input=100, output=1, cache_read=1000)
    m.count([Start(), TextDelta(0, "abcdefgh" * 10), Done(usage=reported)])
    assert spend.spent == compute_cost(MODEL, reported).total  # not the estimate
    m.count([Done(usage=Usage(input=1))])
    assert spend.spent == compute_cost(MODEL, reported).total  # settled once


def test_an_answer_without_usage_is_settled_with_the_estimate() -> None:
    spend, m = meter()
    m.answer(200)
    m.count([Start(), TextDelta(0, "abcd"), Done()])
    assert spend.spent == 5 + 2


def test_a_cut_request_counts_the_larger_of_its_report_and_the_estimate() -> None:
    spend, m = meter()
    m.answer(200)
    m.count(
        [Start(), TextDelta(0, "abcd" * 3), Error.network("cut", usage=Usage(input=5, output=1))]
    )
    assert spend.spent == 5 + 2 * 3


@pytest.mark.parametrize(("status", "spent"), [(500, 0.0), (429, 0.0), (None, 0.0), (200, 5.0)])
def test_a_failure_before_output_costs_the_input_only_if_the_provider_took_it(
    status: int | None, spent: float
) -> None:
    spend, m = meter()
    m.answer(status)
    m.count([Start(), Error.network("x")])
    assert spend.spent == spent


def test_a_prompt_that_asks_for_caching_is_priced_as_cache_writes_where_dearer() -> None:
    writes = msgspec.structs.replace(MODEL, price_cache_write=1_250_000)
    for cache in ("auto", [CachePoint(at="system")]):
        _, m = meter(model=writes, options=Options(cache=cache))
        assert m.usage() == Usage(cache_write=5) and m.estimate() == 6.25
    _, m = meter(model=writes, options=Options(cache="off"))
    assert m.estimate() == 5.0
    _, m = meter(options=Options(cache="auto"))  # no write surcharge: plain input
    assert m.estimate() == 5.0


def test_a_long_prompt_tier_prices_the_whole_request() -> None:
    tiered = msgspec.structs.replace(
        MODEL, price_tiers=(PriceTier(above=4, input=3_000_000, output=4_000_000),)
    )
    _, m = meter(model=tiered)
    m.count([TextDelta(0, "abcd")])
    assert m.estimate() == 5 * 3 + 4


def test_the_refusal_counts_what_the_call_spent_before() -> None:
    spend, m = meter(cap=9.0)
    assert m.refusal() is None
    spend.spent = 4.5
    refused = m.refusal()
    assert refused is not None and "on top of $4.5 already spent" in refused.message


def test_only_a_model_with_prices_can_be_capped() -> None:
    assert priced(MODEL)
    assert priced(msgspec.structs.replace(MODEL, price_input=0.0))  # output priced
    assert not priced(msgspec.structs.replace(MODEL, price_input=0.0, price_output=0.0))
    assert priced(Model(id="l", provider="local", api="local", base_url=""))  # free


@pytest.mark.parametrize(
    ("amount", "text"), [(2.0, "$2"), (10.5, "$10.5"), (0.000125, "$0.000125"), (0.0, "$0")]
)
def test_amounts_read_as_dollars(amount: float, text: str) -> None:
    assert dollars(amount) == text


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf"), True, "5"])
def test_a_cap_is_a_finite_number_of_dollars(bad: object) -> None:
    with pytest.raises(ValueError, match=r"max_cost=.*US dollars"):
        Options(max_cost=bad)  # type: ignore[arg-type]
    assert Options(max_cost=0).max_cost == 0


@settings(max_examples=300, deadline=None)
@given(
    prices=st.tuples(*(st.sampled_from([0.075, 0.15, 1.25, 3.0, 15.0, 75.0]),) * 3),
    tiered=st.booleans(),
    cached=st.booleans(),
    words=st.integers(1, 400),
    outputs=st.lists(st.integers(1, 40), max_size=60),
)
def test_the_meters_running_sum_is_its_estimate_exactly(
    prices: tuple[float, float, float],
    tiered: bool,
    cached: bool,
    words: int,
    outputs: list[int],
) -> None:
    """Per delta the meter adds up the cost without building a Usage; the cut must
    fall where `compute_cost` would put it, to the last bit."""
    model = Model(
        id="m",
        provider="p",
        api="openai-chat",
        base_url="http://127.0.0.1:9",
        price_input=prices[0],
        price_output=prices[1],
        price_cache_write=prices[2],
        price_tiers=[PriceTier(above=50, input=6.0, output=22.5)] if tiered else [],
    )
    meter = SpendCap(1.0).meter(
        model, Context.of("word " * words), Options(cache="auto" if cached else None)
    )
    for chars in outputs:
        meter.count([TextDelta(0, "x" * chars)])
        assert meter._fixed + meter._output * meter._rate * 1e-6 == meter.estimate()
