"""What this front-end protocol tells the format-neutral feature modules: how the fuzz
kit writes its transcripts (it carries our own events, so every other default holds)."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat
from streamfn.core.dialects.agui._encode import AGUIEncoder

__all__ = ["WIRE_FORMAT"]

WIRE_FORMAT: Final = WireFormat(
    content_type="text/event-stream",
    transcript_encoder=lambda response_id: AGUIEncoder(
        thread_id="thread", run_id=response_id, message_id="msg"
    ),
    transcript_shape={
        "response_ids": True,
        "text_signatures": False,
        "tool_signatures": False,
        "redacted_thinking": False,
        "whole_tool_arguments": True,  # sent at the call's end, as the checks left them
        "parallel_tool_calls": False,
    },
    no_usage_on=frozenset({"length"}),  # a cut answer ends in RUN_ERROR, which has no usage
)
