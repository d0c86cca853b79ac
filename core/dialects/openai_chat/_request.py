"""The Chat Completions request: messages, tools, sampling and reasoning knobs,
fitted to one OpenAI-compatible server's `Quirks` (see `openai_chat` for the
decisions the response side makes)."""

from __future__ import annotations

import logging
from typing import Any, Final

from streamfn.core._messages import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from streamfn.core._options import Options, ThinkingLevel
from streamfn.core.catalogue._capabilities import (
    capabilities_for,
    effort_for_off,
    fit_effort,
    fit_sampling,
    reasons,
)
from streamfn.core.catalogue._models import Model
from streamfn.core.dialects._openai_common import (
    Quirks,
    function_tools,
    openai_headers,
    prompt_cache_key,
    quirks_for,
    signature_carrier,
    thinking_on,
)
from streamfn.core.dialects.openai_chat._parts import openai_chat_part, openai_response_format
from streamfn.core.json._structured import structured_request
from streamfn.core.providers._base import HTTPRequest, api_root, json_request
from streamfn.core.providers._convert import joined_text, prepare_messages, tool_arguments

__all__ = ["build_request"]

log = logging.getLogger("streamfn")

_DEFAULT_AZURE_API_VERSION: Final = "2024-10-21"


def _url(model: Model, options: Options) -> str:
    quirks = quirks_for(model.provider)
    base = (options.base_url or model.base_url).rstrip("/")
    if quirks.azure_deployments and not base.endswith("/openai/v1"):
        extra = model.extra or {}
        deployment = extra.get("deployment", model.id)
        version = extra.get("api_version", _DEFAULT_AZURE_API_VERSION)
        return f"{base}/openai/deployments/{deployment}/chat/completions?api-version={version}"
    return f"{api_root(base, '/v1', only_bare=True)}/chat/completions"


def _user_content(content: str | list[UserContent]) -> str | list[dict[str, Any]]:
    """A plain string unless images are present: several compatible servers
    (DeepSeek among them) accept only string content."""
    if isinstance(content, str):
        return content
    if all(isinstance(part, TextContent) for part in content):
        return joined_text(content)
    return [
        {"type": "text", "text": p.text} if isinstance(p, TextContent) else openai_chat_part(p, n)
        for n, p in enumerate(content)
    ]


def _assistant(
    message: AssistantMessage, quirks: Quirks, reasoning_field: bool
) -> dict[str, Any] | None:
    """One assistant message. ``reasoning_field``: the model demands the reasoning
    field on replayed tool-call turns (DeepSeek thinking mode), so a turn that has
    none (begun elsewhere) gets an empty one, as DeepSeek's docs allow."""
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if quirks.replay_thinking:
        thinking = "".join(
            b.thinking for b in message.content if isinstance(b, ThinkingContent) and not b.redacted
        )
        if thinking or (reasoning_field and calls):
            out[quirks.replay_thinking] = thinking
    if calls:
        # a signature (kept by prepare_messages for its own provider only) goes back the
        # way it came: Gemini's extra_content carrier (see openai_chat)
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": tool_arguments(c)},
                **({"extra_content": signature_carrier(c.signature)} if c.signature else {}),
            }
            for c in calls
        ]
    if out["content"] is None and not calls and len(out) == 2:
        return None
    return out


def _tool_result(message: ToolResultMessage, quirks: Quirks) -> dict[str, Any]:
    result: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": message.tool_call_id,
        "content": joined_text(message.content),
    }
    if quirks.tool_result_name:
        result["name"] = message.tool_name
    return result


def _tool_images(message: ToolResultMessage) -> list[dict[str, Any]]:
    images = [p for p in message.content if isinstance(p, ImageContent)]
    if not images:
        return []
    return [{"type": "text", "text": f"Images returned by {message.tool_name}:"}] + [
        openai_chat_part(i) for i in images
    ]


def _messages(
    messages: list[Message], context: Context, model: Model, quirks: Quirks
) -> list[dict[str, Any]]:
    """Tool messages take text only, and must directly follow the assistant turn that
    called them: images a tool returned go in one user message after the whole run
    of tool messages, so they are not lost and parallel results stay together."""
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if quirks.developer_role and reasons(model) else "system"
        out.append({"role": role, "content": context.system_prompt})
    reasoning_field = capabilities_for(model).replay_tool_calls == "reasoning_field"
    images: list[dict[str, Any]] = []  # images of the current run of tool results
    for message in messages:
        if isinstance(message, ToolResultMessage):
            out.append(_tool_result(message, quirks))
            images.extend(_tool_images(message))
            continue
        if images:
            out.append({"role": "user", "content": images})
            images = []
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message.content)})
        else:
            converted = _assistant(message, quirks, reasoning_field)
            if converted is not None:
                out.append(converted)
    if images:
        out.append({"role": "user", "content": images})
    return out


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _reasoning(model: Model, options: Options, quirks: Quirks) -> dict[str, Any]:
    level = options.thinking
    if level is None and options.thinking_budget is None:
        return {}
    style = quirks.reasoning
    if style == "openrouter":
        if options.thinking_budget is not None:
            return {"reasoning": {"max_tokens": options.thinking_budget}}
        if level == ThinkingLevel.OFF:
            return {"reasoning": {"enabled": False}}
        assert level is not None
        return {"reasoning": {"effort": "low" if level == ThinkingLevel.MINIMAL else str(level)}}
    if style == "zai":
        return {"thinking": {"type": "disabled" if level == ThinkingLevel.OFF else "enabled"}}
    if level is None or style == "none" or not reasons(model):
        if level is not None:
            log.debug("%s: thinking=%s not sent (no knob for this model)", model.key, level)
        return {}
    # a level is named as the effort it asks for
    off = level == ThinkingLevel.OFF
    effort = effort_for_off(model) if off else fit_effort(model, str(level))
    return {"reasoning_effort": effort} if effort is not None else {}


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed chat completion; pure."""
    quirks = quirks_for(model.provider)
    url = _url(model, options)
    plan = structured_request(model, context, options)
    context, options = plan.context, plan.options
    body: dict[str, Any] = {}
    if "/openai/deployments/" not in url:  # an Azure deployment URL already names the model
        body["model"] = model.id
    body["messages"] = _messages(prepare_messages(context, model), context, model, quirks)
    body["stream"] = True
    if quirks.stream_options:
        body["stream_options"] = {"include_usage": True}
    if context.function_tools:
        body["tools"] = function_tools(context.function_tools)
        if options.tool_choice:
            body["tool_choice"] = _tool_choice(options.tool_choice)
    search = web_search_options(context)
    if search is not None:
        body["web_search_options"] = search
    wire = ("temperature", "top_p", "stop", "seed")
    fitted = fit_sampling(model, options, thinking=thinking_on(model, options), wire=wire)
    for name, value in fitted.items():
        field = quirks.seed_field if name == "seed" else name
        body[field] = list(value) if name == "stop" else value
    if options.max_tokens is not None:
        body[quirks.max_tokens_field] = options.max_tokens
    if options.n is not None:
        body["n"] = options.n
    body.update(_reasoning(model, options, quirks))
    if plan.native is not None:
        body["response_format"] = openai_response_format(plan.native)
    if quirks.prompt_cache_key and (key := prompt_cache_key(context, options)):
        body["prompt_cache_key"] = key
    return json_request(url, openai_headers(model, options, quirks), body, options)


def web_search_options(context: Context) -> dict[str, Any] | None:
    """Chat Completions' ``web_search_options`` for a ``web_search`` server tool."""
    for tool in context.server_tools:
        if tool.type == "web_search":
            return dict(tool.config)
    return None
