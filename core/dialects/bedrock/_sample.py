"""A short Converse answer, as the fake provider sends it."""

from __future__ import annotations

import json
from typing import Any

from streamfn.core.dialects._samples import WORDS
from streamfn.core.wire._eventstream import encode_message

__all__ = ["bedrock_body"]


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
