"""The Anthropic Messages request: content blocks, tools, thinking budget and
sampling, with signed thinking replayed where the model demands it (see
`anthropic` for the decisions the response side makes)."""

from __future__ import annotations

from typing import Any, Final

from streamfn.core._messages import (
    AssistantMessage,
    Context,
    Message,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from streamfn.core._options import Options, ThinkingLevel
from streamfn.core.catalogue._capabilities import (
    fit_max_tokens,
    fit_sampling,
    output_limit,
    unsupported,
)
from streamfn.core.catalogue._models import Model
from streamfn.core.content._server_tools import tool_objects
from streamfn.core.dialects._claude_thinking import claude_thinking
from streamfn.core.dialects.anthropic._cache_marks import mark_anthropic
from streamfn.core.dialects.anthropic._parts import anthropic_output_format, anthropic_part
from streamfn.core.json._structured import structured_request
from streamfn.core.providers._base import HTTPRequest, json_request, request_headers
from streamfn.core.providers._convert import opaque_object, prepare_messages

__all__ = ["API_VERSION", "THINKING_BUDGETS", "build_request"]

API_VERSION: Final = "2023-06-01"
_BASE_URL: Final = "https://api.anthropic.com"

#: budget_tokens per thinking level; 1024 is Anthropic's minimum.
THINKING_BUDGETS: Final = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 4096,
    ThinkingLevel.MEDIUM: 10_240,
    ThinkingLevel.HIGH: 32_000,
    ThinkingLevel.XHIGH: 64_000,
}


def _url(model: Model, options: Options) -> str:
    base = (options.base_url or model.base_url or _BASE_URL).rstrip("/")
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def _headers(model: Model, options: Options) -> list[tuple[str, str]]:
    auth = ("x-api-key", options.api_key) if options.api_key else None
    headers = request_headers(model, options, accept="text/event-stream", auth=auth)
    # the API version goes before the caller's headers, which may pin another one
    names = {k.lower() for k in (model.headers or {})} | {
        k.lower() for k in (options.headers or {})
    }
    if "anthropic-version" not in names:
        headers.insert(2, ("anthropic-version", API_VERSION))
    return headers


def _user_blocks(content: list[UserContent]) -> list[dict[str, Any]]:
    """Anthropic rejects empty and whitespace-only text blocks (400), so they are left out."""
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextContent):
            if part.text.strip():
                blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append(anthropic_part(part))
    return blocks


def _assistant_blocks(message: AssistantMessage) -> list[Any]:
    blocks: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            # prepare_messages kept thinking only when this very model produced it.
            if block.redacted:
                if block.signature:
                    blocks.append({"type": "redacted_thinking", "data": block.signature})
            elif block.signature:
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
            elif block.thinking.strip():  # unsigned (cut-off) thinking would be rejected
                blocks.append({"type": "text", "text": block.thinking})
        elif isinstance(block, ToolCall):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
        elif isinstance(block, OpaqueContent) and (raw := opaque_object(block)) is not None:
            blocks.append(raw)  # re-encoded from the parsed object, never pasted as text
    return blocks


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    content = _user_blocks(message.content)
    if content:
        result["content"] = content
    if message.is_error:
        result["is_error"] = True
    return result


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the user turn collecting tool results
    for message in messages:
        if isinstance(message, ToolResultMessage):
            if results is None:
                results = []
                out.append({"role": "user", "content": results})
            results.append(_tool_result(message))
            continue
        results = None
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                if message.content.strip():
                    out.append({"role": "user", "content": message.content})
                continue
            blocks = _user_blocks(message.content)
            if blocks:
                out.append({"role": "user", "content": blocks})
        else:
            blocks = _assistant_blocks(message)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
    return out


def _tool_choice(choice: str) -> dict[str, str]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "none":
        return {"type": "none"}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def build_request(model: Model, context: Context, options: Options) -> HTTPRequest:
    """The HTTP request for one streamed message; pure.

    ``max_tokens`` is required by Anthropic (default: the model's output
    limit). Thinking is budget or adaptive by the model's generation (see
    `claude_thinking`); with a budget ``max_tokens`` counts the thinking too
    and must exceed it. What the model's capabilities rule out
    (sampling knobs while thinking, both temperature and top_p on Claude 4.5,
    thinking with a forced tool choice or with a replayed tool-use turn that
    has no thinking block of its own) is dropped or clamped with a warning.
    """
    plan = structured_request(model, context, options)
    context, options = plan.context, plan.options  # emulated: the forced answer tool
    messages = prepare_messages(context, model)
    max_tokens = fit_max_tokens(model, options.max_tokens or output_limit(model))
    body: dict[str, Any] = {"model": model.id, "max_tokens": max_tokens, "stream": True}
    if context.system_prompt:
        body["system"] = context.system_prompt
    body["messages"] = _messages(messages)
    if context.tools:
        tools: list[dict[str, Any]] = []
        for tool in context.function_tools:
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            spec["input_schema"] = tool.parameters
            tools.append(spec)
        tools.extend(tool_objects(model, context))
        body["tools"] = tools
        if options.tool_choice:
            body["tool_choice"] = _tool_choice(options.tool_choice)
    thinking = claude_thinking(
        model, context, options, messages, budgets=THINKING_BUDGETS, max_tokens=options.max_tokens
    )
    if thinking.thinking is not None:
        body["thinking"] = thinking.thinking
        if thinking.thinking["type"] == "enabled":
            body["max_tokens"] = thinking.max_tokens
    wire = ("temperature", "top_p", "top_k", "stop")
    thinks = thinking.thinking is not None
    for name, value in fit_sampling(model, options, thinking=thinks, wire=wire).items():
        body["stop_sequences" if name == "stop" else name] = (
            list(value) if name == "stop" else value
        )
    if (options.n or 1) > 1:
        unsupported(model, "n", "has no field in the anthropic API; one answer is asked for")
    output_config: dict[str, Any] = {}
    if thinking.effort is not None:
        output_config["effort"] = thinking.effort
    if plan.native is not None:
        output_config["format"] = anthropic_output_format(plan.native)
    if output_config:
        body["output_config"] = output_config
    mark_anthropic(body, model, options)
    return json_request(_url(model, options), _headers(model, options), body, options)
