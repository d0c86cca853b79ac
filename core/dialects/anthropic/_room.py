"""What Anthropic's Messages format tells the format-neutral feature modules."""

from __future__ import annotations

from typing import Final

from streamfn.core._wire_formats import WireFormat
from streamfn.core.catalogue._model_spec import Model
from streamfn.core.dialects._claude_common import claude_tool_call_id
from streamfn.core.dialects._claude_rules import CLAUDE_RULES
from streamfn.core.dialects._transcripts import STREAMED
from streamfn.core.dialects.anthropic._count import COUNTING
from streamfn.core.dialects.anthropic._encode import AnthropicEncoder
from streamfn.core.dialects.anthropic._parts import check_document
from streamfn.core.dialects.anthropic._sample import anthropic_body

__all__ = ["WIRE_FORMAT"]

#: the config keys every Claude server tool takes besides its own
_CLAUDE_TOOL_KEYS: Final = frozenset(
    {"allowed_callers", "cache_control", "defer_loading", "strict"}
)


def _continues(model: Model) -> bool:
    return model.provider == "anthropic"


WIRE_FORMAT: Final = WireFormat(
    documents_in_tool_results=True,
    check_document=check_document,
    # https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
    # (the anthropic SDK's WebSearchTool20250305Param and CodeExecutionTool20250825Param)
    server_tools={
        "web_search": {"type": "web_search_20250305", "name": "web_search"},
        "code_execution": {"type": "code_execution_20250825", "name": "code_execution"},
    },
    server_tool_keys={
        "web_search": _CLAUDE_TOOL_KEYS
        | {"allowed_domains", "blocked_domains", "max_uses", "user_location"},
        "code_execution": _CLAUDE_TOOL_KEYS,
    },
    tool_call_id=claude_tool_call_id,
    continues=_continues,
    prefill=True,
    catalog_sources={"anthropic": "anthropic"},
    counting=COUNTING,
    content_type="text/event-stream",
    transcript_encoder=lambda response_id: AnthropicEncoder(message_id=response_id, model="m"),
    transcript_shape=STREAMED
    | {
        "response_ids": True,
        "text_signatures": False,
        "tool_signatures": False,
        "parallel_tool_calls": False,
        "opaque": "anthropic",
        "usage_fields": frozenset({"input", "output", "cache_read", "cache_write"}),
    },
    capability_rules=CLAUDE_RULES,
    sample_body=anthropic_body,
    sample_cut=b"event: content_block_stop",
)
