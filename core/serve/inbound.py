"""Client requests in OpenAI or Anthropic dialect -> our `Context` and `Options`.

The inverse of the request builders, used by `streamfn serve`: whatever a
client speaks, the server sees one `Context`. Malformed requests raise
`BadRequest` with a message that names the offending field, which the
server returns as a 400 in the client's own error shape.

This is the server's trust boundary on the body: a client chooses what to
generate (`CLIENT_FIELDS`: sampling, length, stops, tools, thinking), never
where the request goes or how often it is sent. A top-level field outside a
dialect's list is a 400 naming it, not silently dropped, so a client that
tries ``base_url`` or ``max_attempts`` learns at once that it cannot.
"""

from __future__ import annotations

import math
from typing import Any, Final, Literal

import msgspec

from ..accumulate import parse_arguments
from ..messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    OpaqueContent,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from ..options import CLIENT_FIELDS, Options, ThinkingLevel

__all__ = [
    "MAX_DEPTH",
    "BadRequest",
    "ClientRequest",
    "decode_body",
    "parse_anthropic_request",
    "parse_native_request",
    "parse_openai_request",
]

#: the deepest nesting of objects and arrays a request body may have; the
#: deepest thing clients legitimately send is a tool's JSON Schema
MAX_DEPTH: Final = 64


class BadRequest(ValueError):
    """The client's request is malformed; the message says which field and why."""


class ClientRequest(msgspec.Struct, kw_only=True):
    model: str
    context: Context
    options: Options
    stream: bool = False
    include_usage: bool = False


