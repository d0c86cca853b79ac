"""The provider path against the floor: bytes -> typed events (-> folded message).

Run: ``.venv/bin/python bench/bench_providers.py [--events 20000] [--repeats 9]``

For OpenAI Chat and Anthropic Messages, on a text-only stream and on rich ones
(thinking, text, parallel tool calls; `bench.streams.STREAM_SHAPES`), each fed
in seeded random 1..4096-byte chunks, in 16 KiB chunks and one event per
chunk (a live stream: a read per token), every contender
decodes the same bytes and must give the same `bench.fair.Answer` (text,
thinking, each call's arguments) before any time is printed. All contenders
run interleaved round-robin, best of the same N, in this one process; times
are printed as ratios to the floor:

- ``floor``: msgspec on the pre-split ``data:`` payloads into minimal structs;
- ``split``: a per-chunk ``split(b"\\n")`` streaming reference (`bench.fair`);
- ``events``: `open_call` + ``receive_data`` per chunk, the full provider path
  (the list of typed events; reading the answer out of it is not timed);
- ``+fold``: the same events folded by `Accumulator` into the final message;
- ``unframed``: the provider's hot loop (``on_run``) on all the pre-split
  payloads at once, a diagnostic: what ``events`` would cost if finding the
  events in the bytes were free (the bound for a C-level splitter).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_decode import best_times, fold_call
from bench.fair import (
    Answer,
    answer_of_events,
    answer_of_message,
    floor,
    payloads,
    split,
)
from bench.streams import STREAM_SHAPES, chunks_events, chunks_fixed, chunks_random
from streamfn.core import Context, Model, Options, open_call
from streamfn.core._events import Event
from streamfn.core._messages import AssistantMessage

MODELS = {
    "openai": Model(id="gpt-4o-mini", provider="openai", api="openai-chat", base_url="http://b"),
    "anthropic": Model(
        id="claude-sonnet-4-5", provider="anthropic", api="anthropic", base_url="http://b"
    ),
}
HEADERS = [("content-type", "text/event-stream")]
CONTENDERS = ("floor", "split", "events", "+fold", "unframed")


def run_events(provider: str, chunks: Sequence[bytes]) -> list[Event]:
    call = open_call(MODELS[provider], Context(), Options(api_key="bench"))
    events: list[Event] = call.receive_response(200, HEADERS)
    for chunk in chunks:
        events += call.receive_data(chunk)
    events += call.receive_eof()
    return events


def run_unframed(provider: str, datas: Sequence[bytes]) -> list[Event]:
    """The provider path with the framing done beforehand: every event's data
    handed to the provider's hot loop (``on_run``) at once. What ``events``
    would cost if finding the events in the bytes took no time (a bound for a
    C-level splitter)."""
    call = open_call(MODELS[provider], Context(), Options(api_key="bench"))
    events: list[Event] = call.receive_response(200, HEADERS)
    call.on_run(list(datas))  # type: ignore[attr-defined]
    return events + call.receive_eof()  # the events on_run emitted, then the end


def run_fold(provider: str, chunks: Sequence[bytes]) -> AssistantMessage:
    call = open_call(MODELS[provider], Context(), Options(api_key="bench"))
    return fold_call(call, HEADERS, chunks)


def answer(product: object) -> Answer:
    """What a contender produced, reduced to the answer (outside the timed part)."""
    if isinstance(product, AssistantMessage):
        return answer_of_message(product)
    if isinstance(product, list):
        return answer_of_events(product)
    assert isinstance(product, tuple)
    return product


def contenders(provider: str, body: bytes, chunks: list[bytes]) -> dict[str, Callable[[], object]]:
    pre_split = payloads(body)
    return {
        "floor": partial(floor, pre_split, provider),
        "split": partial(split, chunks, provider),
        "events": partial(run_events, provider, chunks),
        "+fold": partial(run_fold, provider, chunks),
        "unframed": partial(run_unframed, provider, payloads(body)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--provider", choices=sorted(STREAM_SHAPES), action="append")
    args = parser.parse_args()
    print(
        f"{args.events:,} deltas per stream, best of {args.repeats} interleaved; "
        f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}; time / floor"
    )
    print()
    print(f"| stream | chunks | {' | '.join(CONTENDERS)} | floor us/delta |")
    print("|---|---|" + "---|" * len(CONTENDERS) + "---|")
    for provider in args.provider or sorted(STREAM_SHAPES, reverse=True):
        for shape, make in STREAM_SHAPES[provider].items():
            body = make(args.events)
            for label, chunks in (
                ("rand 1..4096", chunks_random(body, 1, 4096, seed=1)),
                ("16 KiB", chunks_fixed(body, 16 << 10)),
                ("1 event", chunks_events(body)),
            ):
                fns = contenders(provider, body, chunks)
                answers = {name: answer(fn()) for name, fn in fns.items()}
                if len(set(answers.values())) != 1:
                    bad = [n for n, a in answers.items() if a != answers["floor"]]
                    raise SystemExit(f"{provider}/{shape}/{label}: {bad} disagree with the floor")
                times = best_times(fns, args.repeats)
                cells = " | ".join(f"{times[n] / times['floor']:.2f}" for n in CONTENDERS)
                per = times["floor"] / args.events * 1e6
                print(f"| {provider} {shape} | {label} | {cells} | {per:.2f} |", flush=True)


if __name__ == "__main__":
    main()
