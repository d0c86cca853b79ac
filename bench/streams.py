"""Deterministic synthetic provider bodies for benchmarks and tests.

Real recordings are small (a few KiB); throughput and scaling need streams of
megabytes with the same shape. These generators reproduce the wire format of
OpenAI Chat Completions and Anthropic Messages streams byte for byte in
structure (field order, compact JSON, raw UTF-8, ``event:`` lines where the
provider sends them), with seeded random text so every run of a benchmark
decodes exactly the same bytes. Stdlib only, so any test can import them.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from typing import Any

__all__ = [
    "STREAM_SHAPES",
    "anthropic_rich_stream",
    "anthropic_stream",
    "chunks_events",
    "chunks_fixed",
    "chunks_random",
    "openai_chat_rich_stream",
    "openai_chat_stream",
]

_ENGLISH = (
    "the model streams tokens as soon as it has them so the user sees text early "
    "and the decoder must keep up with every byte while staying within its bounded "
    "buffers latency matters more than anything else here because people wait "
    "for the first word answer reply function tool call argument result message "
    "content delta index choice finish reason usage prompt completion total"
)
_WORDS = (*_ENGLISH.split(), "café", "naïve", "Zürich", "東京", "🙂", "résumé", "—", "über")


def _json(obj: Any) -> str:
    # Providers send compact JSON with raw (not \u-escaped) UTF-8.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _phrases(rng: random.Random, n: int) -> Iterator[str]:
    """``n`` text deltas of 1-4 words, each with the leading space tokenizers emit."""
    words = _WORDS
    for _ in range(n):
        yield "".join(" " + rng.choice(words) for _ in range(rng.randint(1, 4)))


def _obfuscation(rng: random.Random) -> str:
    # OpenAI pads chunks with a random string so sizes do not leak token lengths.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 12)))


def openai_chat_stream(n_events: int = 20000, seed: int = 0) -> bytes:
    """A ``stream=true`` + ``stream_options.include_usage`` chat completion body.

    Role chunk, ``n_events`` content chunks, a finish chunk, a usage chunk with
    ``choices: []``, then ``data: [DONE]``; about 6.7 MB for 20,000 events.
    """
    rng = random.Random(seed)
    chunk_id = "chatcmpl-" + "".join(
        rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        for _ in range(29)
    )
    created = 1_730_000_000 + rng.randint(0, 10_000_000)
    model = "gpt-4o-mini-2024-07-18"

    def chunk(choices: list[dict[str, Any]], usage: dict[str, Any] | None) -> bytes:
        body = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": "fp_0ba0d124f1",
            "choices": choices,
            "usage": usage,
            "obfuscation": _obfuscation(rng),
        }
        return b"data: " + _json(body).encode() + b"\n\n"

    def choice(delta: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]

    parts = [chunk(choice({"role": "assistant", "content": "", "refusal": None}), None)]
    parts.extend(chunk(choice({"content": text}), None) for text in _phrases(rng, n_events))
    parts.append(chunk(choice({}, "stop"), None))
    usage = {
        "prompt_tokens": 57,
        "completion_tokens": n_events,
        "total_tokens": 57 + n_events,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    parts.append(chunk([], usage))
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def anthropic_stream(n_events: int = 20000, seed: int = 0) -> bytes:
    """A Messages API ``stream: true`` body with one text block of ``n_events`` deltas.

    message_start, content_block_start, content_block_delta (text_delta) x n,
    content_block_stop, message_delta, message_stop; each frame has the
    ``event:`` line Anthropic sends before its ``data:`` line.
    """
    rng = random.Random(seed)
    msg_id = "msg_01" + "".join(
        rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        for _ in range(22)
    )

    def frame(kind: str, body: dict[str, Any]) -> bytes:
        return b"event: " + kind.encode() + b"\ndata: " + _json(body).encode() + b"\n\n"

    start = {
        "type": "message_start",
        "message": {
            "model": "claude-sonnet-4-5-20250929",
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 2479,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 6,
                "service_tier": "standard",
            },
        },
    }
    parts = [
        frame("message_start", start),
        frame(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    parts.extend(
        frame(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        )
        for text in _phrases(rng, n_events)
    )
    parts.append(frame("content_block_stop", {"type": "content_block_stop", "index": 0}))
    parts.append(
        frame(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": n_events},
            },
        )
    )
    parts.append(frame("message_stop", {"type": "message_stop"}))
    return b"".join(parts)


_ARG_KEYS = ("location", "query", "path", "content", "limit", "unit", "filters")


def _argument_pieces(rng: random.Random, n: int) -> list[str]:
    """``n`` fragments of one JSON arguments object, cut where a tokenizer would."""
    fields = []
    while sum(len(f) for f in fields) < 6 * n + 8:
        key = rng.choice(_ARG_KEYS)
        value = "".join(" " + rng.choice(_WORDS) for _ in range(rng.randint(2, 12)))
        fields.append(_json(key) + ":" + _json(value.strip()))
    text = "{" + ",".join(fields) + "}"
    cuts = sorted(rng.sample(range(1, len(text)), n - 1)) if n > 1 else []
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _split_counts(n: int, shares: tuple[float, ...]) -> list[int]:
    counts = [int(n * share) for share in shares]
    counts[0] += n - sum(counts)
    return counts


def openai_chat_rich_stream(
    n_events: int = 20000, seed: int = 0, *, reasoning: bool = False
) -> bytes:
    """A chat completion that thinks (optional), writes text, then calls tools in parallel.

    30% of the deltas are tool-call argument fragments spread over three
    parallel calls (each opened with ``id``/``name`` and ``arguments: ""`` as
    OpenAI does); with ``reasoning`` 20% are ``reasoning_content`` deltas first
    (DeepSeek / vLLM style). Ends with ``finish_reason: tool_calls``, a usage
    chunk and ``[DONE]``.
    """
    rng = random.Random(seed)
    chunk_id = "chatcmpl-" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(29))
    created = 1_730_000_000 + rng.randint(0, 10_000_000)
    head = (
        f'{{"id":"{chunk_id}","object":"chat.completion.chunk","created":{created},'
        '"model":"gpt-4o-mini-2024-07-18","service_tier":"default",'
        '"system_fingerprint":"fp_0ba0d124f1","choices":'
    )

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        tail = f',"usage":null,"obfuscation":{_json(_obfuscation(rng))}}}'
        return b"data: " + (head + _json(choices) + tail).encode() + b"\n\n"

    n_think, n_text, n_tool = _split_counts(
        n_events, (0.2, 0.5, 0.3) if reasoning else (0.0, 0.7, 0.3)
    )
    parts = [chunk({"role": "assistant", "content": "", "refusal": None})]
    parts.extend(chunk({"reasoning_content": t}) for t in _phrases(rng, n_think))
    parts.extend(chunk({"content": t}) for t in _phrases(rng, n_text))
    per_call = _split_counts(n_tool, (1 / 3, 1 / 3, 1 / 3))
    for number, count in enumerate(per_call):
        call_id = "call_" + "".join(rng.choice("abcdefghijklmnop0123456789") for _ in range(24))
        name = rng.choice(("get_weather", "search_web", "read_file"))
        opener = {"index": number, "id": call_id, "type": "function"}
        opener["function"] = {"name": name, "arguments": ""}
        parts.append(chunk({"tool_calls": [opener]}))
        parts.extend(
            chunk({"tool_calls": [{"index": number, "function": {"arguments": piece}}]})
            for piece in _argument_pieces(rng, max(count - 1, 1))
        )
    parts.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 57, "completion_tokens": n_events, "total_tokens": 57 + n_events}
    parts.append(b"data: " + _json({"id": chunk_id, "choices": [], "usage": usage}).encode())
    parts.append(b"\n\ndata: [DONE]\n\n")
    return b"".join(parts)


def anthropic_rich_stream(n_events: int = 20000, seed: int = 0) -> bytes:
    """A Messages stream with a thinking block, a text block and two parallel tool calls.

    30% thinking deltas (then a signature), 40% text deltas, 30% ``input_json_delta``
    fragments over two ``tool_use`` blocks; ``stop_reason: tool_use``.
    """
    rng = random.Random(seed)

    def frame(kind: str, body: dict[str, Any]) -> bytes:
        return b"event: " + kind.encode() + b"\ndata: " + _json(body).encode() + b"\n\n"

    def delta(index: int, body: dict[str, Any]) -> bytes:
        return frame(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": body}
        )

    def block(index: int, content_block: dict[str, Any]) -> bytes:
        return frame(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": content_block},
        )

    def stop(index: int) -> bytes:
        return frame("content_block_stop", {"type": "content_block_stop", "index": index})

    n_think, n_text, n_tool = _split_counts(n_events, (0.3, 0.4, 0.3))
    start = {
        "type": "message_start",
        "message": {
            "model": "claude-sonnet-4-5-20250929",
            "id": "msg_01" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(22)),
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 2479, "output_tokens": 6, "service_tier": "standard"},
        },
    }
    parts = [frame("message_start", start)]
    parts.append(block(0, {"type": "thinking", "thinking": "", "signature": ""}))
    parts.extend(
        delta(0, {"type": "thinking_delta", "thinking": t}) for t in _phrases(rng, n_think)
    )
    signature = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/") for _ in range(344))
    parts.append(delta(0, {"type": "signature_delta", "signature": signature}))
    parts.append(stop(0))
    parts.append(block(1, {"type": "text", "text": ""}))
    parts.extend(delta(1, {"type": "text_delta", "text": t}) for t in _phrases(rng, n_text))
    parts.append(stop(1))
    for offset, count in enumerate(_split_counts(n_tool, (0.5, 0.5))):
        index = 2 + offset
        tool_id = "toolu_01" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(22))
        name = rng.choice(("get_weather", "search_web", "read_file"))
        parts.append(block(index, {"type": "tool_use", "id": tool_id, "name": name, "input": {}}))
        parts.extend(
            delta(index, {"type": "input_json_delta", "partial_json": piece})
            for piece in _argument_pieces(rng, max(count, 1))
        )
        parts.append(stop(index))
    parts.append(
        frame(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": n_events},
            },
        )
    )
    parts.append(frame("message_stop", {"type": "message_stop"}))
    return b"".join(parts)


#: every stream shape the provider benchmarks run, by provider: the text-only
#: body the README used to report, and the rich ones real agents produce
STREAM_SHAPES: dict[str, dict[str, Any]] = {
    "openai": {
        "text": openai_chat_stream,
        "tools": openai_chat_rich_stream,
        "reasoning+tools": lambda n, seed=0: openai_chat_rich_stream(n, seed, reasoning=True),
    },
    "anthropic": {"text": anthropic_stream, "thinking+text+tools": anthropic_rich_stream},
}


def chunks_fixed(body: bytes, size: int) -> list[bytes]:
    """``body`` cut into ``size``-byte chunks (the last may be shorter)."""
    if size < 1:
        raise ValueError("chunk size must be at least 1")
    return [body[i : i + size] for i in range(0, len(body), size)]


def chunks_events(body: bytes) -> list[bytes]:
    """``body`` one event per chunk: what a socket gives while a model is
    generating (a read per token), where per-read costs dominate."""
    out: list[bytes] = []
    pos = 0
    while pos < len(body):
        end = body.find(b"\n\n", pos)
        end = len(body) if end < 0 else end + 2
        out.append(body[pos:end])
        pos = end
    return out


def chunks_random(body: bytes, lo: int = 1, hi: int = 4096, seed: int = 0) -> list[bytes]:
    """``body`` cut at seeded random points, each chunk ``lo``..``hi`` bytes long.

    Random cuts land inside multi-byte UTF-8 sequences, between CR and LF and
    inside ``data:``, which is what a socket does to a decoder.
    """
    if not 1 <= lo <= hi:
        raise ValueError("need 1 <= lo <= hi")
    rng = random.Random(seed)
    out: list[bytes] = []
    pos = 0
    while pos < len(body):
        step = rng.randint(lo, hi)
        out.append(body[pos : pos + step])
        pos += step
    return out
