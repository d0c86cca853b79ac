"""What OpenAI's Responses API tells the format-neutral feature modules."""

from __future__ import annotations

from typing import Final

import msgspec

from streamfn.core._wire_formats import WireFormat
from streamfn.core.catalogue._model_spec import Model
from streamfn.core.dialects._openai_common import openai_tool_call_id
from streamfn.core.dialects._openai_rules import OPENAI_RULES
from streamfn.core.dialects._transcripts import UNSIGNED
from streamfn.core.dialects.openai_responses._count import COUNTING
from streamfn.core.dialects.openai_responses._encode import ResponsesEncoder
from streamfn.core.dialects.openai_responses._sample import responses_body

__all__ = ["WIRE_FORMAT"]

#: providers whose Responses API keeps a background response to stream again
_RESUMABLE_PROVIDERS: Final = frozenset({"openai", "azure"})


def _signature(kind: str, text: str, token: str) -> str:
    """The reasoning JSON the decoder makes from an encrypted reasoning item."""
    summary = [{"type": "summary_text", "text": text}] if text else []
    item = {"type": "reasoning", "encrypted_content": token, "summary": summary}
    return msgspec.json.encode(item).decode()


def _resumes(model: Model) -> bool:
    return model.provider in _RESUMABLE_PROVIDERS


WIRE_FORMAT: Final = WireFormat(
    # https://developers.openai.com/api/docs/guides/tools-web-search (the openai SDK's
    # WebSearchToolParam and CodeInterpreter)
    server_tools={
        "web_search": {"type": "web_search"},
        "code_execution": {"type": "code_interpreter", "container": {"type": "auto"}},
    },
    server_tool_keys={
        "web_search": frozenset(
            {"filters", "search_context_size", "user_location", "external_web_access"}
        ),
        "code_execution": frozenset({"container"}),
    },
    tool_call_id=openai_tool_call_id,
    websocket=True,
    resumes=_resumes,
    counting=COUNTING,
    content_type="text/event-stream",
    transcript_encoder=lambda response_id: ResponsesEncoder(response_id=response_id, model="m"),
    transcript_shape=UNSIGNED
    | {
        "response_ids": True,
        "thinking_signatures": True,
        "signer": _signature,
        "opaque": "openai-responses",
        "tool_use_iff_calls": True,
        "usage_fields": frozenset({"input", "output", "cache_read", "cache_write", "reasoning"}),
    },
    capability_rules=OPENAI_RULES,
    sample_body=responses_body,
)
