"""What Bedrock's Converse format tells the format-neutral feature modules."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat
from streamfn.core.catalogue._model_spec import Model
from streamfn.core.dialects._claude_common import claude_tool_call_id
from streamfn.core.dialects._claude_rules import CLAUDE_RULES
from streamfn.core.dialects._transcripts import STREAMED
from streamfn.core.dialects.bedrock._count import COUNTING
from streamfn.core.dialects.bedrock._credentials import bedrock_credentials
from streamfn.core.dialects.bedrock._encode import BedrockEncoder
from streamfn.core.dialects.bedrock._parts import check_document
from streamfn.core.dialects.bedrock._rules import CONVERSE_RULES
from streamfn.core.dialects.bedrock._sample import bedrock_body

__all__ = ["WIRE_FORMAT"]


def _input_kinds(model: Model) -> tuple[str, ...]:
    return ("image", "document")  # bytes only: Converse fetches no URL


WIRE_FORMAT: Final = WireFormat(
    input_kinds=_input_kinds,
    check_document=check_document,
    credentials=bedrock_credentials,
    tool_call_id=claude_tool_call_id,
    catalog_sources={"amazon-bedrock": "bedrock"},
    counting=COUNTING,
    content_type="application/vnd.amazon.eventstream",
    transcript_encoder=lambda _: BedrockEncoder(),
    transcript_shape=STREAMED
    | {
        "response_ids": False,
        "text_signatures": False,
        "tool_signatures": False,
        "parallel_tool_calls": False,
        "usage_fields": frozenset({"input", "output", "cache_read", "cache_write"}),
    },
    capability_rules=(*CLAUDE_RULES, *CONVERSE_RULES),
    sample_body=bedrock_body,
)
