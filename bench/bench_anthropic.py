"""Anthropic Messages, bytes -> events (-> final message): streamfn against the SDK and the floor.

Run: ``.venv/bin/python bench/bench_anthropic.py [--events N] [--repeats N]``

Every contender reads the same synthetic ``stream: true`` bodies (`bench.streams`: one
text block, and thinking + text + two parallel tool calls), fed in the same chunks,
and must give the same answer (text, thinking, each call's arguments as JSON values)
before any time is printed. All run interleaved round-robin, best of the same N,
printed as ratios to the floor.

Contenders:
- ``floor``: msgspec on the pre-split ``data:`` payloads into minimal structs (`bench.fair`).
- ``split``: a per-chunk ``split(b"\\n")`` streaming reference (`bench.fair`).
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
import json
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_decode import best_times, fold_call
from bench.fair import Answer, answer_of_events, answer_of_message, floor, payloads, split
from bench.streams import anthropic_rich_stream, anthropic_stream, chunks_fixed, chunks_random
from streamfn.core import Context, Model, Options
from streamfn.core.dialects.anthropic import open_call

MODEL = Model(
    id="claude-sonnet-4-5",
    provider="anthropic",
    api="anthropic",
    base_url="https://api.anthropic.com",
    price_input=3,
    price_output=15,
)
HEADERS = [("content-type", "text/event-stream; charset=utf-8")]


def run_streamfn_events(chunks: Sequence[bytes]) -> Answer:
    call = open_call(MODEL, Context(), Options(api_key="bench"))
    events = call.receive_response(200, HEADERS)
    for chunk in chunks:
        events += call.receive_data(chunk)
    events += call.receive_eof()
    return answer_of_events(events)


def run_streamfn_fold(chunks: Sequence[bytes]) -> Answer:
    call = open_call(MODEL, Context(), Options(api_key="bench"))
    return answer_of_message(fold_call(call, HEADERS, chunks))


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


def run_sdk_stream(chunks: Sequence[bytes]) -> Answer:
    text: list[str] = []
    thinking: list[str] = []
    tools: dict[int, list[str]] = {}
    for event in _sdk_stream(chunks):
        if event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                text.append(delta.text)
            elif delta.type == "thinking_delta":
                thinking.append(delta.thinking)
            elif delta.type == "input_json_delta":
                tools.setdefault(event.index, []).append(delta.partial_json)
    return "".join(text), "".join(thinking), tuple("".join(tools[k]) for k in sorted(tools))


def run_sdk_message_stream(chunks: Sequence[bytes]) -> Answer:
    import anthropic
    from anthropic.lib.streaming import MessageStream

    stream = MessageStream(_sdk_stream(chunks), anthropic.NOT_GIVEN)
    for _ in stream:
        pass
    message = stream.get_final_message()
    text = "".join(b.text for b in message.content if b.type == "text")
    thinking = "".join(b.thinking for b in message.content if b.type == "thinking")
    tools = tuple(json.dumps(b.input) for b in message.content if b.type == "tool_use")
    return text, thinking, tools


def _same(answer: Answer) -> Answer:
    """Tool arguments as JSON values (the SDK's message holds them parsed)."""
    text, thinking, tools = answer
    return text, thinking, tuple(json.dumps(json.loads(t), sort_keys=True) for t in tools)


def contenders(body: bytes, chunks: list[bytes]) -> dict[str, Callable[[], Answer]]:
    return {
        "floor": partial(floor, payloads(body), "anthropic"),
        "split": partial(split, chunks, "anthropic"),
        "streamfn events": partial(run_streamfn_events, chunks),
        "streamfn + fold": partial(run_streamfn_fold, chunks),
        "sdk Stream": partial(run_sdk_stream, chunks),
        "sdk MessageStream": partial(run_sdk_message_stream, chunks),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    names = list(contenders(b"", []))
    print(
        f"## Anthropic streams, {args.events:,} deltas, best of {args.repeats} interleaved; "
        "time ratio vs the floor (lower is better)"
    )
    print()
    header = f"| stream | chunks | {' | '.join(names)} | streamfn events MB/s |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for shape, make in {
        "text": anthropic_stream,
        "thinking+text+tools": anthropic_rich_stream,
    }.items():
        body = make(args.events)
        for label, chunks in {
            "rand 1..4096": chunks_random(body, 1, 4096, seed=1),
            "16 KiB": chunks_fixed(body, 16 << 10),
        }.items():
            fns = contenders(body, chunks)
            seen = {name: _same(run()) for name, run in fns.items()}
            if len(set(seen.values())) != 1:
                bad = [n for n, a in seen.items() if a != seen["floor"]]
                raise SystemExit(f"{shape}, {label}: {bad} disagree with the floor")
            times = best_times(fns, args.repeats)
            cells = " | ".join(f"{times[name] / times['floor']:.2f}x" for name in names)
            mbps = len(body) / times["streamfn events"] / 1e6
            print(f"| {shape} | {label} | {cells} | {mbps:.0f} |", flush=True)


if __name__ == "__main__":
    main()
