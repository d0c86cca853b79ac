"""Provider-run tools (web search, code execution) beside function tools.

A `ServerTool` in `Context.tools` becomes each wire format's own tool object:

| type | anthropic | openai-responses | openai-chat | gemini |
|---|---|---|---|---|
| ``web_search`` | ``web_search_20250305`` | ``web_search`` | ``web_search_options`` (search models) | ``googleSearch`` |
| ``code_execution`` | ``code_execution_20250825`` | ``code_interpreter`` (auto container) | no | ``codeExecution`` |

Bedrock Converse and Ollama run no tools of their own. Which types a model
takes is its `Capabilities` ``server_tools`` (unset: the table above); a type
it cannot take is an `UnsupportedInput` before any request is sent, naming
the provider and the alternatives. ``config`` is merged into the tool object
(never over its ``type`` or ``name``); a key the wire format's tool does not
take (`CONFIG_KEYS`: ``max_uses`` is Anthropic's alone) is an `UnsupportedInput`
naming the key, the provider and the keys it takes, instead of the provider's
400. ``Options.extra_body`` is still deep-merged over the whole body last, for
anything this table does not cover.

These tools are billed to whoever holds the key: `streamfn serve` refuses a
client request that carries one unless the operator allows that type
(``--allow-server-tools``; see `streamfn.core.dialects._request_fields.refuse_server_tools`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from .._messages import Context, ServerTool
from ..catalogue._capabilities import UnsupportedInput, capabilities_for

if TYPE_CHECKING:
    from ..catalogue._models import Model

__all__ = [
    "CONFIG_KEYS",
    "SERVER_TOOL_TYPES",
    "check_server_tools",
    "server_tools_for",
    "tool_objects",
    "web_search_options",
]

SERVER_TOOL_TYPES: Final = ("web_search", "code_execution")

#: the tool object for each (wire format, type); config is merged over it
_OBJECTS: Final[dict[str, dict[str, dict[str, Any]]]] = {
    "anthropic": {
        "web_search": {"type": "web_search_20250305", "name": "web_search"},
        "code_execution": {"type": "code_execution_20250825", "name": "code_execution"},
    },
    "openai-responses": {
        "web_search": {"type": "web_search"},
        "code_execution": {"type": "code_interpreter", "container": {"type": "auto"}},
    },
    "gemini": {
        "web_search": {"googleSearch": {}},
        "code_execution": {"codeExecution": {}},
    },
}
#: The ``config`` keys each (wire format, type) takes: the fields of the official SDKs'
#: tool types besides the type and name we set (anthropic ``WebSearchTool20250305Param``
#: and ``CodeExecutionTool20250825Param``; openai ``WebSearchToolParam``, ``CodeInterpreter``
#: and Chat Completions' ``WebSearchOptions``; google-genai ``GoogleSearch``, in the REST
#: API's camelCase, and ``ToolCodeExecution``, which has none).
#: https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
#: https://developers.openai.com/api/docs/guides/tools-web-search
#: https://ai.google.dev/gemini-api/docs/google-search
_CLAUDE_TOOL_KEYS: Final = frozenset(
    {"allowed_callers", "cache_control", "defer_loading", "strict"}
)
CONFIG_KEYS: Final[dict[str, dict[str, frozenset[str]]]] = {
    "anthropic": {
        "web_search": _CLAUDE_TOOL_KEYS
        | {"allowed_domains", "blocked_domains", "max_uses", "user_location"},
        "code_execution": _CLAUDE_TOOL_KEYS,
    },
    "openai-responses": {
        "web_search": frozenset(
            {"filters", "search_context_size", "user_location", "external_web_access"}
        ),
        "code_execution": frozenset({"container"}),
    },
    "openai-chat": {"web_search": frozenset({"search_context_size", "user_location"})},
    "gemini": {
        "web_search": frozenset(
            {"searchTypes", "blockingConfidence", "excludeDomains", "timeRangeFilter"}
        ),
        "code_execution": frozenset(),
    },
}
#: OpenAI-compatible providers whose Chat Completions takes ``web_search_options``
_CHAT_SEARCH_PROVIDERS: Final = frozenset({"openai", "azure", "openrouter"})


def server_tools_for(model: Model) -> tuple[str, ...]:
    """The server-tool types ``model`` takes: its capabilities', else its format's."""
    declared = capabilities_for(model).server_tools
    if declared is not None:
        return declared
    if model.api == "openai-chat":
        return ("web_search",) if model.provider in _CHAT_SEARCH_PROVIDERS else ()
    return tuple(_OBJECTS.get(model.api, {}))


def check_server_tools(tools: list[ServerTool], model: Model) -> None:
    """Refuse, before anything is sent, a server tool the model has not, or a ``config``
    key its wire format's tool does not take (`CONFIG_KEYS`)."""
    takes = server_tools_for(model)
    for tool in tools:
        if tool.type not in takes:
            offered = ", ".join(takes) if takes else "none"
            raise UnsupportedInput(
                f"{model.provider} ({model.api} API, model {model.id}) has no server tool "
                f"{tool.type!r} (it offers: {offered}); use a provider that runs it "
                "(anthropic, openai-responses, gemini) or give the model a function tool "
                "that does the work"
            )
        accepted = CONFIG_KEYS.get(model.api, {}).get(tool.type)
        if accepted is None:
            continue  # a format this table does not describe: its config goes as given
        unknown = sorted(set(tool.config) - accepted)
        if unknown:
            listed = ", ".join(sorted(accepted)) or "none"
            raise UnsupportedInput(
                f"{model.provider} ({model.api} API) takes no {', '.join(map(repr, unknown))} "
                f"in a {tool.type} server tool's config; the keys it takes: {listed}. "
                "Leave the key out for this provider (each provider names these settings its own way)"
            )


def _merged(base: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    out = {key: dict(value) if isinstance(value, dict) else value for key, value in base.items()}
    if len(out) == 1 and isinstance(next(iter(out.values())), dict):  # Gemini: {"googleSearch": {}}
        key = next(iter(out))
        out[key].update(config)
        return out
    out.update({k: v for k, v in config.items() if k not in ("type", "name")})
    return out


def tool_objects(model: Model, context: Context) -> list[dict[str, Any]]:
    """The tool objects of ``context``'s server tools for ``model``'s format (checked
    already by `check_server_tools`)."""
    table = _OBJECTS.get(model.api, {})
    return [_merged(table[t.type], t.config) for t in context.server_tools if t.type in table]


def web_search_options(context: Context) -> dict[str, Any] | None:
    """Chat Completions' ``web_search_options`` for a ``web_search`` server tool."""
    for tool in context.server_tools:
        if tool.type == "web_search":
            return dict(tool.config)
    return None
