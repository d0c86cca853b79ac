"""Anthropic Messages requests -> `ClientRequest` (see `inbound` for the rules)."""

from __future__ import annotations

import base64
from typing import Any, Final, Literal, cast

import msgspec

from streamfn.core._messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    DocumentContent,
    ImageContent,
    Message,
    ServerTool,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from streamfn.core._options import Options, ThinkingLevel
from streamfn.core.dialects._replayed_search import REPLAYED_SEARCH_BLOCKS, replayed_search_block
from streamfn.core.dialects._request_fields import (
    BadRequest,
    ClientRequest,
    check_fields,
    check_ranges,
    client_url,
    decode_body,
    integer,
    media_part,
    number,
    optional,
    refuse_server_tools,
    require,
    response_schema,
    stop_list,
    stream_flag,
    typed_context,
)

__all__ = ["parse_anthropic_request"]


def _anthropic_cache(obj: dict[str, Any]) -> Literal["auto"] | None:
    """``"auto"`` when the client marked anything with ``cache_control``. The server
    places the marks itself (`cache_points`, 5-minute TTL): a client's 1-hour TTL
    would bill cache writes at twice the input price to the operator."""
    blocks: list[Any] = []
    for part in ("system", "tools"):
        value = obj.get(part)
        if isinstance(value, list):
            blocks += value
    for message in obj.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            blocks += content
    marked = "cache_control" in obj or any(
        isinstance(b, dict) and "cache_control" in b for b in blocks
    )
    return "auto" if marked else None


#: ``output_config.effort`` (anthropic SDK ``OutputConfigParam``) as our thinking level
_EFFORTS: Final = {
    "low": ThinkingLevel.LOW,
    "medium": ThinkingLevel.MEDIUM,
    "high": ThinkingLevel.HIGH,
    "xhigh": ThinkingLevel.XHIGH,
    "max": ThinkingLevel.XHIGH,
}


def _anthropic_output_config(value: Any) -> tuple[dict[str, Any] | None, ThinkingLevel | None]:
    """The response schema and the effort of ``output_config`` (each None when absent)."""
    if value is None:
        return None, None
    where = "request.output_config"
    if not isinstance(value, dict) or set(value) - {"format", "effort"}:
        raise BadRequest(f"{where}: only 'format' and 'effort' are supported")
    effort = value.get("effort")
    if effort is not None and effort not in _EFFORTS:
        raise BadRequest(f"{where}.effort: one of {', '.join(_EFFORTS)}")
    if value.get("format") is None:
        return None, _EFFORTS.get(effort) if effort else None
    fmt = require(value, "format", dict, where)
    if fmt.get("type") != "json_schema":
        raise BadRequest(f"{where}.format.type: must be 'json_schema'")
    schema = response_schema(fmt.get("schema"), f"{where}.format.schema")
    return schema, _EFFORTS.get(effort) if effort else None


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
    if source.get("type") == "url":
        url = client_url(require(source, "url", str, f"{where}.source"), where)
        return media_part(ImageContent, where, url=url)
    if source.get("type") != "base64":
        raise BadRequest(f"{where}.source: only base64 and url images are accepted")
    return media_part(
        ImageContent,
        where,
        data=require(source, "data", str, f"{where}.source"),
        mime_type=require(source, "media_type", str, f"{where}.source"),
    )


def _anthropic_document(block: dict[str, Any], where: str) -> DocumentContent:
    source = require(block, "source", dict, where)
    title = optional(block, "title", str, where)
    kind = source.get("type")
    w = f"{where}.source"
    if kind == "url":
        url = client_url(require(source, "url", str, w), w)
        return media_part(DocumentContent, w, url=url, title=title)
    if kind == "base64":
        mime = require(source, "media_type", str, w)
        data = require(source, "data", str, w)
        return media_part(DocumentContent, w, data=data, mime_type=mime, title=title)
    if kind == "text":
        text = base64.b64encode(require(source, "data", str, w).encode()).decode()
        return media_part(DocumentContent, w, data=text, mime_type="text/plain", title=title)
    raise BadRequest(f"{w}: only base64, text and url documents are accepted")


