"""What Gemini's format tells the format-neutral feature modules."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat
from streamfn.core.dialects._transcripts import STREAMED
from streamfn.core.dialects.gemini._count import COUNTING
from streamfn.core.dialects.gemini._encode import GeminiEncoder
from streamfn.core.dialects.gemini._rules import GEMINI_RULES
from streamfn.core.dialects.gemini._sample import gemini_body

__all__ = ["WIRE_FORMAT"]

WIRE_FORMAT: Final = WireFormat(
    # https://ai.google.dev/gemini-api/docs/google-search (google-genai's GoogleSearch,
    # in the REST API's camelCase, and ToolCodeExecution, which has no fields)
    server_tools={
        "web_search": {"googleSearch": {}},
        "code_execution": {"codeExecution": {}},
    },
    server_tool_keys={
        "web_search": frozenset(
            {"searchTypes", "blockingConfidence", "excludeDomains", "timeRangeFilter"}
        ),
        "code_execution": frozenset(),
    },
    catalog_sources={"google": "google", "google-vertex": "vertex"},
    counting=COUNTING,
    content_type="text/event-stream",
    transcript_encoder=lambda response_id: GeminiEncoder(response_id=response_id, model="m"),
    transcript_shape=STREAMED
    | {
        "response_ids": True,
        "implicit_block_ends": True,
        "redacted_thinking": False,
        "adjacent_same_kind": False,
        "whole_tool_arguments": True,
        "parallel_tool_calls": False,
        "tool_use_iff_calls": True,
        "usage_fields": frozenset({"input", "output", "cache_read", "reasoning"}),
    },
    capability_rules=GEMINI_RULES,
    sample_body=gemini_body,
)
