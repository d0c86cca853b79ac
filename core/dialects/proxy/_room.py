"""What the format of another streamfn server tells the format-neutral feature modules:
that it is one (its auth errors are its token's or its operator's); it carries our
own events, so every other default holds."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat

__all__ = ["WIRE_FORMAT"]

WIRE_FORMAT: Final = WireFormat(own_server=True)