def _anthropic_result_content(content: Any, where: str) -> list[UserContent]:
    if content is None:
        return []
    out: list[UserContent] = []
    for i, block in enumerate(_anthropic_blocks(content, where)):
        if block["type"] == "text":
            out.append(TextContent(text=require(block, "text", str, f"{where}[{i}]")))
        elif block["type"] == "image":
            out.append(_anthropic_image(block, f"{where}[{i}]"))
        elif block["type"] == "document":
            out.append(_anthropic_document(block, f"{where}[{i}]"))
    return out


def _anthropic_message(msg: Any, i: int, out: list[Message], allowed: frozenset[str]) -> None:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise BadRequest(f"{where}: must be an object")
    role = require(msg, "role", str, where)
    blocks = _anthropic_blocks(msg.get("content"), f"{where}.content")
    if role == "user":
        _anthropic_user(blocks, where, out)
    elif role == "assistant":
        out.append(_anthropic_assistant(blocks, where, allowed))
    else:
        raise BadRequest(f"{where}.role: must be 'user' or 'assistant'")


def _anthropic_user(blocks: list[dict[str, Any]], where: str, out: list[Message]) -> None:
    """A user turn: its tool results become their own messages, in order, between
    the user content before and after them."""
    user: list[UserContent] = []
    for j, block in enumerate(blocks):
        w = f"{where}.content[{j}]"
        kind = block["type"]
        if kind == "text":
            user.append(TextContent(text=require(block, "text", str, w)))
        elif kind == "image":
            user.append(_anthropic_image(block, w))
        elif kind == "document":
            user.append(_anthropic_document(block, w))
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


def _anthropic_assistant(
    blocks: list[dict[str, Any]], where: str, allowed: frozenset[str]
) -> AssistantMessage:
    """``allowed``: the server-tool types the operator allows (replayed web-search
    blocks pass only with ``web_search``: `replayed_search`)."""
    content: list[AssistantContent] = []
    searches: set[str] = set()
    for j, block in enumerate(blocks):
        w = f"{where}.content[{j}]"
        kind = block["type"]
        if kind == "text":
            content.append(TextContent(text=require(block, "text", str, w)))
        elif kind == "thinking":
            content.append(
                ThinkingContent(
                    thinking=require(block, "thinking", str, w),
                    signature=block.get("signature"),
                )
            )
        elif kind == "redacted_thinking":
            content.append(ThinkingContent(thinking="", signature=block.get("data"), redacted=True))
        elif kind == "tool_use":
            content.append(_anthropic_tool_use(block, w))
        elif kind in REPLAYED_SEARCH_BLOCKS:
            content.append(replayed_search_block(block, w, searches, allowed))
        else:
            raise BadRequest(f"{w}: unsupported block type {kind!r} in an assistant message")
    return AssistantMessage(content=content)


def _anthropic_tool_use(block: dict[str, Any], where: str) -> ToolCall:
    args = block.get("input") or {}
    if not isinstance(args, dict):
        raise BadRequest(f"{where}.input: must be an object")
    return ToolCall(
        id=require(block, "id", str, where),
        name=require(block, "name", str, where),
        arguments=args,
        arguments_json=msgspec.json.encode(args).decode(),
    )


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
        "output_config",
        "cache_control",
    }
)
#: accepted and not acted on (attribution, priority hints)
_ANTHROPIC_IGNORED: Final = frozenset({"metadata", "service_tier"})
#: our option names as the Anthropic request spells them (for the 400s naming them)
_ANTHROPIC_NAMES: Final = {"thinking_budget": "thinking.budget_tokens", "stop": "stop_sequences"}


#: Anthropic's server-tool type prefixes -> our `ServerTool` types
_ANTHROPIC_SERVER_TOOLS: Final = {"web_search_": "web_search", "code_execution_": "code_execution"}


def _anthropic_tool(tool: Any, where: str) -> Tool | ServerTool:
    if not isinstance(tool, dict):
        raise BadRequest(f"{where}: must be an object")
    kind = tool.get("type")
    if kind not in (None, "custom"):
        if not isinstance(kind, str):
            raise BadRequest(f"{where}.type: must be a string")
        for prefix, ours in _ANTHROPIC_SERVER_TOOLS.items():
            if kind.startswith(prefix):
                config = {k: v for k, v in tool.items() if k not in ("type", "name")}
                return ServerTool(type=ours, config=config)
        raise BadRequest(f"{where}.type: tool type {kind!r} is not supported by this server")
    return Tool(
        name=require(tool, "name", str, where),
        description=optional(tool, "description", str, where) or "",
        parameters=optional(tool, "input_schema", dict, where)
        or {"type": "object", "properties": {}},
    )


