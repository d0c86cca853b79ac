"""Decode throughput: streamfn's SSE decoder against the decoders users would pick instead.

Run: ``.venv/bin/python bench/bench_decode.py [--repeats N] [--events N]``

Every contender turns the same bytes, fed in the same chunks, into the same
decoded JSON objects; a checksum over the decoded text proves they agree.
Times are the best of N interleaved repeats (the machine is shared, the
minimum is the least disturbed run) and are reported as ratios against the
floor: msgspec alone on the payloads split out beforehand.

Contenders:
- ``floor``: msgspec on the pre-split ``data:`` payloads, no framing at all.
- ``split``: one ``split(b"\\n")`` per chunk with the partial line carried over,
  ``data:`` lines only: the tight streaming reference, no spec work, no caps.
- ``streamfn``: `SSEDecoder` (WHATWG-compliant, bounded) + ``msgspec.json`` into structs.
- ``streamfn-runs``: the same decoder the way the providers drive it
  (``bind``: ``feed_to`` with a run sink as one step per read; plain regions
  of events found with a few C-level calls, their data handed over as one
  list per chunk, and a read of exactly one event without a region search).
- ``find-reference``: bytearray + ``find(b"\\n\\n")``, each block copied and split into
  lines (the reference the README used to divide by; not minimal).
- ``openai-sdk``: ``openai._streaming.SSEDecoder.iter_bytes`` + ``json.loads`` (what the
  openai package does per chunk).
- ``httpx-sse``: httpx's incremental UTF-8 text decoding + ``httpx_sse`` line and event
  decoders + ``json.loads`` (what ``EventSource.iter_sse`` does).
"""

from __future__ import annotations

import argparse
import codecs
import gc
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fair import payloads
from bench.streams import (
    anthropic_stream,
    chunks_events,
    chunks_fixed,
    chunks_random,
    openai_chat_stream,
)
from streamfn.core._accumulate import Accumulator
from streamfn.core._call import Call
from streamfn.core._messages import AssistantMessage
from streamfn.core.wire._sse import ServerSentEvent, SSEDecoder

# -- the chunk shapes, decoded the way a provider adapter would ------------------


class OpenAIDelta(msgspec.Struct):
    content: str | None = None
    role: str | None = None


class OpenAIChoice(msgspec.Struct):
    index: int
    delta: OpenAIDelta
    finish_reason: str | None = None


class OpenAIUsage(msgspec.Struct):
    prompt_tokens: int
    completion_tokens: int


class OpenAIChunk(msgspec.Struct):
    id: str
    model: str
    choices: list[OpenAIChoice]
    usage: OpenAIUsage | None = None


