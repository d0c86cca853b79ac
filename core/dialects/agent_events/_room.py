"""What this format tells the format-neutral feature modules: nothing of its own (it
carries our own events, so every default holds)."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat

__all__ = ["WIRE_FORMAT"]

WIRE_FORMAT: Final = WireFormat()
