"""Anthropic Messages, bytes -> events (-> final message): streamfn against the anthropic SDK.

Run: ``.venv/bin/python bench/bench_anthropic.py [--events N] [--repeats N]``

Every contender reads the same synthetic ``stream: true`` body (`bench.streams.anthropic_stream`,
one text block of N deltas), fed in the same chunks, and must see the same text; times are
the best of N interleaved repeats, reported as ratios against the minimal reference.

Contenders:
- ``reference``: ``bench_decode.run_reference``: ``find(b"\\n\\n")`` framing + msgspec into a
  small struct; no SSE spec work, no state machine, no event objects: the floor.
- ``streamfn events``: `AnthropicCall` (``receive_response`` / ``receive_data`` per chunk /
  ``receive_eof``): SSE decoding, the provider state machine, typed events, usage and cost.
- ``streamfn + fold``: the same events folded by `Accumulator` into the final `AssistantMessage`.
- ``sdk Stream``: ``anthropic._streaming.Stream`` over an in-memory ``httpx.Response``: typed
  (pydantic) events, what ``client.messages.create(stream=True)`` yields.
- ``sdk MessageStream``: ``anthropic.lib.streaming.MessageStream`` on that stream: events plus the
  accumulated message, what ``client.messages.stream()`` gives.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_decode import best_times, fold_call, run_reference
from bench.streams import anthropic_stream, chunks_fixed, chunks_random
from streamfn.core import Context, Model, Options, TextDelta
from streamfn.core.providers.anthropic import open_call

MODEL = Model(
    id="claude-sonnet-4-5",
    provider="anthropic",
    api="anthropic",
    base_url="https://api.anthropic.com",
    price_input=3,
    price_output=15,
)
HEADERS = [("content-type", "text/event-stream; charset=utf-8")]


def run_streamfn_events(chunks: Sequence[bytes]) -> int:
    call = open_call(MODEL, Context(), Options(api_key="bench"))
    chars = 0
    call.receive_response(200, HEADERS)  # just Start
    for chunk in chunks:
        for event in call.receive_data(chunk):
            if type(event) is TextDelta:
                chars += len(event.delta)
    call.receive_eof()
    return chars


def run_streamfn_fold(chunks: Sequence[bytes]) -> int:
    call = open_call(MODEL, Context(), Options(api_key="bench"))
    return len(fold_call(call, HEADERS, chunks).text)


def _sdk_stream(chunks: Sequence[bytes]) -> Any:
    import httpx
    from anthropic._streaming import Stream
    from anthropic.types import RawMessageStreamEvent

    response = httpx.Response(200, headers=dict(HEADERS), content=iter(chunks))
    client = _client()
    cast_to: Any = RawMessageStreamEvent
    return Stream(cast_to=cast_to, response=cast(Any, response), client=client)


_CLIENT: list[Any] = []


def _client() -> Any:
    if not _CLIENT:
        import anthropic

        _CLIENT.append(anthropic.Anthropic(api_key="bench"))
    return _CLIENT[0]


def run_sdk_stream(chunks: Sequence[bytes]) -> int:
    chars = 0
    for event in _sdk_stream(chunks):
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            chars += len(event.delta.text)
    return chars


def run_sdk_message_stream(chunks: Sequence[bytes]) -> int:
    import anthropic
    from anthropic.lib.streaming import MessageStream

    stream = MessageStream(_sdk_stream(chunks), anthropic.NOT_GIVEN)
    for _ in stream:
        pass
    message = stream.get_final_message()
    return sum(len(block.text) for block in message.content if block.type == "text")


def _reference_chars(chunks: Sequence[bytes]) -> int:
    return run_reference(chunks, "anthropic")[1]


CONTENDERS: dict[str, Callable[[Sequence[bytes]], int]] = {
    "reference": _reference_chars,
    "streamfn events": run_streamfn_events,
    "streamfn + fold": run_streamfn_fold,
    "sdk Stream": run_sdk_stream,
    "sdk MessageStream": run_sdk_message_stream,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    body = anthropic_stream(args.events)
    print(
        f"## Anthropic stream, {args.events:,} text deltas ({len(body) / 1e6:.1f} MB), "
        f"best of {args.repeats}; time ratio vs reference (lower is better)"
    )
    print()
    header = f"| chunks | {' | '.join(CONTENDERS)} | streamfn events MB/s |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for label, chunks in {
        "64 KiB": chunks_fixed(body, 64 << 10),
        "1500 B": chunks_fixed(body, 1500),
        "rand 1..4096": chunks_random(body, 1, 4096, seed=1),
    }.items():
        seen = {name: run(chunks) for name, run in CONTENDERS.items()}
        if len(set(seen.values())) != 1:
            raise SystemExit(f"contenders disagree on the text for {label}: {seen}")
        times = best_times(
            {name: partial(run, chunks) for name, run in CONTENDERS.items()}, args.repeats
        )
        ref = times["reference"]
        cells = " | ".join(f"{times[name] / ref:.2f}x" for name in CONTENDERS)
        mbps = len(body) / times["streamfn events"] / 1e6
        print(f"| {label} | {cells} | {mbps:.0f} |", flush=True)


if __name__ == "__main__":
    main()
