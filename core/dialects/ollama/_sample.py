"""A short Ollama answer, as the fake provider sends it."""

from __future__ import annotations

import json

from streamfn.core.dialects._samples import WORDS

__all__ = ["ollama_body"]


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
