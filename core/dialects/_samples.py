"""What the formats' sample bodies share (see `WireFormat`'s ``sample_body``): the
words of the fake provider's answer and one SSE event."""

from __future__ import annotations

import json
from typing import Any, Final

from streamfn.core.wire._sse import encode_sse

__all__ = ["WORDS", "sse"]

WORDS: Final = ["Hello", ",", " wor", "ld", " — ", "café", " 🙂", "!"]


def sse(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return encode_sse(payload, event=event or None)
