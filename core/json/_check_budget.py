"""A budget of steps for work a client's input can make costly, taken in slices.

The schema checks of one answer (`streamfn.core.json._schema_check`) draw on one
`CheckBudget`: every unit of work is a step, the checks stop when the steps run out
(`BudgetSpent`), and the work is a generator that pauses every `PAUSE_EVERY` steps
so an event loop can serve others between slices (`run_through` runs such a
generator without pausing, for a caller with no loop to serve).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any, Final, Generic, TypeVar

__all__ = ["MAX_STEPS", "PAUSE_EVERY", "BudgetSpent", "CheckBudget", "Paced", "run_through"]

T = TypeVar("T")

#: the steps one budget allows unless told: a linear check of a large answer stays far
#: below it, branches that multiply do not (about two seconds of one core)
MAX_STEPS: Final = 1_000_000
#: steps between two pauses (a slice takes well under a millisecond, so an event loop
#: that pauses there stays responsive)
PAUSE_EVERY: Final = 200


class BudgetSpent(Exception):
    """The budget ran out inside a piece of work (its caller says so in its answer)."""


class CheckBudget:
    """The steps left to the work that shares it, and what that work keeps on the way.

    ``steps`` in all (`MAX_STEPS` unless told); ``spent`` counts the steps taken.
    ``memo`` is for what the work builds once per budget (the schema checks keep their
    ``enum`` indexes there, by schema node)."""

    __slots__ = ("left", "memo", "steps")

    def __init__(self, steps: int = MAX_STEPS) -> None:
        self.steps = steps
        self.left = steps
        self.memo: dict[Any, Any] = {}

    @property
    def spent(self) -> int:
        """The steps taken so far (past ``steps`` once the work ran out)."""
        return self.steps - self.left

    def tick(self) -> Generator[None, None, None]:
        """Charge one step; pause at a slice's end; `BudgetSpent` past the budget."""
        self.left -= 1
        if self.left < 0:
            raise BudgetSpent
        if self.left % PAUSE_EVERY == 0:
            yield


class Paced(Generic[T]):
    """A pausing generator as its pauses to iterate (the caller does what it likes at
    each: an event loop gives others a turn), then ``result``, what it returned."""

    __slots__ = ("_steps", "result")

    def __init__(self, steps: Generator[None, None, T]) -> None:
        self._steps = steps
        self.result: T

    def __iter__(self) -> Iterator[None]:
        self.result = yield from self._steps


def run_through(steps: Generator[None, None, T]) -> T:
    """What a pausing generator returns, run without pauses."""
    paced = Paced(steps)
    for _ in paced:
        pass
    return paced.result
