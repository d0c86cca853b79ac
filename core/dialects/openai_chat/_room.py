"""What OpenAI's Chat Completions format tells the format-neutral feature modules."""

from __future__ import annotations

from typing import Final

import msgspec

from streamfn.core._wire_formats import WireFormat
from streamfn.core.catalogue._model_spec import Model
from streamfn.core.dialects._openai_common import openai_tool_call_id
from streamfn.core.dialects._openai_rules import OPENAI_RULES
from streamfn.core.dialects._transcripts import UNSIGNED
from streamfn.core.dialects.openai_chat._count import COUNTING
from streamfn.core.dialects.openai_chat._encode import OpenAIChatEncoder
from streamfn.core.dialects.openai_chat._rules import COMPATIBLE_RULES
from streamfn.core.dialects.openai_chat._sample import openai_body

__all__ = ["WIRE_FORMAT"]

#: OpenAI-compatible providers whose Chat Completions takes ``file`` parts (file_data)
#: and ``web_search_options``
_OPENAI_ITSELF: Final = frozenset({"openai", "azure", "openrouter"})
#: providers that serve the Responses API too
_RESPONSES_SERVERS: Final = frozenset({"openai", "azure"})
#: OpenAI-compatible servers that continue a final assistant message (vLLM, llama.cpp)
_CONTINUE_SERVERS: Final = frozenset({"vllm", "llamacpp"})


def _input_kinds(model: Model) -> tuple[str, ...]:
    if model.provider in _OPENAI_ITSELF:
        return ("image", "image_url", "document")
    return ("image", "image_url")


def _server_tool_types(model: Model) -> tuple[str, ...]:
    return ("web_search",) if model.provider in _OPENAI_ITSELF else ()


def _upgrade(model: Model) -> Model | None:
    # only OpenAI's and Azure's 400 can mean "go to the Responses API" (a third-party
    # server's words, perhaps echoing a client's input, switch nothing)
    if model.provider not in _RESPONSES_SERVERS:
        return None
    return msgspec.structs.replace(model, api="openai-responses")


def _continues(model: Model) -> bool:
    return model.provider in _CONTINUE_SERVERS


WIRE_FORMAT: Final = WireFormat(
    input_kinds=_input_kinds,
    # web search is the request's ``web_search_options`` (the openai SDK's WebSearchOptions)
    server_tool_types=_server_tool_types,
    server_tool_keys={"web_search": frozenset({"search_context_size", "user_location"})},
    tool_call_id=openai_tool_call_id,
    continues=_continues,
    # vLLM's and llama.cpp's way to go on from a final assistant message
    continuation_body={"continue_final_message": True, "add_generation_prompt": False},
    upgrade=_upgrade,
    catalog_sources={
        "openai": "openai",
        "mistral": "mistral",
        "xai": "xai",
        "deepseek": "deepseek",
        "groq": "groq",
        "openrouter": "openrouter",
        "zai": "zai",
        "azure": "azure",
    },
    counting=COUNTING,
    content_type="text/event-stream",
    transcript_encoder=lambda response_id: OpenAIChatEncoder(
        response_id=response_id, model="m", created=0, include_usage=True
    ),
    transcript_shape=UNSIGNED
    | {
        "response_ids": True,
        "implicit_block_ends": True,
        "adjacent_same_kind": False,
        "usage_fields": frozenset({"input", "output", "cache_read", "reasoning"}),
    },
    block_ends=False,  # chunks never close a tool call
    capability_rules=(*OPENAI_RULES, *COMPATIBLE_RULES),
    sample_body=openai_body,
    sample_cut=b'data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1,'
    b'"model":"fake","choices":[{"index":0,"delta":{},"finish_reason":"stop"',
)
