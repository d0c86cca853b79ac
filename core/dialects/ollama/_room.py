"""What Ollama's format tells the format-neutral feature modules."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat
from streamfn.core.catalogue._model_spec import Model
from streamfn.core.dialects._transcripts import UNSIGNED
from streamfn.core.dialects.ollama._encode import OllamaEncoder
from streamfn.core.dialects.ollama._sample import ollama_body

__all__ = ["WIRE_FORMAT"]


def _input_kinds(model: Model) -> tuple[str, ...]:
    return ("image",)  # image bytes only: no URL, no document


WIRE_FORMAT: Final = WireFormat(
    input_kinds=_input_kinds,
    content_type="application/x-ndjson",
    transcript_encoder=lambda _: OllamaEncoder(model="m"),
    transcript_shape=UNSIGNED
    | {
        "response_ids": False,
        "implicit_block_ends": True,
        "adjacent_same_kind": False,
        "whole_tool_arguments": True,
        "parallel_tool_calls": False,
        "tool_use_iff_calls": True,
        "usage_fields": frozenset({"input", "output"}),
    },
    sample_body=ollama_body,
)
