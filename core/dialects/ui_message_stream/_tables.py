"""The UI message stream's ``finishReason`` each way, read by both sides.

One place for each table, so what we send and what we read cannot drift apart
(`tests/core/test_dialect_tables.py` checks each inverse reads back what we send)."""

from __future__ import annotations

from typing import Final

from streamfn.core._events import StopReason

__all__ = ["FINISH_REASONS", "FINISH_REASONS_READ"]

#: the stop reasons of a finished answer -> the ``finish`` part's ``finishReason`` (a
#: cut answer has none: it ends with an ``error`` part, see `streamfn.core.dialects._cut`)
FINISH_REASONS: Final = {
    StopReason.STOP: "stop",
    StopReason.LENGTH: "length",
    StopReason.TOOL_USE: "tool-calls",
}

FINISH_REASONS_READ: Final = {
    "stop": StopReason.STOP,
    "length": StopReason.LENGTH,
    "tool-calls": StopReason.TOOL_USE,
}
