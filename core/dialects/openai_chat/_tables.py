"""Chat Completions' finish reasons each way, read by both sides.

One place for each table, so what we send and what we read cannot drift apart
(`tests/core/test_dialect_tables.py` checks each inverse reads back what we send)."""

from __future__ import annotations

from typing import Final

from streamfn.core._events import StopReason

__all__ = ["FINISH_REASONS", "FINISH_REASONS_READ"]

#: our stop reasons of a finished answer -> OpenAI ``finish_reason`` (streamed and
#: whole responses alike); a cut one (error, aborted) has none (see `cut`)
FINISH_REASONS: Final = {
    StopReason.STOP: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_USE: "tool_calls",
}

FINISH_REASONS_READ: Final = {
    "stop": StopReason.STOP,
    "end_turn": StopReason.STOP,
    "eos": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "length": StopReason.LENGTH,
    "max_tokens": StopReason.LENGTH,
    "model_length": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "tool_use": StopReason.TOOL_USE,
}
