"""OpenAI Chat Completions requests -> `ClientRequest` (see `inbound` for the rules)."""

from __future__ import annotations

from typing import Any, Final

from streamfn.core._accumulate import parse_arguments
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
from streamfn.core.dialects._request_fields import (
    BadRequest,
    ClientRequest,
    check_fields,
    check_ranges,
    client_url,
    data_url,
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

__all__ = ["parse_openai_request"]


def _openai_response_format(value: Any) -> dict[str, Any] | None:
    """``response_format``: text (nothing to do) or json_schema (`Options.response_schema`)."""
    if value is None or value == {"type": "text"}:
        return None
    where = "request.response_format"
    if not isinstance(value, dict) or value.get("type") != "json_schema":
        raise BadRequest(f"{where}: only {{'type': 'json_schema', ...}} or text is supported")
    spec = require(value, "json_schema", dict, where)
    return response_schema(spec.get("schema"), f"{where}.json_schema.schema")


def _data_url_image(url: str, where: str) -> ImageContent:
    if not url.startswith("data:"):
        return media_part(ImageContent, where, url=client_url(url, where))
    mime, data = data_url(url, where, "image/png")
    return media_part(ImageContent, where, data=data, mime_type=mime)


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
            parts.append(require(part, "text", str, f"{where}[{i}]"))
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
            out.append(TextContent(text=require(part, "text", str, w)))
        elif kind == "image_url":
            image = require(part, "image_url", dict, w)
            out.append(_data_url_image(require(image, "url", str, f"{w}.image_url"), w))
        elif kind == "file":
            out.append(_openai_file(require(part, "file", dict, w), f"{w}.file"))
        else:
            raise BadRequest(f"{w}: unsupported content part type {kind!r}")
    return out


def _openai_file(file: dict[str, Any], where: str) -> DocumentContent:
    if "file_id" in file:
        raise BadRequest(
            f"{where}.file_id: uploaded files are not accepted by this server (they would be "
            "read with its credentials); send the file as file_data"
        )
    mime, data = data_url(require(file, "file_data", str, where), f"{where}.file_data", "")
    return media_part(
        DocumentContent,
        where,
        data=data,
        mime_type=mime or "application/pdf",
        title=optional(file, "filename", str, where),
    )


def _openai_message(msg: Any, i: int, system: list[str], out: list[Message]) -> None:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise BadRequest(f"{where}: must be an object")
    role = require(msg, "role", str, where)
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
        for j, call in enumerate(optional(msg, "tool_calls", list, where) or []):
            w = f"{where}.tool_calls[{j}]"
            if not isinstance(call, dict):
                raise BadRequest(f"{w}: must be an object")
            fn = require(call, "function", dict, w)
            args_json = fn.get("arguments") or "{}"
            if not isinstance(args_json, str):
                raise BadRequest(f"{w}.function.arguments: must be a JSON string")
            # Unusable arguments (invalid, not an object) replay as {}; the raw
            # text still travels in arguments_json.
            args = parse_arguments(args_json)[0]
            content.append(
                ToolCall(
                    id=require(call, "id", str, w),
                    name=require(fn, "name", str, f"{w}.function"),
                    arguments=args,
                    arguments_json=args_json,
                    signature=_thought_signature(call, w),
                )
            )
        out.append(AssistantMessage(content=content))
    elif role == "tool":
        text = _openai_text(msg.get("content"), f"{where}.content")
        out.append(
            ToolResultMessage(
                tool_call_id=require(msg, "tool_call_id", str, where),
                tool_name=optional(msg, "name", str, where) or "",
                content=[TextContent(text=text)],
            )
        )
    else:
        raise BadRequest(f"{where}.role: unknown role {role!r}")


def _thought_signature(call: dict[str, Any], where: str) -> str | None:
    """The signature a tool call carries back (``extra_content.google.thought_signature``,
    Gemini's OpenAI-compatible carrier, which this server's own answers use)."""
    extra = optional(call, "extra_content", dict, where)
    google = optional(extra, "google", dict, f"{where}.extra_content") if extra else None
    if not google:
        return None
    signature: str | None = optional(
        google, "thought_signature", str, f"{where}.extra_content.google"
    )
    return signature


def _openai_tools(tools: list[Any] | None, search: Any) -> list[Tool | ServerTool]:
    out: list[Tool | ServerTool] = []
    if search is not None:
        if not isinstance(search, dict):
            raise BadRequest("request.web_search_options: must be an object")
        out.append(ServerTool(type="web_search", config=search))
    for i, tool in enumerate(tools or []):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            raise BadRequest(f"{where}: only function tools are supported")
        fn = require(tool, "function", dict, where)
        out.append(
            Tool(
                name=require(fn, "name", str, f"{where}.function"),
                description=optional(fn, "description", str, f"{where}.function") or "",
                parameters=optional(fn, "parameters", dict, f"{where}.function")
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
        "web_search_options",
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


def parse_openai_request(
    body: bytes, *, allow_server_tools: frozenset[str] = frozenset()
) -> ClientRequest:
    """An OpenAI chat completions request body as a typed request; server tools
    outside ``allow_server_tools`` are refused. Raises `streamfn.core.UsageError`
    naming the field that is wrong."""
    obj = decode_body(body)
    check_fields(obj, _OPENAI_FIELDS, _OPENAI_IGNORED, "request", _OPENAI_NEUTRAL)
    model = require(obj, "model", str, "request")
    messages = require(obj, "messages", list, "request")
    if not messages:
        raise BadRequest("request.messages: must not be empty")
    stream = stream_flag(obj, "request")
    system: list[str] = []
    out: list[Message] = []
    for i, msg in enumerate(messages):
        _openai_message(msg, i, system, out)
    n = integer(obj, "n", "request")
    if n is not None and n != 1:
        raise BadRequest("request.n: only n=1 is supported (one message per stream)")
    effort = optional(obj, "reasoning_effort", str, "request")
    thinking = None
    if effort:
        try:
            # the openai SDK's ReasoningEffort: "none" is off, "max" the top of our scale
            thinking = ThinkingLevel({"none": "off", "max": "xhigh"}.get(effort, effort))
        except ValueError:
            raise BadRequest(f"request.reasoning_effort: unknown value {effort!r}") from None
    stream_options = optional(obj, "stream_options", dict, "request") or {}
    max_name = (
        "max_completion_tokens" if obj.get("max_completion_tokens") is not None else "max_tokens"
    )
    options = Options(
        temperature=number(obj, "temperature", "request"),
        top_p=number(obj, "top_p", "request"),
        top_k=integer(obj, "top_k", "request"),
        max_tokens=integer(obj, max_name, "request"),
        stop=stop_list(obj.get("stop"), "request.stop"),
        seed=integer(obj, "seed", "request"),
        tool_choice=_openai_tool_choice(obj.get("tool_choice")),
        thinking=thinking,
        response_schema=_openai_response_format(obj.get("response_format")),
    )
    check_ranges(options, "request", {"max_tokens": max_name})
    request = ClientRequest(
        model=model,
        context=typed_context(
            Context(
                messages=out,
                system_prompt="\n\n".join(system) if system else None,
                tools=_openai_tools(
                    optional(obj, "tools", list, "request"), obj.get("web_search_options")
                ),
            )
        ),
        options=options,
        stream=stream,
        include_usage=bool(stream_options.get("include_usage")),
    )
    return refuse_server_tools(request, allow_server_tools)
