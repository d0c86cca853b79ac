"""OpenAI chat stream, bytes to events: streamfn against the openai SDK and a floor.

Run: ``.venv/bin/python bench/bench_openai.py [--events 20000] [--repeats 5]``

Every contender decodes the same synthetic 20,000-delta body (`bench.streams`,
about 6.7 MB), fed in the same chunks, and must produce the same answer text;
a check compares them before any time is reported. Times are the best of N
repeats (the machine is shared; the minimum is the least disturbed run) and are
printed as ratios against the reference.

Contenders:

- ``reference``: a bytearray, ``find(b"\\n\\n")``, ``data:`` payloads decoded by
  msgspec into three-field structs, one `TextDelta` per content delta. No SSE spec
  work, no error handling, no tool calls: the floor for "framing + msgspec".
- ``streamfn``: `open_call` + ``receive_data`` per chunk; the full provider state
  machine (WHATWG SSE, bounded buffers, tool calls, usage, errors) to events.
- ``streamfn+fold``: the same, every event folded by `Accumulator` into the live
  message (the final `AssistantMessage` at the end).
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
from bench.streams import chunks_fixed, chunks_random, openai_chat_stream
from streamfn.core import Context, Model, Options, TextDelta, open_call

MODEL = Model(id="gpt-4o-mini", provider="openai", api="openai-chat", base_url="http://bench")
SSE = [("content-type", "text/event-stream")]

# -- reference: framing + msgspec, nothing else --------------------------------


class _RefDelta(msgspec.Struct):
    content: str | None = None


class _RefChoice(msgspec.Struct):
    delta: _RefDelta


class _RefChunk(msgspec.Struct):
    choices: list[_RefChoice]


def run_reference(chunks: Sequence[bytes]) -> str:
    decode = msgspec.json.Decoder(_RefChunk).decode
    buffer = bytearray()
    events: list[TextDelta] = []
    for chunk in chunks:
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n\n", start)) >= 0:
            line = bytes(buffer[start:end])
            start = end + 2
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                for choice in decode(line[6:]).choices:
                    if choice.delta.content:
                        events.append(TextDelta(0, choice.delta.content))
        del buffer[:start]
    return "".join(e.delta for e in events)


# -- streamfn ---------------------------------------------------------------------


def run_streamfn(chunks: Sequence[bytes]) -> str:
    call = open_call(MODEL, Context(), Options(api_key="bench"))
    events = call.receive_response(200, SSE)
    for chunk in chunks:
        events += call.receive_data(chunk)
    events += call.receive_eof()
    return "".join(e.delta for e in events if type(e) is TextDelta)


def run_streamfn_fold(chunks: Sequence[bytes]) -> str:
    call = open_call(MODEL, Context(), Options(api_key="bench"))
    return fold_call(call, SSE, chunks).text


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


def run_sdk_stream(chunks: Sequence[bytes]) -> str:
    parts = []
    for chunk in _sdk_chunks(chunks):
        for choice in chunk.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
    return "".join(parts)


def run_sdk_state(chunks: Sequence[bytes]) -> str:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state: Any = ChatCompletionStreamState()
    for chunk in _sdk_chunks(chunks):
        state.handle_chunk(chunk)
    return str(state.get_final_completion().choices[0].message.content)


CONTENDERS: dict[str, Callable[[Sequence[bytes]], str]] = {
    "reference": run_reference,
    "streamfn": run_streamfn,
    "streamfn+fold": run_streamfn_fold,
    "sdk-stream": run_sdk_stream,
    "sdk-stream+state": run_sdk_state,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--sdk-repeats", type=int, default=2, help="the SDK is slow")
    args = parser.parse_args()

    body = openai_chat_stream(args.events)
    chunkings = {
        "random 1-4096 B": chunks_random(body, 1, 4096, seed=1),
        "fixed 16 KiB": chunks_fixed(body, 16 << 10),
    }
    print(
        f"{args.events} deltas, {len(body) / 1e6:.1f} MB; best of {args.repeats} (SDK: "
        f"{args.sdk_repeats}); python {sys.version.split()[0]}"
    )
    for label, chunks in chunkings.items():
        answers = {name: fn(chunks) for name, fn in CONTENDERS.items()}
        if len(set(answers.values())) != 1:
            raise SystemExit(f"contenders disagree on the answer text ({label})")
        fast = {k: v for k, v in CONTENDERS.items() if not k.startswith("sdk")}
        sdk = {k: v for k, v in CONTENDERS.items() if k.startswith("sdk")}
        times = best_times({k: partial(fn, chunks) for k, fn in fast.items()}, args.repeats)
        times |= best_times({k: partial(fn, chunks) for k, fn in sdk.items()}, args.sdk_repeats)
        ref = times["reference"]
        print(f"\n{label} ({len(chunks)} chunks)")
        print(f"  {'contender':<18} {'seconds':>8} {'x reference':>12} {'events/s':>11}")
        for name, seconds in times.items():
            print(
                f"  {name:<18} {seconds:>8.3f} {seconds / ref:>12.2f} "
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
