"""A short Chat Completions answer, as the fake provider sends it."""

from __future__ import annotations

from streamfn.core.dialects._samples import WORDS, sse

__all__ = ["openai_body"]


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
