"""Ollama's ``done_reason`` each way, read by both sides.

One place for each table, so what we send and what we read cannot drift apart
(`tests/core/test_dialect_tables.py` checks each inverse reads back what we send)."""

from __future__ import annotations

from typing import Final

from streamfn.core._events import StopReason

__all__ = ["DONE_REASONS", "DONE_REASONS_READ"]

#: our stop reasons -> Ollama ``done_reason`` (tool use is a plain stop there)
DONE_REASONS: Final = {
    StopReason.STOP: "stop",
    StopReason.TOOL_USE: "stop",
    StopReason.LENGTH: "length",
}

DONE_REASONS_READ: Final = {
    "stop": StopReason.STOP,
    "length": StopReason.LENGTH,
    # "load" / "unload": an empty request that only (un)loaded the model
    "load": StopReason.STOP,
    "unload": StopReason.STOP,
}