class AnthropicDelta(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    stop_reason: str | None = None


class AnthropicEvent(msgspec.Struct):
    type: str
    index: int | None = None
    delta: AnthropicDelta | None = None


_openai_decoder = msgspec.json.Decoder(OpenAIChunk)
_anthropic_decoder = msgspec.json.Decoder(AnthropicEvent)


def _openai_text_struct(chunk: OpenAIChunk) -> int:
    return sum(len(c.delta.content or "") for c in chunk.choices)


def _anthropic_text_struct(event: AnthropicEvent) -> int:
    return len(event.delta.text or "") if event.delta is not None else 0


def _openai_text_dict(chunk: dict[str, object]) -> int:
    choices = chunk["choices"]
    assert isinstance(choices, list)
    return sum(len(c["delta"].get("content") or "") for c in choices)


def _anthropic_text_dict(event: dict[str, object]) -> int:
    delta = event.get("delta")
    return len(delta.get("text") or "") if isinstance(delta, dict) else 0


# -- contenders ------------------------------------------------------------------
# Each takes (chunks, provider) and returns (events decoded, text characters seen).

K = TypeVar("K")
Runner = Callable[[Sequence[bytes], str], tuple[int, int]]


def run_streamfn(chunks: Sequence[bytes], provider: str) -> tuple[int, int]:
    decoder = SSEDecoder(max_line_bytes=32 << 20, max_event_bytes=32 << 20)
    openai = provider == "openai"
    decode = _openai_decoder.decode if openai else _anthropic_decoder.decode
    measure: Callable[..., int] = _openai_text_struct if openai else _anthropic_text_struct
    n = chars = 0
    for chunk in chunks:
        for event in decoder.feed(chunk):
            if type(event) is ServerSentEvent and event.data != "[DONE]":
                chars += measure(decode(event.data))
                n += 1
    for event in decoder.end():
        if type(event) is ServerSentEvent and event.data != "[DONE]":
            chars += measure(decode(event.data))
            n += 1
    return n, chars


def run_streamfn_runs(chunks: Sequence[bytes], provider: str) -> tuple[int, int]:
    decoder = SSEDecoder(max_line_bytes=32 << 20, max_event_bytes=32 << 20)
    openai = provider == "openai"
    decode = _openai_decoder.decode if openai else _anthropic_decoder.decode
    measure: Callable[..., int] = _openai_text_struct if openai else _anthropic_text_struct
    counts = [0, 0]

    def run(datas: list[bytes]) -> None:
        for data in datas:
            if data != b"[DONE]":
                counts[1] += measure(decode(data))
                counts[0] += 1

    def sink(data: bytes, event_type: bytes) -> None:
        run([data])

    feed = decoder.bind(sink, run, any_type=not openai)  # as the providers drive it
    for chunk in chunks:
        feed(chunk)
    for event in decoder.end():
        if type(event) is ServerSentEvent:
            run([event.data.encode()])
    return counts[0], counts[1]


def run_reference(chunks: Sequence[bytes], provider: str) -> tuple[int, int]:
    openai = provider == "openai"
    decode = _openai_decoder.decode if openai else _anthropic_decoder.decode
    measure: Callable[..., int] = _openai_text_struct if openai else _anthropic_text_struct
    buf = bytearray()
    n = chars = 0
    for chunk in chunks:
        scan = max(len(buf) - 1, 0)  # only new bytes (and one before) can complete "\n\n"
        buf += chunk
        start = 0
        while True:
            end = buf.find(b"\n\n", scan)
            if end < 0:
                break
            block = bytes(buf[start:end])
            start = scan = end + 2
            data = [line[6:] for line in block.split(b"\n") if line.startswith(b"data: ")]
            if not data:
                continue
            payload = data[0] if len(data) == 1 else b"\n".join(data)
            if payload != b"[DONE]":
                chars += measure(decode(payload))
                n += 1
        if start:
            del buf[:start]
    return n, chars


def run_openai_sdk(chunks: Sequence[bytes], provider: str) -> tuple[int, int]:
    from openai._streaming import SSEDecoder as OpenAISSEDecoder

    measure: Callable[..., int] = (
        _openai_text_dict if provider == "openai" else _anthropic_text_dict
    )
    n = chars = 0
    for sse in OpenAISSEDecoder().iter_bytes(iter(chunks)):
        if sse.data.startswith("[DONE]"):
            continue
        chars += measure(json.loads(sse.data))
        n += 1
    return n, chars


def run_httpx_sse(chunks: Sequence[bytes], provider: str) -> tuple[int, int]:
    from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder
    from httpx_sse._decoders import SSELineDecoder

    measure: Callable[..., int] = (
        _openai_text_dict if provider == "openai" else _anthropic_text_dict
    )
    text_decoder = codecs.getincrementaldecoder("utf-8")("replace")
    lines = SSELineDecoder()
    decoder = HttpxSSEDecoder()
    n = chars = 0

    def handle(line: str) -> None:
        nonlocal n, chars
        sse = decoder.decode(line.rstrip("\n"))
        if sse is not None and sse.data and sse.data != "[DONE]":
            chars += measure(json.loads(sse.data))
            n += 1

    for chunk in chunks:
        for line in lines.decode(text_decoder.decode(chunk)):
            handle(line)
    for line in lines.flush():
        handle(line)
    handle("")
    return n, chars


_PRE_SPLIT: dict[int, tuple[Sequence[bytes], list[bytes]]] = {}


def run_floor(chunks: Sequence[bytes], provider: str) -> tuple[int, int]:
    """msgspec alone on the pre-split ``data:`` payloads (split on the untimed first call)."""
    openai = provider == "openai"
    decode = _openai_decoder.decode if openai else _anthropic_decoder.decode
    measure: Callable[..., int] = _openai_text_struct if openai else _anthropic_text_struct
    held = _PRE_SPLIT.get(id(chunks))
    if held is None or held[0] is not chunks:
        body = b"".join(chunks)
        held = _PRE_SPLIT[id(chunks)] = (chunks, [p for p in payloads(body) if p != b"[DONE]"])
    n = chars = 0
    for payload in held[1]:
        chars += measure(decode(payload))
        n += 1
    return n, chars


def run_split(chunks: Sequence[bytes], provider: str) -> tuple[int, int]:
    """The tight streaming reference: one ``split(b"\\n")`` per chunk, partial line carried."""
    openai = provider == "openai"
    decode = _openai_decoder.decode if openai else _anthropic_decoder.decode
    measure: Callable[..., int] = _openai_text_struct if openai else _anthropic_text_struct
    n = chars = 0
    tail = b""
    for chunk in chunks:
        lines = (tail + chunk if tail else chunk).split(b"\n")
        tail = lines.pop()
        for line in lines:
            if line[:6] == b"data: " and line != b"data: [DONE]":
                chars += measure(decode(line[6:]))
                n += 1
    return n, chars


CONTENDERS: dict[str, Runner] = {
    "floor": run_floor,
    "split": run_split,
    "streamfn": run_streamfn,
    "streamfn-runs": run_streamfn_runs,
    "find-reference": run_reference,
    "openai-sdk": run_openai_sdk,
    "httpx-sse": run_httpx_sse,
}


def best_times(fns: Mapping[K, Callable[[], object]], repeats: int) -> dict[K, float]:
    """Best wall time of each function; repeats are interleaved round-robin so
    that load from other processes on a shared machine hits every contender alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def fold_call(
    call: Call, headers: Sequence[tuple[str, str]], chunks: Sequence[bytes]
) -> AssistantMessage:
    """Feed an opened call the whole response, folding every event as it arrives: the
    ``streamfn+fold`` contender of the provider benchmarks (they time the opening too)."""
    acc = Accumulator()
    fold = acc.extend
    fold(call.receive_response(200, headers))
    for chunk in chunks:
        fold(call.receive_data(chunk))
    fold(call.receive_eof())
    return acc.message


def streams_table(n_events: int, repeats: int) -> None:
    bodies = {
        "openai": openai_chat_stream(n_events),
        "anthropic": anthropic_stream(n_events),
    }
    print(f"## {n_events:,} events, best of {repeats}; time ratio vs the floor (lower is better)")
    print()
    header = f"| stream | chunks | {' | '.join(CONTENDERS)} | streamfn MB/s |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for provider, body in bodies.items():
        chunkings = {
            "64 KiB": chunks_fixed(body, 64 << 10),
            "1500 B": chunks_fixed(body, 1500),
            "rand 1..4096": chunks_random(body, 1, 4096, seed=1),
            "1 event": chunks_events(body),
        }
        for label, chunks in chunkings.items():
            results = {name: run(chunks, provider) for name, run in CONTENDERS.items()}
            if len(set(results.values())) != 1:
                raise SystemExit(f"contenders disagree on {provider}/{label}: {results}")
            times = best_times(
                {name: partial(run, chunks, provider) for name, run in CONTENDERS.items()},
                repeats,
            )
            ref = times["floor"]
            cells = " | ".join(f"{times[name] / ref:.2f}x" for name in CONTENDERS)
            mbps = len(body) / times["streamfn"] / 1e6
            print(
                f"| {provider} ({len(body) / 1e6:.1f} MB) | {label} | {cells} | {mbps:.0f} |",
                flush=True,
            )
    print()


def big_event_table(repeats: int) -> None:
    """One huge event, fed in 1,500-byte chunks: time per MiB must not grow with size.

    1 MiB still fits the CPU caches and 4 MiB does not, so every contender,
    the reference included, pays more per byte from 1 to 4 MiB; quadratic
    buffering would show as growth again from 4 to 16 MiB.
    """
    sizes = (1, 4, 16)
    print(f"## one huge event in 1500-byte chunks, best of {repeats}; ms per MiB")
    print()
    print("| contender | 1 MiB | 4 MiB | 16 MiB | per-byte 4/1 | per-byte 16/4 |")
    print("|---|---|---|---|---|---|")
    bodies = {}
    for mib in sizes:
        text = ("x" * 1023 + " ") * (mib << 10)
        payload = json.dumps({"type": "blob", "index": 0, "delta": {"text": text}}).encode()
        bodies[mib] = chunks_fixed(b"data: " + payload + b"\n\n", 1500)
    # the split reference re-copies a partial line per chunk (quadratic here): left out
    linear = {name: run for name, run in CONTENDERS.items() if name != "split"}
    fns = {
        (name, mib): partial(run, chunks, "anthropic")
        for name, run in linear.items()
        for mib, chunks in bodies.items()
    }
    times = best_times(fns, repeats)
    for name in linear:
        ms = {mib: times[name, mib] / mib * 1e3 for mib in sizes}
        print(
            f"| {name} | {ms[1]:.1f} | {ms[4]:.1f} | {ms[16]:.1f} "
            f"| {ms[4] / ms[1]:.2f} | {ms[16] / ms[4]:.2f} |"
        )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}")
    print()
    streams_table(args.events, args.repeats)
    big_event_table(args.repeats)


if __name__ == "__main__":
    main()
