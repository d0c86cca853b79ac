"""The fuzz targets' time budget: FUZZ_SECONDS is honoured within seconds, not rounds."""

from __future__ import annotations

import pytest

from streamfn.fuzz import _harness as harness


class FakeClock:
    """Each example costs ``per_example`` seconds of fake time."""

    def __init__(self, per_example: float) -> None:
        self.now = 0.0
        self.per_example = per_example
        self.batches: list[int] = []

    def __call__(self) -> float:
        return self.now

    def round(self, examples: int) -> None:
        self.batches.append(examples)
        self.now += examples * self.per_example


@pytest.mark.parametrize("per_example", [0.0001, 0.01, 0.5, 3.0])
def test_a_time_budget_ends_within_a_slice_of_it(per_example: float) -> None:
    clock = FakeClock(per_example)
    total = harness.run_rounds("t", clock.round, examples=100_000, seconds=120.0, clock=clock)
    assert total == sum(clock.batches)
    # a whole 100,000-example round would take 10 s .. 300,000 s of fake time
    assert 120.0 <= clock.now <= 120.0 + harness.SLICE_SECONDS + 10 * per_example
    assert max(clock.batches) <= 100_000


def test_without_a_budget_one_round_of_all_examples() -> None:
    clock = FakeClock(0.01)
    assert harness.run_rounds("t", clock.round, examples=500, seconds=0, clock=clock) == 500
    assert clock.batches == [500]
