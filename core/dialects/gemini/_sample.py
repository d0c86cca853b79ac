"""A short Gemini answer, as the fake provider sends it."""

from __future__ import annotations

from typing import Any

from streamfn.core.dialects._samples import WORDS, sse

__all__ = ["gemini_body"]


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
