"""Local model under concurrent clients: aggregate tokens/s and time to first token.

N clients start together on one `LocalModel` (asyncio flavour, as `streamfn
serve` uses it), each streaming a greedy answer of up to ``--max-tokens``
tokens to one of a few story prompts. Aggregate tokens/s is all generated
tokens over the wall time of the round; time to first token is per client, to
its first content delta, p50/p95 over every client of every round. Rounds
interleave client counts and configurations, so load from other processes
hits each alike; medians over ``--repeat`` rounds.

Configurations compared (each its own model instance):

- ``batched``: the default, batched generation on one lane per core;
- ``one-lane``: batched generation on a single lane (one core);
- ``unbatched``: one stream per lane, lanes = cores (CTranslate2
  ``inter_threads`` alone, no batching).

    .venv/bin/python bench/bench_local_concurrency.py [--model-dir DIR]
        [--clients 1,4,8,16] [--max-tokens 128] [--repeat 3] [--configs batched,one-lane,unbatched]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from streamfn.core._events import Done, TextDelta, ThinkingDelta, ToolCallDelta
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.io_asyncio._local import stream_local as asyncio_stream_local
from streamfn.local._fetch import prepare_default_model
from streamfn.local._model import LocalModel

PROMPTS = [
    Context.of("Write a short story about a robot who learns to paint."),
    Context.of("Write a short story about a cat who learns to sail."),
    Context.of("Write a short story about a girl who builds a kite."),
    Context.of("Write a short story about an old man and a lighthouse."),
]
_CONTENT = (TextDelta, ThinkingDelta, ToolCallDelta)
CONFIGS: dict[str, dict[str, Any]] = {
    "batched": {},
    "one-lane": {"parallel_batches": 1},
    "unbatched": {"max_batch_size": 1},
}


async def client(model: LocalModel, context: Context, options: Options) -> tuple[float, int]:
    begin = time.perf_counter()
    first = 0.0
    tokens = 0
    async with asyncio_stream_local(model, context, options) as events:
        async for event in events:
            if not first and isinstance(event, _CONTENT):
                first = time.perf_counter() - begin
            if isinstance(event, Done):
                tokens = event.usage.output
    return first, tokens


async def round_of(model: LocalModel, clients: int, options: Options) -> tuple[float, list[float]]:
    """(aggregate tokens/s, time to first token of each client)"""
    begin = time.perf_counter()
    results = await asyncio.gather(
        *(client(model, PROMPTS[i % len(PROMPTS)], options) for i in range(clients))
    )
    wall = time.perf_counter() - begin
    return sum(tokens for _, tokens in results) / wall, [first for first, _ in results]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--clients", default="1,4,8,16")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args()
    path = args.model_dir or prepare_default_model()
    counts = [int(n) for n in args.clients.split(",")]
    names = args.configs.split(",")
    models = {name: LocalModel(path, **CONFIGS[name]) for name in names}
    options = Options(max_tokens=args.max_tokens)
    rates: dict[tuple[str, int], list[float]] = {(m, n): [] for m in names for n in counts}
    firsts: dict[tuple[str, int], list[float]] = {(m, n): [] for m in names for n in counts}
    for model in models.values():  # warm-up
        asyncio.run(round_of(model, 2, Options(max_tokens=8)))
    for _ in range(args.repeat):
        for n in counts:
            for name, model in models.items():
                rate, ttfts = asyncio.run(round_of(model, n, options))
                print(f"  {name} x{n}: {rate:.1f} tok/s", file=sys.stderr, flush=True)
                rates[name, n].append(rate)
                firsts[name, n].extend(ttfts)
    load = os.getloadavg()[0]
    print(
        f"{next(iter(models.values())).info.id}, greedy, {args.max_tokens} tokens per client, "
        f"{os.cpu_count()} cores, median of {args.repeat} rounds, load average {load:.1f}"
    )
    print(f"{'config':10} {'clients':>7} {'tok/s':>7} {'vs 1':>6} {'ttft p50':>9} {'ttft p95':>9}")
    for name in names:
        base = statistics.median(rates[name, counts[0]])
        for n in counts:
            rate = statistics.median(rates[name, n])
            print(
                f"{name:10} {n:7} {rate:7.1f} {rate / base:5.2f}x"
                f" {percentile(firsts[name, n], 0.5) * 1000:7.0f}ms"
                f" {percentile(firsts[name, n], 0.95) * 1000:7.0f}ms"
            )
    for model in models.values():
        model.close()


if __name__ == "__main__":
    main()
