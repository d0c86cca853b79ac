"""Linearity guards that hold on any machine: the same work is timed on an input and
on `FACTOR` times that input, here, on the same machine, and only the ratio is judged.

A linear run takes about `FACTOR` times as long on the larger input and a quadratic
one about ``FACTOR ** 2`` times; `BOUND` sits between them, a factor of about three
from each, so load on the machine (which only lengthens runs, and the best of several
runs is kept) does not fail a linear run, and a quadratic one never passes."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

#: how much larger the second input is
FACTOR = 8
#: the largest ratio of the two times a linear run may show (``FACTOR ** 1.5``)
BOUND = FACTOR**1.5


def _timed(run: Callable[[], object]) -> float:
    gc.collect()
    gc.disable()  # a collection landing in one run but not the other is noise
    try:
        started = time.perf_counter()
        run()
        return time.perf_counter() - started
    finally:
        gc.enable()


def scaling_ratio(prepare: Callable[[int], Callable[[], object]], size: int) -> float:
    """How many times longer the run on ``FACTOR * size`` takes than on ``size``.

    ``prepare(n)`` builds an input of size ``n`` and returns the run to time on it
    (untimed work, such as building the input, belongs in ``prepare``). The smaller
    input is timed five times and the best kept; the larger one until it is under
    `BOUND` times that, three times at most (a quadratic run costs three long runs)."""
    small = min(_timed(prepare(size)) for _ in range(5))
    best = float("inf")
    for _ in range(3):
        best = min(best, _timed(prepare(FACTOR * size)))
        if best < BOUND * small:
            break
    return best / small


def assert_linear(prepare: Callable[[int], Callable[[], object]], size: int) -> None:
    """Fails when ``FACTOR`` times the input takes more than `BOUND` times as long."""
    ratio = scaling_ratio(prepare, size)
    assert ratio < BOUND, (
        f"{FACTOR}x the input took {ratio:.1f}x as long "
        f"(linear: about {FACTOR}x; quadratic: about {FACTOR**2}x)"
    )