def _anthropic_thinking(
    obj: dict[str, Any], effort: ThinkingLevel | None
) -> tuple[ThinkingLevel | None, int | None]:
    """``thinking`` as our level and budget: a budget (``enabled``), or adaptive thinking
    at ``output_config.effort`` (Claude 4.6+; Anthropic's default effort is high)."""
    config = optional(obj, "thinking", dict, "request") or {}
    if config.get("type") == "enabled":
        return ThinkingLevel.MEDIUM, integer(config, "budget_tokens", "request.thinking")
    if config.get("type") == "adaptive":
        return effort or ThinkingLevel.HIGH, None
    if effort is not None:
        raise BadRequest(
            "request.output_config.effort: this server takes an effort with "
            "thinking {'type': 'adaptive'} only"
        )
    return None, None


def _thinking_display(obj: dict[str, Any]) -> Literal["summarized", "omitted"] | None:
    """``thinking.display``, one of the two values the API takes (or None)."""
    display = optional(obj["thinking"], "display", str, "request.thinking")
    if display is None or display in ("summarized", "omitted"):
        return cast('Literal["summarized", "omitted"] | None', display)
    raise BadRequest(
        f"request.thinking.display: unknown value {display!r}; use 'summarized' or 'omitted'"
    )


def parse_anthropic_request(
    body: bytes, *, allow_server_tools: frozenset[str] = frozenset(), counting: bool = False
) -> ClientRequest:
    """A Messages request (``counting``: a ``count_tokens`` request, which has no
    ``max_tokens`` and does not stream) as the server's `ClientRequest`; server tools
    outside ``allow_server_tools`` are refused. Raises `streamfn.core.UsageError`
    naming the field that is wrong."""
    obj = decode_body(body)
    check_fields(obj, _ANTHROPIC_FIELDS, _ANTHROPIC_IGNORED, "request")
    model = require(obj, "model", str, "request")
    max_tokens = integer(obj, "max_tokens", "request")
    if max_tokens is None and not counting:
        raise BadRequest("request: missing required field 'max_tokens'")
    messages = require(obj, "messages", list, "request")
    if not messages:
        raise BadRequest("request.messages: must not be empty")
    stream = stream_flag(obj, "request")
    out: list[Message] = []
    for i, msg in enumerate(messages):
        _anthropic_message(msg, i, out, allow_server_tools)
    tools = [
        _anthropic_tool(tool, f"tools[{i}]")
        for i, tool in enumerate(optional(obj, "tools", list, "request") or [])
    ]
    choice = optional(obj, "tool_choice", dict, "request")
    tool_choice = None
    if choice:
        kind = choice.get("type")
        tool_choice = {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))
        if kind == "tool":
            tool_choice = require(choice, "name", str, "request.tool_choice")
        elif tool_choice is None:
            raise BadRequest(f"request.tool_choice.type: unknown value {kind!r}")
    schema, effort = _anthropic_output_config(obj.get("output_config"))
    thinking, budget = _anthropic_thinking(obj, effort)
    display = _thinking_display(obj) if thinking is not None else None
    options = Options(
        temperature=number(obj, "temperature", "request"),
        top_p=number(obj, "top_p", "request"),
        top_k=integer(obj, "top_k", "request"),
        max_tokens=max_tokens,
        stop=stop_list(obj.get("stop_sequences"), "request.stop_sequences"),
        tool_choice=tool_choice,
        thinking=thinking,
        thinking_budget=budget,
        thinking_display=display,
        response_schema=schema,
        cache=_anthropic_cache(obj),
    )
    check_ranges(options, "request", _ANTHROPIC_NAMES)
    request = ClientRequest(
        model=model,
        context=typed_context(
            Context(messages=out, system_prompt=_anthropic_system(obj.get("system")), tools=tools)
        ),
        options=options,
        stream=stream,
        include_usage=True,
    )
    return refuse_server_tools(request, allow_server_tools)
