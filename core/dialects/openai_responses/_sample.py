"""A short Responses API answer, as the fake provider sends it."""

from __future__ import annotations

from typing import Any

from streamfn.core.dialects._samples import WORDS, sse

__all__ = ["responses_body"]


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
