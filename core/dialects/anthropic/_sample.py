"""A short Messages answer, as the fake provider sends it."""

from __future__ import annotations

from typing import Any

from streamfn.core.dialects._samples import sse

__all__ = ["anthropic_body"]


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
