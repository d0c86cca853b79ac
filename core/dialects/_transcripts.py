"""The fuzz kit's stream-shape knobs most formats share (see `WireFormat`'s
``transcript_shape``): what an in-stream error can say, and the unsigned formats."""

from __future__ import annotations

from typing import Any, Final

from streamfn.core._events import ErrorKind

__all__ = ["STREAMED", "UNSIGNED"]

#: the kinds an in-stream error of every format reads back as (the others no format can
#: express: a decoder classifies the wording and the provider's code)
STREAMED: Final[dict[str, Any]] = {
    "error_kinds": (
        ErrorKind.THROTTLED,
        ErrorKind.CONTEXT_OVERFLOW,
        ErrorKind.AUTH,
        ErrorKind.NETWORK,
    )
}
#: a format that signs nothing and has no redacted thinking
UNSIGNED: Final[dict[str, Any]] = STREAMED | {
    "thinking_signatures": False,
    "text_signatures": False,
    "tool_signatures": False,
    "redacted_thinking": False,
}
