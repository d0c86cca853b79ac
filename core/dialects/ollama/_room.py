"""What Ollama's format tells the format-neutral feature modules."""

from __future__ import annotations

from typing import Final

from streamfn.core._model_spec import Model
from streamfn.core._wire_formats import WireFormat

__all__ = ["WIRE_FORMAT"]


def _input_kinds(model: Model) -> tuple[str, ...]:
    return ("image",)  # image bytes only: no URL, no document


WIRE_FORMAT: Final = WireFormat(input_kinds=_input_kinds)
