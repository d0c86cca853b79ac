"""Local model overhead: our event streams against a raw CTranslate2 token loop.

Same model object, prompt and settings (greedy, int8, one intra thread); the
runs interleave (raw, trio, asyncio, sync, raw, ...) so CPU contention from
other processes hits every contender alike; medians over ``--repeat`` rounds.

    .venv/bin/python bench/bench_local.py [--model-dir DIR] [--repeat 7] [--max-tokens 128]

Time to first token is measured to the first generated token (raw) and to the
first content delta (ours); tokens/s is generated tokens over the whole call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import trio

from streamfn.core._events import Done, Event, TextDelta, ThinkingDelta, ToolCallDelta
from streamfn.core._messages import Context
from streamfn.core._options import Options
from streamfn.io_asyncio._local import stream_local as asyncio_stream_local
from streamfn.io_trio._local import stream_local as trio_stream_local
from streamfn.local._model import LocalModel

PROMPT = Context.of("Write a short story about a robot who learns to paint.")
Result = tuple[float, float]  # (time to first token, tokens per second)
_CONTENT = (TextDelta, ThinkingDelta, ToolCallDelta)


def raw(model: LocalModel, options: Options) -> Result:
    tokens = model._tokenizer.encode(model.render_prompt(PROMPT), add_special_tokens=False).tokens
    begin = time.perf_counter()
    first = 0.0
    count = 0
    for _step in model._generator.generate_tokens(
        tokens,
        max_length=options.max_tokens,
        sampling_topk=1,
        end_token=model._end_tokens,
    ):
        count += 1
        if count == 1:
            first = time.perf_counter() - begin
    return first, count / (time.perf_counter() - begin)


class _Clock:
    def __init__(self) -> None:
        self.begin = time.perf_counter()
        self.first = 0.0
        self.tokens = 0

    def see(self, event: Event) -> None:
        if not self.first and isinstance(event, _CONTENT):
            self.first = time.perf_counter() - self.begin
        if isinstance(event, Done):
            self.tokens = event.usage.output

    def result(self) -> Result:
        return self.first, self.tokens / (time.perf_counter() - self.begin)


def ours_sync(model: LocalModel, options: Options) -> Result:
    clock = _Clock()
    for event in model.stream_sync(PROMPT, options):
        clock.see(event)
    return clock.result()


def ours_trio(model: LocalModel, options: Options) -> Result:
    async def run() -> Result:
        clock = _Clock()
        async with trio_stream_local(model, PROMPT, options) as events:
            async for event in events:
                clock.see(event)
        return clock.result()

    return trio.run(run)


def ours_asyncio(model: LocalModel, options: Options) -> Result:
    async def run() -> Result:
        clock = _Clock()
        async with asyncio_stream_local(model, PROMPT, options) as events:
            async for event in events:
                clock.see(event)
        return clock.result()

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    model = LocalModel(args.model_dir) if args.model_dir else LocalModel.default()
    options = Options(max_tokens=args.max_tokens)
    contenders: dict[str, Callable[[LocalModel, Options], Result]] = {
        "raw ctranslate2": raw,
        "streamfn trio": ours_trio,
        "streamfn asyncio": ours_asyncio,
        "streamfn sync": ours_sync,
    }
    results: dict[str, list[Result]] = {name: [] for name in contenders}
    for fn in contenders.values():  # warm-up
        fn(model, options)
    for _ in range(args.repeat):
        for name, fn in contenders.items():
            results[name].append(fn(model, options))
    base_ttft = statistics.median(r[0] for r in results["raw ctranslate2"])
    base_tps = statistics.median(r[1] for r in results["raw ctranslate2"])
    print(f"{model.info.id}, {args.max_tokens} tokens max, median of {args.repeat}")
    print(f"{'':18} {'ttft ms':>8} {'tok/s':>7} {'ttft +ms':>9} {'tok/s %':>8}")
    for name, runs in results.items():
        ttft = statistics.median(r[0] for r in runs)
        tps = statistics.median(r[1] for r in runs)
        print(
            f"{name:18} {ttft * 1000:8.1f} {tps:7.1f} {(ttft - base_ttft) * 1000:+9.1f}"
            f" {(tps / base_tps - 1) * 100:+7.1f}%"
        )
    model.close()


if __name__ == "__main__":
    main()
