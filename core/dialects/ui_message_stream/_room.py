"""What this front-end protocol tells the format-neutral feature modules: how the fuzz
kit writes its transcripts (it carries our own events, so every other default holds)."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat
from streamfn.core.dialects._transcripts import UNSIGNED
from streamfn.core.dialects.ui_message_stream._encode import UIMessageStreamEncoder

__all__ = ["WIRE_FORMAT"]

WIRE_FORMAT: Final = WireFormat(
    content_type="text/event-stream",
    transcript_encoder=lambda response_id: UIMessageStreamEncoder(message_id=response_id),
    transcript_shape=UNSIGNED | {"response_ids": True, "usage_fields": frozenset()},
)
