"""The fake provider's response bodies: a short answer in every wire format.

Each builder writes the bytes a provider sends for one text answer (the
words given), with the ids, usage and terminal event real providers send, so
`replay` of a body is the oracle for what a shell must yield. Written out by
hand rather than by the server encoders (`streamfn.core.serve`): those make
fresh ids and a different event set, and the fault suite pins these bytes
(`UNFINISHED` cuts them at a known event).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

from streamfn.core.wire import encode_message, encode_sse

__all__ = [
    "ANTHROPIC_BODY",
    "EVENTSTREAM",
    "OPENAI_BODY",
    "UNFINISHED",
    "WIRE_FORMATS",
    "WORDS",
    "WRONG_WORDS",
    "first_unit",
    "oversized_unit",
    "sse",
]


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return encode_sse(payload, event=event or None)


WORDS = ["Hello", ",", " wor", "ld", " — ", "café", " 🙂", "!"]
#: the text of the response a misbehaving server writes after the real one
WRONG_WORDS = ["ANOTHER", " CALLER'S", " ANSWER"]


def openai_body(words: list[str] = WORDS) -> bytes:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake"}
    out = [sse(base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})]
    out += [
        sse(base | {"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]})
        for w in words
    ]
    out.append(sse(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    usage = {"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13}
    out.append(sse(base | {"choices": [], "usage": usage}))
    out.append(sse("[DONE]"))
    return b"".join(out)


def anthropic_body(words: list[str] | None = None) -> bytes:
    message: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 7, "output_tokens": 1},
    }
    out = [sse({"type": "message_start", "message": message}, "message_start")]
    out.append(
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            "content_block_start",
        )
    )
    out.append(sse({"type": "ping"}, "ping"))
    for w in words or ["Bonjour", " le", " monde", " — ", "東京", "!"]:
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": w},
        }
        out.append(sse(delta, "content_block_delta"))
    out.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    out.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
            "message_delta",
        )
    )
    out.append(sse({"type": "message_stop"}, "message_stop"))
    return b"".join(out)


def responses_body(words: list[str] = WORDS) -> bytes:
    text = "".join(words)
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress"}
    done_item = item | {
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    usage = {"input_tokens": 5, "output_tokens": len(words), "total_tokens": 5 + len(words)}
    response: dict[str, Any] = {
        "id": "resp_fake",
        "status": "in_progress",
        "output": [],
        "usage": None,
    }
    out = [
        sse({"type": "response.created", "response": response}, "response.created"),
        sse(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": item | {"content": []},
            },
            "response.output_item.added",
        ),
    ]
    for w in words:
        delta = {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": w,
        }
        out.append(sse(delta, "response.output_text.delta"))
    out.append(
        sse(
            {"type": "response.output_item.done", "output_index": 0, "item": done_item},
            "response.output_item.done",
        )
    )
    completed = response | {"status": "completed", "output": [done_item], "usage": usage}
    out.append(sse({"type": "response.completed", "response": completed}, "response.completed"))
    return b"".join(out)


def gemini_body(words: list[str] = WORDS) -> bytes:
    out = []
    for i, w in enumerate(words):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": w}]}}
        chunk: dict[str, Any] = {"candidates": [candidate], "responseId": "resp_fake"}
        if i == len(words) - 1:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = {
                "promptTokenCount": 5,
                "candidatesTokenCount": len(words),
                "totalTokenCount": 5 + len(words),
            }
        out.append(sse(chunk))
    return b"".join(out)


def ollama_body(words: list[str] = WORDS) -> bytes:
    base = {"model": "fake", "created_at": "2025-09-01T10:00:00Z"}
    lines = [base | {"message": {"role": "assistant", "content": w}, "done": False} for w in words]
    lines.append(
        base
        | {
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 5,
            "eval_count": len(words),
        }
    )
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def _bedrock_frame(event: str, payload: dict[str, Any]) -> bytes:
    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload).encode())


def bedrock_body(words: list[str] = WORDS) -> bytes:
    out = [_bedrock_frame("messageStart", {"role": "assistant"})]
    out += [
        _bedrock_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": w}})
        for w in words
    ]
    out.append(_bedrock_frame("contentBlockStop", {"contentBlockIndex": 0}))
    out.append(_bedrock_frame("messageStop", {"stopReason": "end_turn"}))
    usage = {"inputTokens": 5, "outputTokens": len(words), "totalTokens": 5 + len(words)}
    out.append(_bedrock_frame("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
    return b"".join(out)


OPENAI_BODY = openai_body()
ANTHROPIC_BODY = anthropic_body()

EVENTSTREAM = "application/vnd.amazon.eventstream"
#: every wire format the shells drive -> (body builder, content type)
WIRE_FORMATS: dict[str, tuple[Callable[[list[str]], bytes], str]] = {
    "openai-chat": (openai_body, "text/event-stream"),
    "openai-responses": (responses_body, "text/event-stream"),
    "anthropic": (anthropic_body, "text/event-stream"),
    "gemini": (gemini_body, "text/event-stream"),
    "ollama": (ollama_body, "application/x-ndjson"),
    "bedrock": (bedrock_body, EVENTSTREAM),
}


def first_unit(body: bytes, ctype: str) -> bytes:
    """The body's first event, line or frame: a prefix the decoder accepts whole."""
    if ctype == EVENTSTREAM:
        return body[: struct.unpack(">I", body[:4])[0]]
    end = b"\n\n" if ctype == "text/event-stream" else b"\n"
    return body[: body.index(end) + len(end)]


def oversized_unit(ctype: str, size: int) -> bytes:
    """One wire unit (line or frame) of ``size`` bytes: over any small line or event cap."""
    if ctype == EVENTSTREAM:
        headers = {":event-type": "contentBlockDelta", ":message-type": "event"}
        return encode_message(headers, b"x" * size)
    if ctype == "text/event-stream":
        return b"data: " + b"x" * size
    return b'{"message": "' + b"x" * size


#: the body minus its terminal marker: a stream the provider never finished
UNFINISHED = {
    "openai-chat": OPENAI_BODY.split(
        b'data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1,"model":"fake","choices":[{"index":0,"delta":{},"finish_reason":"stop"'
    )[0],
    "anthropic": ANTHROPIC_BODY.split(b"event: content_block_stop")[0],
}