def decode_body(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or `BadRequest` saying why it is not one."""
    try:
        obj = msgspec.json.decode(body)
    except UnicodeDecodeError:
        raise BadRequest("request body is not valid UTF-8") from None
    except msgspec.DecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadRequest(f"request body nests deeper than {MAX_DEPTH} levels") from None
    if not isinstance(obj, dict):
        raise BadRequest("request body must be a JSON object")
    _check_depth(obj)
    return obj


def _check_depth(obj: Any) -> None:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadRequest(f"request body nests deeper than {MAX_DEPTH} levels")
        children = value.values() if isinstance(value, dict) else value
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


def _check_fields(
    obj: dict[str, Any],
    honoured: frozenset[str],
    ignored: frozenset[str],
    where: str,
    neutral: dict[str, tuple[Any, ...]] | None = None,
) -> None:
    """A field a dialect does not list is a 400 naming it (never silently dropped).

    ``neutral`` lists fields this server does not implement that clients send
    at their do-nothing value (``frequency_penalty: 0``): those pass.
    """
    for key, value in obj.items():
        if key in honoured or key in ignored:
            continue
        if neutral and key in neutral and (value is None or value in neutral[key]):
            continue
        raise BadRequest(
            f"{where}.{key}: not accepted by this server. A client chooses what to "
            f"generate ({', '.join(sorted(honoured))}); where a request goes, its "
            "credentials, retries and timeouts are the server's configuration"
        )


def _check_ranges(options: Options, where: str, names: dict[str, str]) -> None:
    """Out-of-range generation knobs are 400s, under the name the client used."""

    def name(field: str) -> str:
        return f"{where}.{names.get(field, field)}"

    if options.max_tokens is not None and options.max_tokens < 1:
        raise BadRequest(f"{name('max_tokens')}: must be at least 1, got {options.max_tokens}")
    if options.temperature is not None and not 0 <= options.temperature < math.inf:
        raise BadRequest(f"{name('temperature')}: must be a number >= 0")
    if options.top_p is not None and not 0 <= options.top_p <= 1:
        raise BadRequest(f"{name('top_p')}: must be between 0 and 1")
    if options.top_k is not None and options.top_k < 0:
        raise BadRequest(f"{name('top_k')}: must be >= 0")
    if options.thinking_budget is not None and options.thinking_budget < 0:
        raise BadRequest(f"{name('thinking_budget')}: must be >= 0")


def _response_schema(schema: Any, where: str) -> dict[str, Any]:
    """A client's JSON Schema for structured output, checked the way the request
    builders will use it (an object at the root, local ``$ref``s only)."""
    from ..structured import output_schema

    if not isinstance(schema, dict):
        raise BadRequest(f"{where}: must be a JSON Schema object")
    try:
        output_schema(schema)
    except (TypeError, ValueError) as exc:
        raise BadRequest(f"{where}: {exc}") from None
    return schema


def _openai_response_format(value: Any) -> dict[str, Any] | None:
    """``response_format``: text (nothing to do) or json_schema (`Options.response_schema`)."""
    if value is None or value == {"type": "text"}:
        return None
    where = "request.response_format"
    if not isinstance(value, dict) or value.get("type") != "json_schema":
        raise BadRequest(f"{where}: only {{'type': 'json_schema', ...}} or text is supported")
    spec = _req(value, "json_schema", dict, where)
    return _response_schema(spec.get("schema"), f"{where}.json_schema.schema")


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


def _anthropic_output_config(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    where = "request.output_config"
    if not isinstance(value, dict) or set(value) - {"format"}:
        raise BadRequest(f"{where}: only 'format' is supported")
    fmt = _req(value, "format", dict, where)
    if fmt.get("type") != "json_schema":
        raise BadRequest(f"{where}.format.type: must be 'json_schema'")
    return _response_schema(fmt.get("schema"), f"{where}.format.schema")


def _stream_flag(obj: dict[str, Any], where: str) -> bool:
    value = obj.get("stream")
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest(
            f"{where}.stream: must be true or false, got {msgspec.json.encode(value).decode()}"
        )
    return value


def _typed(context: Context) -> Context:
    """The context checked against its declared types (a backstop for loose client JSON)."""
    try:
        return msgspec.convert(msgspec.to_builtins(context), Context)
    except (msgspec.ValidationError, TypeError) as exc:
        raise BadRequest(f"request: a field has the wrong type: {exc}") from None


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
    if isinstance(value, bool):
        raise BadRequest(f"{where}.{key}: wrong type bool")
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
            args = parse_arguments(args_json)[0]
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
                tool_name=_opt(msg, "name", str, where) or "",
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
                description=_opt(fn, "description", str, f"{where}.function") or "",
                parameters=_opt(fn, "parameters", dict, f"{where}.function")
                or {"type": "object", "properties": {}},
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


#: OpenAI Chat Completions fields this server honours
_OPENAI_FIELDS: Final = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "tool_choice",
        "tools",
        "reasoning_effort",
        "n",
        "response_format",
    }
)
#: fields SDKs and frameworks send that change nothing a client may not choose
#: (attribution, caching hints, storage flags): accepted and not acted on
_OPENAI_IGNORED: Final = frozenset(
    {
        "user",
        "metadata",
        "store",
        "parallel_tool_calls",
        "service_tier",
        "prompt_cache_key",
        "safety_identifier",
    }
)


#: fields this server does not implement, accepted at the value that does nothing
_OPENAI_NEUTRAL: Final[dict[str, tuple[Any, ...]]] = {
    "frequency_penalty": (0,),
    "presence_penalty": (0,),
    "logprobs": (False,),
    "top_logprobs": (0,),
    "logit_bias": ({},),
}


def parse_openai_request(body: bytes) -> ClientRequest:
    obj = decode_body(body)
    _check_fields(obj, _OPENAI_FIELDS, _OPENAI_IGNORED, "request", _OPENAI_NEUTRAL)
    model = _req(obj, "model", str, "request")
    messages = _req(obj, "messages", list, "request")
    if not messages:
        raise BadRequest("request.messages: must not be empty")
    stream = _stream_flag(obj, "request")
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
    max_name = (
        "max_completion_tokens" if obj.get("max_completion_tokens") is not None else "max_tokens"
    )
    options = Options(
        temperature=_number(obj, "temperature", "request"),
        top_p=_number(obj, "top_p", "request"),
        top_k=_int(obj, "top_k", "request"),
        max_tokens=_int(obj, max_name, "request"),
        stop=_stop(obj.get("stop"), "request.stop"),
        seed=_int(obj, "seed", "request"),
        tool_choice=_openai_tool_choice(obj.get("tool_choice")),
        thinking=thinking,
        response_schema=_openai_response_format(obj.get("response_format")),
    )
    _check_ranges(options, "request", {"max_tokens": max_name})
    return ClientRequest(
        model=model,
        context=_typed(
            Context(
                messages=out,
                system_prompt="\n\n".join(system) if system else None,
                tools=_openai_tools(_opt(obj, "tools", list, "request")),
            )
        ),
        options=options,
        stream=stream,
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


def parse_anthropic_request(body: bytes) -> ClientRequest:
    obj = decode_body(body)
    _check_fields(obj, _ANTHROPIC_FIELDS, _ANTHROPIC_IGNORED, "request")
    model = _req(obj, "model", str, "request")
    max_tokens = _int(obj, "max_tokens", "request")
    if max_tokens is None:
        raise BadRequest("request: missing required field 'max_tokens'")
    messages = _req(obj, "messages", list, "request")
    if not messages:
        raise BadRequest("request.messages: must not be empty")
    stream = _stream_flag(obj, "request")
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
                description=_opt(tool, "description", str, where) or "",
                parameters=_opt(tool, "input_schema", dict, where)
                or {"type": "object", "properties": {}},
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
        response_schema=_anthropic_output_config(obj.get("output_config")),
        cache=_anthropic_cache(obj),
    )
    _check_ranges(options, "request", {"thinking_budget": "thinking.budget_tokens"})
    return ClientRequest(
        model=model,
        context=_typed(
            Context(messages=out, system_prompt=_anthropic_system(obj.get("system")), tools=tools)
        ),
        options=options,
        stream=stream,
        include_usage=True,
    )


# -- streamfn's native proxy format --------------------------------------------------


class _NativeRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: str
    context: Context
    options: dict[str, Any] = msgspec.field(default_factory=dict)


def parse_native_request(body: bytes) -> ClientRequest:
    """``{"model", "context", "options"}``; ``options`` may hold only `CLIENT_FIELDS`."""
    obj = decode_body(body)
    try:
        request = msgspec.convert(obj, _NativeRequest)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"native request: {exc}") from None
    _check_fields(request.options, frozenset(CLIENT_FIELDS), frozenset(), "options")
    try:
        options = msgspec.convert(request.options, Options)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"options: {exc}") from None
    _check_ranges(options, "options", {})
    if isinstance(options.cache, list):
        raise BadRequest(
            'options.cache: explicit cache points are the server\'s choice; send "auto"'
        )
    if options.response_schema is not None:
        _response_schema(options.response_schema, "options.response_schema")
    _refuse_opaque(request.context)
    return ClientRequest(model=request.model, context=request.context, options=options, stream=True)


def _refuse_opaque(context: Context) -> None:
    """A client may not send provider-native blocks: the server would forward them with
    its own credentials (a ``gs://`` file, another user's ``file_id``, a cache TTL the
    operator pays for). Server-tool results replay to a provider the client holds a
    key for, not through a gateway."""
    for number, message in enumerate(context.messages):
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, OpaqueContent):
                    raise BadRequest(
                        f"context.messages[{number}]: opaque {block.block_type!r} blocks are "
                        "not accepted by this server (they would act with its credentials); "
                        "leave them out of the conversation"
                    )
