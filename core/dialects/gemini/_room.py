"""What Gemini's format tells the format-neutral feature modules."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat
from streamfn.core.dialects.gemini._count import COUNTING
from streamfn.core.dialects.gemini._rules import GEMINI_RULES

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
    capability_rules=GEMINI_RULES,
)
