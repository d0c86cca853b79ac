"""OpenAI Responses requests -> `ClientRequest` (the server's side of the Responses API).

What the openai SDK's ``responses.create`` and its users (the Agents SDK, Codex)
send: ``input`` as a string or a list of items (messages, ``function_call`` and
``function_call_output`` items, replayed ``reasoning`` items), ``instructions``,
function tools and ``tool_choice``, ``text.format`` (structured output),
``reasoning.effort`` and ``max_output_tokens``. The rules are the other dialects'
(`streamfn.core.dialects._request_fields`): a field outside the lists is a 400 naming
it, URLs and uploaded files follow the same rule, server tools need the operator's
leave.

The server keeps no state: a request must carry the whole conversation. So
``store: true``, ``previous_response_id``, ``conversation`` and ``background`` are
400s that say so (a stored response would hold one client's conversation on the
operator's server, unbounded); a request that leaves ``store`` out is not stored.
A replayed reasoning item gives the model back its own signature
(`streamfn.core.dialects.openai_responses._signatures`).
"""

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
    stream_flag,
    typed_context,
)

from ._signatures import signature_of

__all__ = ["parse_responses_request"]

#: Responses fields this server honours
_FIELDS: Final = frozenset(
    {
        "model",
        "input",
        "instructions",
        "stream",
        "tools",
        "tool_choice",
        "text",
        "reasoning",
        "max_output_tokens",
        "temperature",
        "top_p",
        "store",
        "previous_response_id",
        "conversation",
        "background",
    }
)
#: fields SDKs send that change nothing a client may not choose: accepted, not acted on
_IGNORED: Final = frozenset(
    {
        "user",
        "metadata",
        "client_metadata",
        "parallel_tool_calls",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "safety_identifier",
        "include",
        "stream_options",
        "truncation",
    }
)
#: fields this server does not implement, accepted at the value that does nothing
_NEUTRAL: Final[dict[str, tuple[Any, ...]]] = {"top_logprobs": (0,)}
#: what a ``responses/input_tokens`` request takes (the openai SDK's
#: ``InputTokenCountParams``): the request's input side, nothing about generating
_COUNT_FIELDS: Final = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "text",
        "reasoning",
        "previous_response_id",
        "conversation",
    }
)
_COUNT_IGNORED: Final = frozenset({"parallel_tool_calls", "truncation", "personality"})
#: the openai SDK's reasoning efforts -> our levels ("none" is off, "max" our top)
_EFFORTS: Final = {"none": "off", "max": "xhigh"}
STATELESS: Final = (
    "this server keeps no conversations: send the whole conversation in `input` "
    "(with `store` false or left out)"
)


def _refuse_state(obj: dict[str, Any]) -> None:
    for name in ("previous_response_id", "conversation"):
        if obj.get(name) is not None:
            raise BadRequest(f"request.{name}: {STATELESS}")
    if obj.get("store") is True:
        raise BadRequest(f"request.store: {STATELESS}")
    if obj.get("background") is True:
        raise BadRequest("request.background: this server answers in the foreground only")


def _image(part: dict[str, Any], where: str) -> ImageContent:
    if part.get("file_id") is not None:
        raise BadRequest(
            f"{where}.file_id: uploaded files are not accepted by this server (they would "
            "be read with its credentials); send the image as a data: URL"
        )
    url = require(part, "image_url", str, where)
    if not url.startswith("data:"):
        return media_part(ImageContent, where, url=client_url(url, where))
    mime, data = data_url(url, f"{where}.image_url", "image/png")
    return media_part(ImageContent, where, data=data, mime_type=mime)


def _file(part: dict[str, Any], where: str) -> DocumentContent:
    if part.get("file_id") is not None:
        raise BadRequest(
            f"{where}.file_id: uploaded files are not accepted by this server (they would "
            "be read with its credentials); send the file as file_data"
        )
    title = optional(part, "filename", str, where)
    if part.get("file_url") is not None:
        url = client_url(require(part, "file_url", str, where), f"{where}.file_url")
        return media_part(DocumentContent, where, url=url, title=title)
    mime, data = data_url(require(part, "file_data", str, where), f"{where}.file_data", "")
    return media_part(
        DocumentContent, where, data=data, mime_type=mime or "application/pdf", title=title
    )


