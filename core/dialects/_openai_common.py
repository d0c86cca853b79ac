"""What the OpenAI-style wire formats share: the family's quirks, the credential
header, usage in our convention, and error objects.

Chat Completions (`openai_chat`) and the Responses API (`openai_responses`)
are served by the same family of servers (OpenAI, Azure, the compatible
gateways), so the per-server `Quirks` table, the auth header they take, when a
reasoning model's sampling rules apply, how an error object is named, the error
codes our error kinds become and the function-tool schema (which Ollama takes
too) live here once, for all of them. The usage object is Chat Completions' (the agent-events
contract reuses it for ``tokens_used``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, Final

import msgspec

from streamfn.core._events import ErrorKind, Usage
from streamfn.core._messages import Context, Tool
from streamfn.core._options import Options, ThinkingLevel
from streamfn.core.catalogue._capabilities import reasons
from streamfn.core.catalogue._models import Model
from streamfn.core.providers._base import bearer, request_headers
from streamfn.core.providers._convert import id_digest

__all__ = [
    "ERROR_CODES",
    "Quirks",
    "WireUsage",
    "call_signature",
    "convert_usage",
    "error_text",
    "function_tools",
    "openai_headers",
    "openai_tool_call_id",
    "prompt_cache_key",
    "quirks_for",
    "signature_carrier",
    "thinking_on",
]


class Quirks(msgspec.Struct, frozen=True, kw_only=True):
    """How one OpenAI-compatible server departs from OpenAI's own API.

    ``reasoning`` names the request knob for ``Options.thinking``: ``effort``
    (``reasoning_effort``, with the values the model's capabilities allow),
    ``openrouter`` (``reasoning: {...}``), ``zai`` (``thinking: {type}``) or
    ``none``. ``replay_thinking`` is the assistant-message field that carries
    our own earlier reasoning back, where the server accepts one.
    ``seed_field`` is where ``Options.seed`` goes (Mistral: ``random_seed``).
    """

    auth_header: str = "authorization"
    max_tokens_field: str = "max_tokens"
    stream_options: bool = True
    reasoning: str = "effort"
    developer_role: bool = False
    replay_thinking: str | None = None
    tool_result_name: bool = False
    azure_deployments: bool = False
    seed_field: str = "seed"
    prompt_cache_key: bool = False


_DEFAULT_QUIRKS: Final = Quirks()

_QUIRKS: Final[dict[str, Quirks]] = {
    # max_tokens is deprecated by OpenAI and rejected by its reasoning models.
    "openai": Quirks(
        max_tokens_field="max_completion_tokens", developer_role=True, prompt_cache_key=True
    ),
    "azure": Quirks(
        auth_header="api-key",
        max_tokens_field="max_completion_tokens",
        developer_role=True,
        azure_deployments=True,
    ),
    # Mistral rejects unknown fields (422), stream_options included; usage comes anyway.
    # https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post
    "mistral": Quirks(
        stream_options=False, reasoning="none", tool_result_name=True, seed_field="random_seed"
    ),
    "xai": Quirks(),
    "groq": Quirks(),
    "deepseek": Quirks(reasoning="none", replay_thinking="reasoning_content"),
    "openrouter": Quirks(reasoning="openrouter", replay_thinking="reasoning"),
    "zai": Quirks(reasoning="zai", replay_thinking="reasoning_content"),
}


def quirks_for(provider: str) -> Quirks:
    """The quirks of ``provider``; unknown servers get plain OpenAI behaviour."""
    return _QUIRKS.get(provider, _DEFAULT_QUIRKS)


def openai_headers(model: Model, options: Options, quirks: Quirks) -> list[tuple[str, str]]:
    """The request headers with the credential in the header this server takes."""
    if quirks.auth_header == "authorization":
        auth = bearer(options.api_key)
    else:
        auth = (quirks.auth_header, options.api_key) if options.api_key else None
    return request_headers(model, options, accept="text/event-stream", auth=auth)


def signature_carrier(signature: str) -> dict[str, Any]:
    """A tool call's ``extra_content`` holding its thought signature: how Gemini's
    OpenAI-compatible endpoint carries one (and `streamfn serve` after it), read back by
    `openai_chat`. https://ai.google.dev/gemini-api/docs/thought-signatures"""
    return {"google": {"thought_signature": signature}}


def call_signature(extra_content: Any) -> str | None:
    """The thought signature in a tool call's ``extra_content`` (`signature_carrier`)."""
    google = extra_content.get("google") if isinstance(extra_content, dict) else None
    found = google.get("thought_signature") if isinstance(google, dict) else None
    return found if isinstance(found, str) and found else None


def thinking_on(model: Model, options: Options) -> bool:
    """Whether the request leaves a reasoning model thinking (its sampling rules apply)."""
    return reasons(model) and options.thinking != ThinkingLevel.OFF


class _PromptDetails(msgspec.Struct, gc=False):
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


class _CompletionDetails(msgspec.Struct, gc=False):
    reasoning_tokens: int | None = None


class WireUsage(msgspec.Struct, gc=False):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    total_tokens: int | None = 0
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    prompt_cache_hit_tokens: int | None = None


def convert_usage(wire: WireUsage) -> Usage:
    """OpenAI-style usage into our convention (see `openai_chat`'s docstring)."""
    prompt = wire.prompt_tokens or 0
    completion = wire.completion_tokens or 0
    total = wire.total_tokens or 0
    pd, cd = wire.prompt_tokens_details, wire.completion_tokens_details
    cached = (pd.cached_tokens if pd else None) or wire.prompt_cache_hit_tokens or 0
    written = (pd.cache_write_tokens if pd else None) or 0
    reasoning = (cd.reasoning_tokens if cd else None) or 0
    output = completion
    if reasoning and total == prompt + completion + reasoning:
        output = completion + reasoning  # reasoning counted outside completion_tokens (xAI)
    return Usage(
        input=max(prompt - cached - written, 0),
        cache_read=cached,
        cache_write=written,
        output=output,
        reasoning=min(reasoning, output),  # a subset of output, even when a server over-reports
    )


def error_text(
    message: str | None, code: str | int | None, type: str | None, *, fallback: str
) -> tuple[str | None, str]:
    """The label and message of an OpenAI-style error object.

    A string ``code`` names the error better than ``type``; a number is a
    status, not a name. A missing message falls back to the label.
    """
    label = code if isinstance(code, str) else type
    return label, message or label or fallback


#: our error kinds -> the error ``code`` (Responses) and ``type`` (Chat Completions)
#: OpenAI's clients know; a kind not listed is a ``server_error``
ERROR_CODES: Final = {
    ErrorKind.THROTTLED: "rate_limit_exceeded",
    ErrorKind.CONTEXT_OVERFLOW: "context_length_exceeded",
    ErrorKind.AUTH: "invalid_api_key",
    ErrorKind.NETWORK: "server_error",
    ErrorKind.INVALID_REQUEST: "invalid_request_error",
    ErrorKind.CONTENT_FILTER: "content_filter",
    ErrorKind.PROTOCOL: "server_error",
    ErrorKind.LIMIT: "server_error",
    ErrorKind.BUDGET: "insufficient_quota",  # OpenAI's word for money run out
}


def function_tools(
    tools: Iterable[Tool], *, empty_description: bool = False
) -> list[dict[str, Any]]:
    """Our function tools as OpenAI's ``tools`` list (``{"type": "function", ...}``).

    An empty description is left out unless ``empty_description`` (Ollama has
    always been sent one; its server takes either)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters}
            if t.description or empty_description
            else {"name": t.name, "parameters": t.parameters},
        }
        for t in tools
    ]


def openai_tool_call_id(tool_id: str) -> str:
    """The id OpenAI accepts for a tool call first named ``tool_id``: at most 64
    characters (ids from other providers can be longer)."""
    if 0 < len(tool_id) <= 64:
        return tool_id
    return tool_id[:47] + "_" + id_digest(tool_id, 16) if tool_id else "call_empty"


def prompt_cache_key(context: Context, options: Options) -> str | None:
    """OpenAI's ``prompt_cache_key``: the caller's ``cache_key``, else (``"auto"`` or
    explicit points) a hash of what every request of a conversation starts with; None
    when caching is off or left to the provider."""
    if options.cache == "off":
        return None
    if options.cache_key is not None:
        return options.cache_key
    if options.cache is None:
        return None
    prefix = msgspec.json.encode([context.system_prompt, context.tools, context.messages[:1]])
    return "streamfn-" + hashlib.sha256(prefix).hexdigest()[:32]
