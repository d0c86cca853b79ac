"""Client requests in OpenAI or Anthropic dialect -> our `Context` and `Options`.

The inverse of the request builders, used by `streamfn serve`: whatever a
client speaks, the server sees one `Context`. Malformed requests raise
`BadRequest` with a message that names the offending field, which the
server returns as a 400 in the client's own error shape.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .accumulate import _parse_arguments
from .messages import (
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
from .options import Options, ThinkingLevel

__all__ = ["BadRequest", "ClientRequest", "parse_anthropic_request", "parse_openai_request"]


class BadRequest(ValueError):
    """The client's request is malformed; the message says which field and why."""


class ClientRequest(msgspec.Struct, kw_only=True):
    model: str
    context: Context
    options: Options
    stream: bool = False
    include_usage: bool = False


def _decode(body: bytes) -> dict[str, Any]:
    try:
        obj = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise BadRequest("request body must be a JSON object")
    return obj


def _req(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise BadRequest(f"{where}: missing required field {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise BadRequest(f"{where}.{key}: wrong type {type(value).__name__}")
    return value


def _opt(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(key)
    if value is not None and not isinstance(value, kind):
        raise BadRequest(f"{where}.{key}: wrong type {type(value).__name__}")
    return value


def _number(obj: dict[str, Any], key: str, where: str) -> float | None:
    value = _opt(obj, key, (int, float), where)
    return None if value is None else float(value)


def _int(obj: dict[str, Any], key: str, where: str) -> int | None:
    value = _opt(obj, key, int, where)
    if isinstance(value, bool):
        raise BadRequest(f"{where}.{key}: wrong type bool")
    return value  # type: ignore[no-any-return]


def _data_url_image(url: str, where: str) -> ImageContent:
    if not url.startswith("data:") or ";base64," not in url:
        raise BadRequest(f"{where}: only base64 data: URLs are supported for images")
    head, data = url[5:].split(";base64,", 1)
    return ImageContent(data=data, mime_type=head or "image/png")


def _stop(value: Any, where: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise BadRequest(f"{where}: must be a string or a list of strings")


# -- OpenAI Chat Completions ---------------------------------------------------


def _openai_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text":
                raise BadRequest(f"{where}[{i}]: only text parts are allowed here")
            parts.append(_req(part, "text", str, f"{where}[{i}]"))
        return "".join(parts)
    raise BadRequest(f"{where}: must be a string or a list of parts")


def _openai_user_content(content: Any, where: str) -> str | list[UserContent]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"{where}: must be a string or a list of parts")
    out: list[UserContent] = []
    for i, part in enumerate(content):
        w = f"{where}[{i}]"
        if not isinstance(part, dict):
            raise BadRequest(f"{w}: must be an object")
        kind = part.get("type")
        if kind == "text":
            out.append(TextContent(text=_req(part, "text", str, w)))
        elif kind == "image_url":
            image = _req(part, "image_url", dict, w)
            out.append(_data_url_image(_req(image, "url", str, f"{w}.image_url"), w))
        else:
            raise BadRequest(f"{w}: unsupported content part type {kind!r}")
    return out


def _openai_message(msg: Any, i: int, system: list[str], out: list[Message]) -> None:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise BadRequest(f"{where}: must be an object")
    role = _req(msg, "role", str, where)
    if role in ("system", "developer"):
        system.append(_openai_text(msg.get("content"), f"{where}.content"))
    elif role == "user":
        out.append(
            UserMessage(content=_openai_user_content(msg.get("content"), f"{where}.content"))
        )
    elif role == "assistant":
        content: list[AssistantContent] = []
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            content.append(ThinkingContent(thinking=reasoning))
        text = _openai_text(msg.get("content"), f"{where}.content")
        if text:
            content.append(TextContent(text=text))
        for j, call in enumerate(_opt(msg, "tool_calls", list, where) or []):
            w = f"{where}.tool_calls[{j}]"
            if not isinstance(call, dict):
                raise BadRequest(f"{w}: must be an object")
            fn = _req(call, "function", dict, w)
            args_json = fn.get("arguments") or "{}"
            if not isinstance(args_json, str):
                raise BadRequest(f"{w}.function.arguments: must be a JSON string")
            # Unusable arguments (invalid, not an object) replay as {}; the raw
            # text still travels in arguments_json.
            args = _parse_arguments(args_json)[0]
            content.append(
                ToolCall(
                    id=_req(call, "id", str, w),
                    name=_req(fn, "name", str, f"{w}.function"),
                    arguments=args,
                    arguments_json=args_json,
                )
            )
        out.append(AssistantMessage(content=content))
    elif role == "tool":
        text = _openai_text(msg.get("content"), f"{where}.content")
        out.append(
            ToolResultMessage(
                tool_call_id=_req(msg, "tool_call_id", str, where),
                tool_name=msg.get("name") or "",
                content=[TextContent(text=text)],
            )
        )
    else:
        raise BadRequest(f"{where}.role: unknown role {role!r}")


def _openai_tools(tools: list[Any] | None) -> list[Tool]:
    out = []
    for i, tool in enumerate(tools or []):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            raise BadRequest(f"{where}: only function tools are supported")
        fn = _req(tool, "function", dict, where)
        out.append(
            Tool(
                name=_req(fn, "name", str, f"{where}.function"),
                description=fn.get("description") or "",
                parameters=fn.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    return out


def _openai_tool_choice(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        name = value["function"].get("name")
        if isinstance(name, str):
            return name
    raise BadRequest("tool_choice: must be 'auto', 'none', 'required' or a function")


def parse_openai_request(body: bytes) -> ClientRequest:
    obj = _decode(body)
    model = _req(obj, "model", str, "request")
    messages = _req(obj, "messages", list, "request")
    if not messages:
        raise BadRequest("request.messages: must not be empty")
    system: list[str] = []
    out: list[Message] = []
    for i, msg in enumerate(messages):
        _openai_message(msg, i, system, out)
    n = _int(obj, "n", "request")
    if n is not None and n != 1:
        raise BadRequest("request.n: only n=1 is supported (one message per stream)")
    effort = _opt(obj, "reasoning_effort", str, "request")
    thinking = None
    if effort:
        try:
            thinking = ThinkingLevel(effort)
        except ValueError:
            raise BadRequest(f"request.reasoning_effort: unknown value {effort!r}") from None
    stream_options = _opt(obj, "stream_options", dict, "request") or {}
    max_tokens = _int(obj, "max_completion_tokens", "request") or _int(obj, "max_tokens", "request")
    options = Options(
        temperature=_number(obj, "temperature", "request"),
        top_p=_number(obj, "top_p", "request"),
        max_tokens=max_tokens,
        stop=_stop(obj.get("stop"), "request.stop"),
        seed=_int(obj, "seed", "request"),
        tool_choice=_openai_tool_choice(obj.get("tool_choice")),
        thinking=thinking,
    )
    return ClientRequest(
        model=model,
        context=Context(
            messages=out,
            system_prompt="\n\n".join(system) if system else None,
            tools=_openai_tools(_opt(obj, "tools", list, "request")),
        ),
        options=options,
        stream=bool(obj.get("stream")),
        include_usage=bool(stream_options.get("include_usage")),
    )


# -- Anthropic Messages ------------------------------------------------------------


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
    source = _req(block, "source", dict, where)
    if source.get("type") != "base64":
        raise BadRequest(f"{where}.source: only base64 images are supported")
    return ImageContent(
        data=_req(source, "data", str, f"{where}.source"),
        mime_type=_req(source, "media_type", str, f"{where}.source"),
    )


def _anthropic_result_content(content: Any, where: str) -> list[UserContent]:
    if content is None:
        return []
    out: list[UserContent] = []
    for i, block in enumerate(_anthropic_blocks(content, where)):
        if block["type"] == "text":
            out.append(TextContent(text=_req(block, "text", str, f"{where}[{i}]")))
        elif block["type"] == "image":
            out.append(_anthropic_image(block, f"{where}[{i}]"))
    return out


def _anthropic_message(msg: Any, i: int, out: list[Message]) -> None:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise BadRequest(f"{where}: must be an object")
    role = _req(msg, "role", str, where)
    blocks = _anthropic_blocks(msg.get("content"), f"{where}.content")
    if role == "user":
        user: list[UserContent] = []
        for j, block in enumerate(blocks):
            w = f"{where}.content[{j}]"
            kind = block["type"]
            if kind == "text":
                user.append(TextContent(text=_req(block, "text", str, w)))
            elif kind == "image":
                user.append(_anthropic_image(block, w))
            elif kind == "tool_result":
                if user:
                    out.append(UserMessage(content=user))
                    user = []
                out.append(
                    ToolResultMessage(
                        tool_call_id=_req(block, "tool_use_id", str, w),
                        tool_name="",
                        content=_anthropic_result_content(block.get("content"), f"{w}.content"),
                        is_error=bool(block.get("is_error")),
                    )
                )
            else:
                raise BadRequest(f"{w}: unsupported block type {kind!r} in a user message")
        if user:
            out.append(UserMessage(content=user))
    elif role == "assistant":
        content: list[AssistantContent] = []
        for j, block in enumerate(blocks):
            w = f"{where}.content[{j}]"
            kind = block["type"]
            if kind == "text":
                content.append(TextContent(text=_req(block, "text", str, w)))
            elif kind == "thinking":
                content.append(
                    ThinkingContent(
                        thinking=_req(block, "thinking", str, w), signature=block.get("signature")
                    )
                )
            elif kind == "redacted_thinking":
                content.append(
                    ThinkingContent(thinking="", signature=block.get("data"), redacted=True)
                )
            elif kind == "tool_use":
                args = block.get("input") or {}
                if not isinstance(args, dict):
                    raise BadRequest(f"{w}.input: must be an object")
                content.append(
                    ToolCall(
                        id=_req(block, "id", str, w),
                        name=_req(block, "name", str, w),
                        arguments=args,
                        arguments_json=msgspec.json.encode(args).decode(),
                    )
                )
            else:
                raise BadRequest(f"{w}: unsupported block type {kind!r} in an assistant message")
        out.append(AssistantMessage(content=content))
    else:
        raise BadRequest(f"{where}.role: must be 'user' or 'assistant'")


def _anthropic_system(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    texts = []
    for i, block in enumerate(_anthropic_blocks(value, "system")):
        if block["type"] != "text":
            raise BadRequest(f"system[{i}]: only text blocks are allowed")
        texts.append(_req(block, "text", str, f"system[{i}]"))
    return "\n\n".join(texts)


def parse_anthropic_request(body: bytes) -> ClientRequest:
    obj = _decode(body)
    model = _req(obj, "model", str, "request")
    max_tokens = _req(obj, "max_tokens", int, "request")
    messages = _req(obj, "messages", list, "request")
    if not messages:
        raise BadRequest("request.messages: must not be empty")
    out: list[Message] = []
    for i, msg in enumerate(messages):
        _anthropic_message(msg, i, out)
    tools = []
    for i, tool in enumerate(_opt(obj, "tools", list, "request") or []):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise BadRequest(f"{where}: must be an object")
        tools.append(
            Tool(
                name=_req(tool, "name", str, where),
                description=tool.get("description") or "",
                parameters=tool.get("input_schema") or {"type": "object", "properties": {}},
            )
        )
    choice = _opt(obj, "tool_choice", dict, "request")
    tool_choice = None
    if choice:
        kind = choice.get("type")
        tool_choice = {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))
        if kind == "tool":
            tool_choice = _req(choice, "name", str, "request.tool_choice")
        elif tool_choice is None:
            raise BadRequest(f"request.tool_choice.type: unknown value {kind!r}")
    thinking_cfg = _opt(obj, "thinking", dict, "request") or {}
    thinking = None
    budget = None
    if thinking_cfg.get("type") == "enabled":
        thinking = ThinkingLevel.MEDIUM
        budget = _int(thinking_cfg, "budget_tokens", "request.thinking")
    options = Options(
        temperature=_number(obj, "temperature", "request"),
        top_p=_number(obj, "top_p", "request"),
        top_k=_int(obj, "top_k", "request"),
        max_tokens=max_tokens,
        stop=_stop(obj.get("stop_sequences"), "request.stop_sequences"),
        tool_choice=tool_choice,
        thinking=thinking,
        thinking_budget=budget,
    )
    return ClientRequest(
        model=model,
        context=Context(
            messages=out, system_prompt=_anthropic_system(obj.get("system")), tools=tools
        ),
        options=options,
        stream=bool(obj.get("stream")),
        include_usage=True,
    )
