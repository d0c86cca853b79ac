"""Shell throughput against the clients people would use instead, over loopback.

A loopback server (tests/fake_provider.py, real sockets) sends a 20,000-event
OpenAI Chat Completions stream (`bench/streams.py`). Each client reads it to
the end; we report events/s, time to first event, and ratios to the openai
SDK (``stream=True``) and to httpx + httpx-sse. Then 1,000 concurrent
streams in one process through the asyncio shell, with peak RSS per stream.

    .venv/bin/python bench/bench_shells.py [--events 20000] [--concurrent 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]

import trio  # noqa: E402
from fake_provider import FakeProvider  # noqa: E402
from streams import openai_chat_stream  # noqa: E402

from streamfn.core import Context, Done, Model, Options  # noqa: E402
from streamfn.io_asyncio import Client as AsyncioClient  # noqa: E402
from streamfn.io_sync import Client as SyncClient  # noqa: E402
from streamfn.io_trio import Client as TrioClient  # noqa: E402

KEY = "sk-bench"
OPTS = Options(api_key=KEY, idle_timeout=30.0, max_attempts=1)


def model(url: str) -> Model:
    return Model(id="bench", provider="openai", api="openai-chat", base_url=url)


async def _ours(
    client: TrioClient | AsyncioClient, url: str, clock: Callable[[], float]
) -> tuple[int, float]:
    start = clock()
    first = 0.0
    n = 0
    async with client.stream(model(url), Context.of("hi"), OPTS) as events:
        async for event in events:
            if n == 0:
                first = clock() - start
            n += 1
            last = event
    assert isinstance(last, Done), last
    return n, first


def run_trio(url: str) -> tuple[int, float]:
    async def main() -> tuple[int, float]:
        async with TrioClient(environ={}) as client:
            return await _ours(client, url, time.perf_counter)

    return trio.run(main)


def run_asyncio(url: str) -> tuple[int, float]:
    async def main() -> tuple[int, float]:
        async with AsyncioClient(environ={}) as client:
            return await _ours(client, url, time.perf_counter)

    return asyncio.run(main())


def run_sync(url: str) -> tuple[int, float]:
    with SyncClient(environ={}) as client:
        start = time.perf_counter()
        first, n = 0.0, 0
        with client.stream(model(url), Context.of("hi"), OPTS) as events:
            for event in events:
                if n == 0:
                    first = time.perf_counter() - start
                n += 1
                last = event
    assert isinstance(last, Done), last
    return n, first


def run_openai_sdk(url: str) -> tuple[int, float]:
    import openai

    async def main() -> tuple[int, float]:
        client = openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)
        start = time.perf_counter()
        first, n = 0.0, 0
        stream = await client.chat.completions.create(
            model="bench", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async for _chunk in stream:
            if n == 0:
                first = time.perf_counter() - start
            n += 1
        await client.close()
        return n, first

    return asyncio.run(main())


def run_httpx_sse(url: str) -> tuple[int, float]:
    import httpx
    from httpx_sse import aconnect_sse

    async def main() -> tuple[int, float]:
        body = {"model": "bench", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        async with httpx.AsyncClient(timeout=30) as client:
            start = time.perf_counter()
            first, n = 0.0, 0
            async with aconnect_sse(client, "POST", url + "/chat/completions", json=body) as source:
                async for sse in source.aiter_sse():
                    if sse.data != "[DONE]":
                        json.loads(sse.data)  # a user must parse each chunk too
                    if n == 0:
                        first = time.perf_counter() - start
                    n += 1
        return n, first

    return asyncio.run(main())


def measure(
    name: str, fn: Callable[[str], tuple[int, float]], url: str, repeat: int
) -> dict[str, float]:
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        n, first = fn(url)
        elapsed = time.perf_counter() - t0
        if best is None or elapsed < best["seconds"]:
            best = {"events": n, "seconds": elapsed, "rate": n / elapsed, "ttfe_ms": first * 1000}
    assert best is not None
    print(
        f"{name:<22} {best['events']:>7.0f} events  {best['rate']:>10,.0f} events/s  first event {best['ttfe_ms']:6.2f} ms"
    )
    return best


def concurrent(server: FakeProvider, count: int) -> None:
    url = server.base_url("ok-length", "small")

    async def main() -> tuple[float, int]:
        async with AsyncioClient(environ={}, max_idle_per_host=0) as client:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            t0 = time.perf_counter()

            async def one() -> int:
                n = 0
                async with client.stream(model(url), Context.of("hi"), OPTS) as events:
                    async for _ in events:
                        n += 1
                return n

            counts = await asyncio.gather(*(one() for _ in range(count)))
            elapsed = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return elapsed, sum(counts), (after - before)

    elapsed, events, grown_kib = asyncio.run(main())  # type: ignore[misc]
    print(
        f"{count} concurrent streams (asyncio shell): {events:,} events in {elapsed:.2f} s, "
        f"peak RSS growth {grown_kib / 1024:.1f} MiB = {grown_kib / count:.1f} KiB per stream"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=1_000)
    args = parser.parse_args()
    with FakeProvider() as server:
        server.register_body("bench", openai_chat_stream(args.events))
        server.register_body("small", openai_chat_stream(200, seed=1))
        url = server.base_url("ok-length", "bench")
        results = {
            "streamfn trio": measure("streamfn trio", run_trio, url, args.repeat),
            "streamfn asyncio": measure("streamfn asyncio", run_asyncio, url, args.repeat),
            "streamfn sync": measure("streamfn sync", run_sync, url, args.repeat),
            "openai SDK": measure("openai SDK stream=True", run_openai_sdk, url, args.repeat),
            "httpx + httpx-sse": measure("httpx + httpx-sse", run_httpx_sse, url, args.repeat),
        }
        for ours in ("streamfn trio", "streamfn asyncio", "streamfn sync"):
            for peer in ("openai SDK", "httpx + httpx-sse"):
                ratio = results[ours]["rate"] / results[peer]["rate"]
                print(f"{ours} / {peer}: {ratio:.1f}x events/s")
        if args.concurrent:
            concurrent(server, args.concurrent)


if __name__ == "__main__":
    main()
