"""The shells against the clients people would use instead, over loopback.

Run::

    .venv/bin/python bench/bench_shells.py [--events 20000] [--repeat 5] [--first 20]

A fake OpenAI server in its own process (`bench.bench_gateway`'s upstream:
each response written at once, chunked, keep-alive) serves a 20,000-delta
chat stream and a 200-delta one. Every client opens a fresh connection per
request, reads its stream to the end and returns the answer text, which
must be the same for all before anything is printed. Contenders run
interleaved round-robin (``--repeat`` rounds; in each, one big stream per
contender, then ``--first`` turns of one small stream per contender):

- ``streamfn trio`` / ``streamfn asyncio`` / ``streamfn sync``: `Client.stream`, typed events;
- ``openai SDK`` sync and async: ``chat.completions.create(stream=True)``;
- ``httpx + httpx-sse``: ``aconnect_sse`` + ``json.loads`` per event;
- ``aiohttp``: ``ClientSession.post`` + its line iterator + ``json.loads``.

Reported: events/s on the big stream (best round), and time to first event
(the first content delta) on the small one (median over all rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing as mp
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_gateway import _free_port, _serve_upstream, _wait_ready
from bench.streams import openai_chat_stream

KEY = "sk-bench"
#: (events, seconds to the first content delta, answer text)
Result = tuple[int, float, str]


def _body(model: str) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True}


# -- streamfn ------------------------------------------------------------------------


async def _ours(client: object, url: str, model_id: str) -> Result:
    from streamfn.core import Context, Done, Model, Options, TextDelta

    model = Model(id=model_id, provider="openai", api="openai-chat", base_url=url)
    options = Options(api_key=KEY, idle_timeout=30.0, max_attempts=1)
    start = time.perf_counter()
    first, n, parts = 0.0, 0, []
    async with client.stream(model, Context.of("hi"), options) as events:  # type: ignore[attr-defined]
        async for event in events:
            n += 1
            if type(event) is TextDelta:
                if not parts:
                    first = time.perf_counter() - start
                parts.append(event.delta)
            last = event
    assert isinstance(last, Done), last
    return n, first, "".join(parts)


def run_trio(url: str, model: str) -> Result:
    import trio

    from streamfn.io_trio import Client

    async def main() -> Result:
        async with Client(environ={}, max_idle_per_host=0) as client:
            return await _ours(client, url, model)

    return trio.run(main)


def run_asyncio(url: str, model: str) -> Result:
    from streamfn.io_asyncio import Client

    async def main() -> Result:
        async with Client(environ={}, max_idle_per_host=0) as client:
            return await _ours(client, url, model)

    return asyncio.run(main())


def run_sync(url: str, model_id: str) -> Result:
    """The blocking shell (`streamfn.io_sync`): no event loop at all."""
    from streamfn.core import Context, Done, Model, Options, TextDelta
    from streamfn.io_sync import Client

    model = Model(id=model_id, provider="openai", api="openai-chat", base_url=url)
    options = Options(api_key=KEY, idle_timeout=30.0, max_attempts=1)
    start = time.perf_counter()
    first, n, parts = 0.0, 0, []
    client = Client(environ={}, max_idle_per_host=0)
    with client, client.stream(model, Context.of("hi"), options) as events:
        for event in events:
            n += 1
            if type(event) is TextDelta:
                if not parts:
                    first = time.perf_counter() - start
                parts.append(event.delta)
            last = event
    assert isinstance(last, Done), last
    return n, first, "".join(parts)


# -- peers ---------------------------------------------------------------------------


def _chunk_text(chunk: object) -> str:
    choices = getattr(chunk, "choices", None) or []
    return "".join(c.delta.content or "" for c in choices if c.delta is not None)


def run_openai_sync(url: str, model: str) -> Result:
    import openai

    with openai.OpenAI(base_url=url, api_key=KEY, max_retries=0) as client:
        start = time.perf_counter()
        first, n, parts = 0.0, 0, []
        stream = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for chunk in stream:
            n += 1
            text = _chunk_text(chunk)
            if text:
                if not parts:
                    first = time.perf_counter() - start
                parts.append(text)
    return n, first, "".join(parts)


def run_openai_async(url: str, model: str) -> Result:
    import openai

    async def main() -> Result:
        async with openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0) as client:
            start = time.perf_counter()
            first, n, parts = 0.0, 0, []
            stream = await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "hi"}], stream=True
            )
            async for chunk in stream:
                n += 1
                text = _chunk_text(chunk)
                if text:
                    if not parts:
                        first = time.perf_counter() - start
                    parts.append(text)
        return n, first, "".join(parts)

    return asyncio.run(main())


def _dict_text(chunk: dict[str, object]) -> str:
    choices = chunk.get("choices") or []
    assert isinstance(choices, list)
    return "".join((c.get("delta") or {}).get("content") or "" for c in choices)


def run_httpx_sse(url: str, model: str) -> Result:
    import httpx
    from httpx_sse import aconnect_sse

    async def main() -> Result:
        async with httpx.AsyncClient(timeout=30) as client:
            start = time.perf_counter()
            first, n, parts = 0.0, 0, []
            async with aconnect_sse(
                client, "POST", url + "/chat/completions", json=_body(model)
            ) as source:
                async for sse in source.aiter_sse():
                    n += 1
                    if sse.data == "[DONE]":
                        continue
                    text = _dict_text(json.loads(sse.data))
                    if text:
                        if not parts:
                            first = time.perf_counter() - start
                        parts.append(text)
        return n, first, "".join(parts)

    return asyncio.run(main())


def run_aiohttp(url: str, model: str) -> Result:
    import aiohttp

    async def main() -> Result:
        async with aiohttp.ClientSession() as session:
            start = time.perf_counter()
            first, n, parts = 0.0, 0, []
            async with session.post(url + "/chat/completions", json=_body(model)) as response:
                async for line in response.content:
                    if not line.startswith(b"data: "):
                        continue
                    n += 1
                    data = line[6:].rstrip(b"\r\n")
                    if data == b"[DONE]":
                        continue
                    text = _dict_text(json.loads(data))
                    if text:
                        if not parts:
                            first = time.perf_counter() - start
                        parts.append(text)
        return n, first, "".join(parts)

    return asyncio.run(main())


CONTENDERS: dict[str, Callable[[str, str], Result]] = {
    "streamfn trio": run_trio,
    "streamfn asyncio": run_asyncio,
    "streamfn sync": run_sync,
    "openai SDK sync": run_openai_sync,
    "openai SDK async": run_openai_async,
    "httpx + httpx-sse": run_httpx_sse,
    "aiohttp": run_aiohttp,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--first", type=int, default=20, help="small streams per round")
    args = parser.parse_args()

    big, small = openai_chat_stream(args.events, seed=3), openai_chat_stream(200, seed=4)
    port = _free_port()
    server = mp.get_context("spawn").Process(
        target=_serve_upstream,
        args=(port, {b'"big"': big, b'"small"': small}),
        daemon=True,
    )
    server.start()
    try:
        _wait_ready(port, None)
        url = f"http://127.0.0.1:{port}/v1"
        texts = {name: fn(url, "big")[2] for name, fn in CONTENDERS.items()}
        if len(set(texts.values())) != 1:
            raise SystemExit(f"clients disagree on the answer: {sorted(set(texts))[:2]}")
        rate = dict.fromkeys(CONTENDERS, 0.0)
        firsts: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        for _ in range(args.repeat):
            for name, fn in CONTENDERS.items():
                gc.collect()  # no contender pays for the garbage the one before it left
                t0 = time.perf_counter()
                n, _, _ = fn(url, "big")
                rate[name] = max(rate[name], n / (time.perf_counter() - t0))
            for _ in range(args.first):  # one small stream each, in turn: load bursts hit all
                for name, fn in CONTENDERS.items():
                    firsts[name].append(fn(url, "small")[1])
            print(".", end="", flush=True)
        print()
    finally:
        server.terminate()
        server.join()

    import os

    print(
        f"{args.events:,}-delta stream for events/s (best of {args.repeat}), 200-delta "
        f"streams for the first event (median of {args.repeat * args.first}), "
        f"interleaved; load average {os.getloadavg()[0]:.1f}"
    )
    print()
    print("| client | events/s | first event | events/s vs openai SDK async | vs aiohttp |")
    print("|---|---|---|---|---|")
    for name in CONTENDERS:
        first = statistics.median(firsts[name]) * 1e3
        print(
            f"| {name} | {rate[name]:,.0f} | {first:.2f} ms | "
            f"{rate[name] / rate['openai SDK async']:.1f}x | {rate[name] / rate['aiohttp']:.2f}x |"
        )


if __name__ == "__main__":
    main()
