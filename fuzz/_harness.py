"""The driver every fuzz target shares (see fuzz/README.md).

Each target supplies only its checks: a hypothesis round and an atheris
``one_input``. The environment variables and switches live here, so the
targets cannot drift apart in how they are run.

Every target runs from the installed kit (``pip install 'streamfn[fuzz]'``),
with no checkout: the properties and oracles the test suite shares with them
(a literal transcription of the WHATWG SSE parser, the fold's event
strategies, msgspec as the JSON oracle) live in the kit's private modules
(`_wire_oracles`, `_fold_properties`, `_json_properties`), and the suite
imports them from there.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings


def split_by(data: bytes, sizes: list[int]) -> list[bytes]:
    """``data`` in pieces of ``sizes`` (possibly empty), then whatever is left."""
    chunks, pos = [], 0
    for size in sizes:
        chunks.append(data[pos : pos + size])
        pos += size
    return [*chunks, data[pos:]]


def atheris_main(argv: list[str], one_input: Callable[[bytes], None]) -> None:
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    atheris.Setup(argv, one_input)
    atheris.Fuzz()


def run_given(test: Callable[[], None], examples: int, **config: Any) -> None:
    """Run a module-level ``@given`` test for ``examples`` examples.

    Hypothesis accepts one ``@settings`` per function and reads it from the
    test at call time, so a batch size that changes between batches is set
    there (the attribute the decorator itself writes).
    """
    base = getattr(test, "_hypothesis_internal_use_settings", None) or settings.default
    config.setdefault("deadline", None)
    config.setdefault("suppress_health_check", list(HealthCheck))
    test._hypothesis_internal_use_settings = settings(  # type: ignore[attr-defined]
        base, max_examples=examples, **config
    )
    test()


#: how long one batch of examples may take once FUZZ_SECONDS is set: the time
#: budget is checked between batches, so a run ends within about this much of it
SLICE_SECONDS = 2.0


def run_rounds(
    name: str,
    hypothesis_round: Callable[[int], None],
    *,
    examples: int | None = None,
    seconds: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Run ``hypothesis_round(n)`` (n examples per property) and return the examples run.

    Without a time budget (``FUZZ_SECONDS`` unset or 0): one round of
    ``FUZZ_EXAMPLES``. With one: batches sized from the measured speed to
    take about `SLICE_SECONDS` (never more than ``FUZZ_EXAMPLES``), until the
    budget is spent, so "120 s" means 120 s and not "whole rounds past 120 s".
    """
    examples = int(os.environ.get("FUZZ_EXAMPLES", "100000")) if examples is None else examples
    seconds = float(os.environ.get("FUZZ_SECONDS", "0")) if seconds is None else seconds
    if seconds <= 0:
        hypothesis_round(examples)
        print(f"{name}: {examples:,} examples per property passed", flush=True)
        return examples
    deadline = clock() + seconds
    batch, total, batches = min(examples, 10), 0, 0
    while True:
        started = clock()
        hypothesis_round(batch)
        now = clock()
        total += batch
        batches += 1
        left = deadline - now
        if left <= 0:
            break
        per_example = max(now - started, 1e-6) / batch
        batch = max(1, min(examples, int(min(SLICE_SECONDS, left) / per_example)))
    print(
        f"{name}: {total:,} examples per property in {batches} batch(es), {seconds:g} s",
        flush=True,
    )
    return total


def main(
    name: str, hypothesis_round: Callable[[int], None], one_input: Callable[[bytes], None]
) -> None:
    """``--atheris`` hands the rest of argv to libFuzzer; otherwise `run_rounds`."""
    if "--atheris" in sys.argv:
        atheris_main([arg for arg in sys.argv if arg != "--atheris"], one_input)
        return
    run_rounds(name, hypothesis_round)
