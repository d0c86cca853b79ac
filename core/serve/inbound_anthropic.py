"""Anthropic Messages requests -> our `Context` and `Options` (``/v1/messages``)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from ..options import Options, ThinkingLevel
from .request_fields import (
    BadRequest,
    ClientRequest,
    check_fields,
    check_ranges,
    decode_body,
    integer,
    number,
    optional,
    require,
    stop_list,
    stream_flag,
    typed,
)

__all__ = ["parse_anthropic_request"]


def _anthropic_blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise BadRequest(f"{where}: must be a string or a list of content blocks")
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise BadRequest(f"{where}[{i}]: must be an object with a 'type'")
    return content


def _anthropic_image(block: dict[str, Any], where: str) -> ImageContent:
    source = require(block, "source", dict, where)
    if source.get("type") != "base64":
        raise BadRequest(f"{where}.source: only base64 images are supported")
    return ImageContent(
        data=require(source, "data", str, f"{where}.source"),
        mime_type=require(source, "media_type", str, f"{where}.source"),
    )


def _anthropic_result_content(content: Any, where: str) -> list[UserContent]:
    if content is None:
        return []
    out: list[UserContent] = []
    for i, block in enumerate(_anthropic_blocks(content, where)):
        if block["type"] == "text":
            out.append(TextContent(text=require(block, "text", str, f"{where}[{i}]")))
        elif block["type"] == "image":
            out.append(_anthropic_image(block, f"{where}[{i}]"))
    return out


def _anthropic_message(msg: Any, i: int, out: list[Message]) -> None:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise BadRequest(f"{where}: must be an object")
    role = require(msg, "role", str, where)
    blocks = _anthropic_blocks(msg.get("content"), f"{where}.content")
    if role == "user":
        _user_blocks(blocks, where, out)
    elif role == "assistant":
        content = [_assistant_block(b, f"{where}.content[{j}]") for j, b in enumerate(blocks)]
        out.append(AssistantMessage(content=content))
    else:
        raise BadRequest(f"{where}.role: must be 'user' or 'assistant'")


def _user_blocks(blocks: list[dict[str, Any]], where: str, out: list[Message]) -> None:
    """A user turn; each ``tool_result`` block becomes a message of its own, in order."""
    user: list[UserContent] = []
    for j, block in enumerate(blocks):
        w = f"{where}.content[{j}]"
        kind = block["type"]
        if kind == "text":
            user.append(TextContent(text=require(block, "text", str, w)))
        elif kind == "image":
            user.append(_anthropic_image(block, w))
        elif kind == "tool_result":
            if user:
                out.append(UserMessage(content=user))
                user = []
            out.append(
                ToolResultMessage(
                    tool_call_id=require(block, "tool_use_id", str, w),
                    tool_name="",
                    content=_anthropic_result_content(block.get("content"), f"{w}.content"),
                    is_error=bool(block.get("is_error")),
                )
            )
        else:
            raise BadRequest(f"{w}: unsupported block type {kind!r} in a user message")
    if user:
        out.append(UserMessage(content=user))


def _assistant_block(block: dict[str, Any], w: str) -> AssistantContent:
    kind = block["type"]
    if kind == "text":
        return TextContent(text=require(block, "text", str, w))
    if kind == "thinking":
        return ThinkingContent(
            thinking=require(block, "thinking", str, w), signature=block.get("signature")
        )
    if kind == "redacted_thinking":
        return ThinkingContent(thinking="", signature=block.get("data"), redacted=True)
    if kind == "tool_use":
        args = block.get("input") or {}
        if not isinstance(args, dict):
            raise BadRequest(f"{w}.input: must be an object")
        return ToolCall(
            id=require(block, "id", str, w),
            name=require(block, "name", str, w),
            arguments=args,
            arguments_json=msgspec.json.encode(args).decode(),
        )
    raise BadRequest(f"{w}: unsupported block type {kind!r} in an assistant message")


def _anthropic_system(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    texts = []
    for i, block in enumerate(_anthropic_blocks(value, "system")):
        if block["type"] != "text":
            raise BadRequest(f"system[{i}]: only text blocks are allowed")
        texts.append(require(block, "text", str, f"system[{i}]"))
    return "\n\n".join(texts)


#: Anthropic Messages fields this server honours
_ANTHROPIC_FIELDS: Final = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "stream",
        "system",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "tools",
        "tool_choice",
        "thinking",
    }
)
#: accepted and not acted on (attribution, priority hints)
_ANTHROPIC_IGNORED: Final = frozenset({"metadata", "service_tier"})


def parse_anthropic_request(body: bytes) -> ClientRequest:
    obj = decode_body(body)
    check_fields(obj, _ANTHROPIC_FIELDS, _ANTHROPIC_IGNORED, "request")
    model = require(obj, "model", str, "request")
    max_tokens = integer(obj, "max_tokens", "request")
    if max_tokens is None:
        raise BadRequest("request: missing required field 'max_tokens'")
    messages = require(obj, "messages", list, "request")
    if not messages:
        raise BadRequest("request.messages: must not be empty")
    stream = stream_flag(obj, "request")
    out: list[Message] = []
    for i, msg in enumerate(messages):
        _anthropic_message(msg, i, out)
    thinking_cfg = optional(obj, "thinking", dict, "request") or {}
    thinking = None
    budget = None
    if thinking_cfg.get("type") == "enabled":
        thinking = ThinkingLevel.MEDIUM
        budget = integer(thinking_cfg, "budget_tokens", "request.thinking")
    options = Options(
        temperature=number(obj, "temperature", "request"),
        top_p=number(obj, "top_p", "request"),
        top_k=integer(obj, "top_k", "request"),
        max_tokens=max_tokens,
        stop=stop_list(obj.get("stop_sequences"), "request.stop_sequences"),
        tool_choice=_anthropic_tool_choice(optional(obj, "tool_choice", dict, "request")),
        thinking=thinking,
        thinking_budget=budget,
    )
    check_ranges(options, "request", {"thinking_budget": "thinking.budget_tokens"})
    system = _anthropic_system(obj.get("system"))
    tools = _anthropic_tools(optional(obj, "tools", list, "request"))
    return ClientRequest(
        model=model,
        context=typed(Context(messages=out, system_prompt=system, tools=tools)),
        options=options,
        stream=stream,
        include_usage=True,
    )


def _anthropic_tools(tools: list[Any] | None) -> list[Tool]:
    out = []
    for i, tool in enumerate(tools or []):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise BadRequest(f"{where}: must be an object")
        out.append(
            Tool(
                name=require(tool, "name", str, where),
                description=optional(tool, "description", str, where) or "",
                parameters=optional(tool, "input_schema", dict, where)
                or {"type": "object", "properties": {}},
            )
        )
    return out


def _anthropic_tool_choice(choice: dict[str, Any] | None) -> str | None:
    if not choice:
        return None
    kind = choice.get("type")
    if kind == "tool":
        return require(choice, "name", str, "request.tool_choice")  # type: ignore[no-any-return]
    tool_choice = {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))
    if tool_choice is None:
        raise BadRequest(f"request.tool_choice.type: unknown value {kind!r}")
    return tool_choice
