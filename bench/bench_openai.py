"""OpenAI chat stream, bytes to events: streamfn against the openai SDK and the floor.

Run: ``.venv/bin/python bench/bench_openai.py [--events 20000] [--repeats 5]``

Every contender decodes the same synthetic 20,000-delta body (`bench.streams`:
text only, and text + three parallel tool calls), fed in the same chunks, and
must produce the same `bench.fair.Answer` (text and each call's arguments); a
check compares them before any time is reported. All contenders run
interleaved round-robin, best of the same N (the SDK too), and are printed as
ratios to the floor.

Contenders:

- ``floor``: msgspec on the pre-split ``data:`` payloads into minimal structs
  (`bench.fair.floor`): nothing a streaming decoder does can cost less.
- ``split``: a per-chunk ``split(b"\\n")`` streaming reference (`bench.fair.split`).
- ``streamfn``: `open_call` + ``receive_data`` per chunk; the full provider state
  machine (WHATWG SSE, bounded buffers, tool calls, usage, errors) to events.
- ``streamfn+fold``: the same, every event folded by `Accumulator` into the final
  `AssistantMessage`.
- ``sdk-stream``: ``openai.Stream[ChatCompletionChunk]`` over an in-memory
  ``httpx`` response yielding the same chunks: the typed chunks an SDK user gets.
- ``sdk-stream+state``: the same chunks fed to ``ChatCompletionStreamState``, the
  SDK's accumulating helper behind ``client.chat.completions.stream(...)``.

Then the per-event cost of ``streamfn+fold`` at 5k, 20k and 80k deltas, which
must stay flat (the fold is linear).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_decode import best_times, fold_call
from bench.fair import Answer, answer_of_events, answer_of_message, floor, payloads, split
from bench.streams import chunks_fixed, chunks_random, openai_chat_rich_stream, openai_chat_stream
from streamfn.core import Context, Model, Options, open_call

MODEL = Model(id="gpt-4o-mini", provider="openai", api="openai-chat", base_url="http://bench")
SSE = [("content-type", "text/event-stream")]
SHAPES = {"text": openai_chat_stream, "tools": openai_chat_rich_stream}


def run_streamfn(chunks: Sequence[bytes]) -> Answer:
    call = open_call(MODEL, Context(), Options(api_key="bench"))
    events = call.receive_response(200, SSE)
    for chunk in chunks:
        events += call.receive_data(chunk)
    events += call.receive_eof()
    return answer_of_events(events)


def run_streamfn_fold(chunks: Sequence[bytes]) -> Answer:
    call = open_call(MODEL, Context(), Options(api_key="bench"))
    return answer_of_message(fold_call(call, SSE, chunks))


# -- the openai SDK ----------------------------------------------------------------


def _sdk_chunks(chunks: Sequence[bytes]) -> Any:
    import httpx2  # the HTTP client the installed openai package is built on
    import openai
    from openai._streaming import Stream
    from openai.types.chat import ChatCompletionChunk

    client = openai.OpenAI(api_key="bench", base_url="http://127.0.0.1:9/v1")
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx2.Response(200, headers=dict(SSE), content=iter(chunks), request=request)
    return Stream(cast_to=ChatCompletionChunk, response=response, client=client)


def run_sdk_stream(chunks: Sequence[bytes]) -> Answer:
    text: list[str] = []
    tools: dict[int, list[str]] = {}
    for chunk in _sdk_chunks(chunks):
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
            for call in delta.tool_calls or ():
                if call.function is not None and call.function.arguments is not None:
                    tools.setdefault(call.index, []).append(call.function.arguments)
    return "".join(text), "", tuple("".join(tools[k]) for k in sorted(tools))


def run_sdk_state(chunks: Sequence[bytes]) -> Answer:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state: Any = ChatCompletionStreamState()
    for chunk in _sdk_chunks(chunks):
        state.handle_chunk(chunk)
    message = state.get_final_completion().choices[0].message
    calls = tuple(c.function.arguments for c in message.tool_calls or ())
    return message.content or "", "", calls


def contenders(body: bytes, chunks: list[bytes]) -> dict[str, Callable[[], Answer]]:
    return {
        "floor": partial(floor, payloads(body), "openai"),
        "split": partial(split, chunks, "openai"),
        "streamfn": partial(run_streamfn, chunks),
        "streamfn+fold": partial(run_streamfn_fold, chunks),
        "sdk-stream": partial(run_sdk_stream, chunks),
        "sdk-stream+state": partial(run_sdk_state, chunks),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{args.events} deltas; best of {args.repeats} interleaved (all contenders); "
        f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}; time / floor"
    )
    for shape, make in SHAPES.items():
        body = make(args.events)
        for label, chunks in {
            "random 1-4096 B": chunks_random(body, 1, 4096, seed=1),
            "fixed 16 KiB": chunks_fixed(body, 16 << 10),
        }.items():
            fns = contenders(body, chunks)
            answers = {name: fn() for name, fn in fns.items()}
            if len(set(answers.values())) != 1:
                bad = [n for n, a in answers.items() if a != answers["floor"]]
                raise SystemExit(f"{shape}, {label}: {bad} disagree with the floor")
            times = best_times(fns, args.repeats)
            print(f"\n{shape} stream ({len(body) / 1e6:.1f} MB), {label} ({len(chunks)} chunks)")
            print(f"  {'contender':<18} {'seconds':>8} {'x floor':>8} {'events/s':>11}")
            for name, seconds in times.items():
                print(
                    f"  {name:<18} {seconds:>8.3f} {seconds / times['floor']:>8.2f} "
                    f"{args.events / seconds:>11,.0f}"
                )
            print(f"  sdk-stream / streamfn       = {times['sdk-stream'] / times['streamfn']:.1f}x")
            print(
                f"  sdk-stream+state / +fold    = "
                f"{times['sdk-stream+state'] / times['streamfn+fold']:.1f}x"
            )

    print("\nper-event cost of streamfn+fold (random chunks), must stay flat:")
    for n in (5_000, 20_000, 80_000):
        chunks = chunks_random(openai_chat_stream(n), 1, 4096, seed=1)
        seconds = best_times({"fold": partial(run_streamfn_fold, chunks)}, args.repeats)["fold"]
        print(f"  {n:>6} deltas: {seconds / n * 1e6:6.2f} us/event")


if __name__ == "__main__":
    main()