def _input_parts(content: Any, where: str) -> str | list[UserContent]:
    """A user message's (or a tool output's) content: text, images and files."""
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
        if kind == "input_text":
            out.append(TextContent(text=require(part, "text", str, w)))
        elif kind == "input_image":
            out.append(_image(part, w))
        elif kind == "input_file":
            out.append(_file(part, w))
        else:
            raise BadRequest(f"{w}: unsupported content part type {kind!r}")
    return out


def _texts_of(content: Any, where: str, kinds: tuple[str, ...]) -> list[str]:
    """The texts of a system or assistant message: a string, or each part of ``kinds``."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        raise BadRequest(f"{where}: must be a string or a list of parts")
    texts = []
    for i, part in enumerate(content):
        w = f"{where}[{i}]"
        if not isinstance(part, dict) or part.get("type") not in kinds:
            raise BadRequest(f"{w}: only {' or '.join(kinds)} parts are allowed here")
        key = "refusal" if part["type"] == "refusal" else "text"
        texts.append(require(part, key, str, w))
    return texts


class _Conversation:
    """The messages being rebuilt: items of one assistant turn join one message."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.system: list[str] = []
        #: call id -> tool name, for the outputs that name only the call
        self.calls: dict[str, str] = {}

    def assistant(self) -> list[AssistantContent]:
        """The content of the assistant turn being rebuilt (a new one if none is open)."""
        last = self.messages[-1] if self.messages else None
        if not isinstance(last, AssistantMessage):
            last = AssistantMessage(content=[])
            self.messages.append(last)
        return last.content

    def item(self, item: Any, where: str) -> None:
        if not isinstance(item, dict):
            raise BadRequest(f"{where}: must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            self._message(item, where)
        elif kind == "function_call":
            self._call(item, where)
        elif kind == "function_call_output":
            call_id = require(item, "call_id", str, where)
            output = item.get("output")
            content = _input_parts(output, f"{where}.output")
            self.messages.append(
                ToolResultMessage(
                    tool_call_id=call_id,
                    tool_name=self.calls.get(call_id, ""),
                    content=[TextContent(text=content)] if isinstance(content, str) else content,
                )
            )
        elif kind == "reasoning":
            self._reasoning(item, where)
        else:
            raise BadRequest(
                f"{where}.type: {kind!r} items are not accepted by this server (it keeps no "
                "stored items and runs no hosted tools for clients); send messages, "
                "function_call, function_call_output and reasoning items"
            )

    def _message(self, item: dict[str, Any], where: str) -> None:
        role = require(item, "role", str, where)
        content = item.get("content")
        if role in ("system", "developer"):
            self.system.append("".join(_texts_of(content, f"{where}.content", ("input_text",))))
        elif role == "user":
            self.messages.append(UserMessage(content=_input_parts(content, f"{where}.content")))
        elif role == "assistant":
            kinds = ("output_text", "refusal", "input_text")
            texts = [t for t in _texts_of(content, f"{where}.content", kinds) if t]
            if texts:
                self.assistant().extend(TextContent(text=text) for text in texts)
        else:
            raise BadRequest(f"{where}.role: unknown role {role!r}")

    def _call(self, item: dict[str, Any], where: str) -> None:
        call_id = require(item, "call_id", str, where)
        name = require(item, "name", str, where)
        arguments = require(item, "arguments", str, where)
        self.calls[call_id] = name
        self.assistant().append(
            ToolCall(
                id=call_id,
                name=name,
                # unusable arguments replay as {}; the raw text travels in arguments_json
                arguments=parse_arguments(arguments)[0],
                arguments_json=arguments,
            )
        )

    def _reasoning(self, item: dict[str, Any], where: str) -> None:
        summary = optional(item, "summary", list, where) or []
        texts = []
        for i, part in enumerate(summary):
            w = f"{where}.summary[{i}]"
            if not isinstance(part, dict) or part.get("type") != "summary_text":
                raise BadRequest(f"{w}: only summary_text parts are allowed here")
            texts.append(require(part, "text", str, w))
        encrypted = optional(item, "encrypted_content", str, where)
        signature = None
        if encrypted:
            try:
                signature = signature_of(encrypted, texts)
            except ValueError as exc:
                raise BadRequest(f"{where}.encrypted_content: {exc}") from None
        if texts or signature:
            self.assistant().append(ThinkingContent(thinking="".join(texts), signature=signature))


def _tools(value: Any) -> list[Tool | ServerTool]:
    out: list[Tool | ServerTool] = []
    for i, tool in enumerate(value or []):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise BadRequest(f"{where}: must be an object")
        kind = tool.get("type")
        if kind == "function":
            out.append(
                Tool(
                    name=require(tool, "name", str, where),
                    description=optional(tool, "description", str, where) or "",
                    parameters=optional(tool, "parameters", dict, where)
                    or {"type": "object", "properties": {}},
                )
            )
        elif kind in ("web_search", "web_search_preview"):
            config = {k: v for k, v in tool.items() if k != "type"}
            out.append(ServerTool(type="web_search", config=config))
        else:
            named = tool.get("name")
            raise BadRequest(
                f"{where}.type: {kind!r} tools"
                + (f" ({named[:64]!r})" if isinstance(named, str) else "")
                + " are not supported by this server: send function tools (and web_search, "
                "where the operator allows it)"
            )
    return out


def _tool_choice(value: Any) -> str | None:
    if value is None or value in ("auto", "none", "required"):
        return value  # type: ignore[no-any-return]
    if isinstance(value, dict) and value.get("type") == "function":
        name = value.get("name")
        if isinstance(name, str):
            return name
    raise BadRequest(
        "request.tool_choice: must be 'auto', 'none', 'required' or "
        "{'type': 'function', 'name': ...}"
    )


def _text_format(value: Any) -> dict[str, Any] | None:
    """``text.format``: plain text (nothing to do) or a JSON schema (structured output)."""
    if value is None:
        return None
    where = "request.text"
    if not isinstance(value, dict):
        raise BadRequest(f"{where}: must be an object")
    check_fields(value, frozenset({"format", "verbosity"}), frozenset(), where)
    fmt = value.get("format")
    if fmt is None or fmt == {"type": "text"}:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        raise BadRequest(f"{where}.format: only {{'type': 'json_schema', ...}} or text")
    return response_schema(fmt.get("schema"), f"{where}.format.schema")


def _thinking(value: Any) -> ThinkingLevel | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadRequest("request.reasoning: must be an object")
    effort = optional(value, "effort", str, "request.reasoning")
    if not effort:
        return None
    try:
        return ThinkingLevel(_EFFORTS.get(effort, effort))
    except ValueError:
        raise BadRequest(f"request.reasoning.effort: unknown value {effort!r}") from None


def parse_responses_request(
    body: bytes, *, allow_server_tools: frozenset[str] = frozenset(), counting: bool = False
) -> ClientRequest:
    """A Responses ``POST /v1/responses`` body as the server's `ClientRequest`
    (``counting``: a ``POST /v1/responses/input_tokens`` body, the same fields)."""
    obj = decode_body(body)
    if counting:
        check_fields(obj, _COUNT_FIELDS, _COUNT_IGNORED, "request")
    else:
        check_fields(obj, _FIELDS, _IGNORED, "request", _NEUTRAL)
    _refuse_state(obj)
    model = require(obj, "model", str, "request")
    given = obj.get("input")
    conversation = _Conversation()
    if isinstance(given, str):
        conversation.messages.append(UserMessage(content=given))
    elif isinstance(given, list) and given:
        for i, item in enumerate(given):
            conversation.item(item, f"input[{i}]")
    else:
        raise BadRequest("request.input: must be a non-empty string or list of items")
    instructions = optional(obj, "instructions", str, "request")
    system = [instructions, *conversation.system] if instructions else conversation.system
    options = Options(
        temperature=number(obj, "temperature", "request"),
        top_p=number(obj, "top_p", "request"),
        max_tokens=integer(obj, "max_output_tokens", "request"),
        tool_choice=_tool_choice(obj.get("tool_choice")),
        thinking=_thinking(obj.get("reasoning")),
        response_schema=_text_format(obj.get("text")),
    )
    check_ranges(options, "request", {"max_tokens": "max_output_tokens"})
    context = Context(
        messages=conversation.messages,
        system_prompt="\n\n".join(system) if system else None,
        tools=_tools(optional(obj, "tools", list, "request")),
    )
    request = ClientRequest(
        model=model,
        context=typed_context(context),
        options=options,
        stream=stream_flag(obj, "request"),
        include_usage=True,
    )
    return refuse_server_tools(request, allow_server_tools)
