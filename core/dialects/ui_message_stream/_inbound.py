"""Vercel AI SDK ``useChat`` requests -> `ClientRequest` (see `inbound` for the rules).

The body is what the SDK's ``DefaultChatTransport`` posts: ``id`` (the chat),
``messages`` (UI messages, each a ``role`` and a list of ``parts``),
``trigger`` (``submit-message`` or ``regenerate-message``: either way the
answer continues the messages sent) and ``messageId``, plus what the
transport's ``body`` option adds: ``model`` (else the server's default), and
optionally ``system``, ``temperature``, ``maxOutputTokens`` and ``tools``
(``{name, description, inputSchema}``: the SDK declares tools on the server,
which here is the client's business).

Parts: ``text``; ``reasoning`` (assistant); ``file`` (a ``data:`` URL, or an
http(s) URL where the operator allows them; images by their media type, any
other type as a document); tool parts (``tool-NAME`` or ``dynamic-tool``)
become a tool call and, with ``state`` ``output-available``,
``output-error`` or ``output-denied``, its result. A call without a result
(still streaming, awaiting approval) is a 400: the model cannot go on
without one. A ``step-start`` part splits an assistant message into the
turns it holds. When the last message is the assistant's (the answer goes on
after a client-side tool's output), the stream continues that message: its
``start`` part carries the message's id, as the SDK's own servers do.
Sources and ``data-*`` parts are the application's own and are not sent to
the model.
"""

from __future__ import annotations

from typing import Any, Final

from streamfn.core._messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from streamfn.core._options import Options
from streamfn.core.dialects._request_fields import (
    BadRequest,
    ClientRequest,
    check_fields,
    check_ranges,
    chosen_model,
    client_url,
    data_url,
    decode_body,
    function_tools,
    image_or_document,
    integer,
    number,
    optional,
    refuse_server_tools,
    require,
    typed_context,
)

__all__ = ["TRIGGERS", "parse_ui_chat_request"]

#: the ``trigger`` values the SDK sends
TRIGGERS: Final = frozenset({"submit-message", "regenerate-message"})
_FIELDS: Final = frozenset(
    {
        "id",
        "messages",
        "trigger",
        "messageId",
        "model",
        "system",
        "temperature",
        "maxOutputTokens",
        "tools",
    }
)
#: accepted and not acted on: the application's own
_IGNORED: Final = frozenset({"metadata"})
#: parts that are the application's, not the model's
_SKIPPED: Final = ("step-start", "source-url", "source-document")
_DENIED: Final = "the user denied this tool call"


def _file(part: dict[str, Any], where: str) -> UserContent:
    mime = require(part, "mediaType", str, where)
    url = require(part, "url", str, where)
    title = optional(part, "filename", str, where)
    image = mime.startswith("image/")
    extra: dict[str, Any] = {} if image else {"title": title}
    if url.startswith("data:"):
        data = data_url(url, f"{where}.url", mime)[1]
        return image_or_document(image, where, data=data, mime_type=mime, **extra)
    url = client_url(url, f"{where}.url")
    return image_or_document(image, where, url=url, mime_type=mime, **extra)


def _is_app_part(kind: str) -> bool:
    return kind in _SKIPPED or kind.startswith("data-")


def _user(parts: list[dict[str, Any]], where: str) -> UserMessage:
    content: list[UserContent] = []
    for j, part in enumerate(parts):
        w = f"{where}.parts[{j}]"
        kind = part["type"]
        if kind == "text":
            content.append(TextContent(text=require(part, "text", str, w)))
        elif kind == "file":
            content.append(_file(part, w))
        elif not _is_app_part(kind):
            raise BadRequest(f"{w}.type: {kind!r} parts are not accepted in a user message")
    return UserMessage(content=content)


def _tool_part(part: dict[str, Any], where: str) -> tuple[ToolCall, ToolResultMessage]:
    kind = part["type"]
    name = require(part, "toolName", str, where) if kind == "dynamic-tool" else kind[5:]
    call_id = require(part, "toolCallId", str, where)
    state = require(part, "state", str, where)
    arguments = part.get("input")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise BadRequest(f"{where}.input: must be an object (the tool's arguments)")
    call = ToolCall(id=call_id, name=name, arguments=arguments)
    if state == "output-available":
        return call, ToolResultMessage.of(call, part.get("output"))
    if state == "output-error":
        error = optional(part, "errorText", str, where) or "the tool failed"
        return call, ToolResultMessage.of(call, error, is_error=True)
    if state == "output-denied":
        return call, ToolResultMessage.of(call, _DENIED, is_error=True)
    raise BadRequest(
        f"{where}.state: tool call {call_id!r} is {state!r} and has no output yet; add its "
        "result (addToolOutput) before asking for the next answer"
    )


def _assistant(parts: list[dict[str, Any]], where: str, out: list[Message]) -> None:
    """An assistant UI message: one turn per step, each followed by its tool results."""
    content: list[AssistantContent] = []
    results: list[ToolResultMessage] = []

    def flush() -> None:
        if content:
            out.append(AssistantMessage(content=list(content)))
        out.extend(results)
        content.clear()
        results.clear()

    for j, part in enumerate(parts):
        w = f"{where}.parts[{j}]"
        kind = part["type"]
        if kind in ("text", "reasoning") and results:
            flush()  # text after a tool call: the next step of the same message
        if kind == "text":
            content.append(TextContent(text=require(part, "text", str, w)))
        elif kind == "reasoning":
            content.append(ThinkingContent(thinking=require(part, "text", str, w)))
        elif kind.startswith("tool-") or kind == "dynamic-tool":
            call, result = _tool_part(part, w)
            content.append(call)
            results.append(result)
        elif kind == "step-start":
            flush()
        elif not (_is_app_part(kind) or kind == "file"):
            raise BadRequest(f"{w}.type: {kind!r} parts are not accepted in an assistant message")
    flush()


def _parts(message: dict[str, Any], where: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = require(message, "parts", list, where)
    for j, part in enumerate(parts):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise BadRequest(f"{where}.parts[{j}]: must be an object with a 'type'")
    return parts


def _system_text(parts: list[dict[str, Any]], where: str) -> str:
    texts = []
    for j, part in enumerate(parts):
        if part["type"] != "text":
            raise BadRequest(f"{where}.parts[{j}]: a system message holds only text parts")
        texts.append(require(part, "text", str, f"{where}.parts[{j}]"))
    return "".join(texts)


def parse_ui_chat_request(
    body: bytes,
    *,
    allow_server_tools: frozenset[str] = frozenset(),
    default_model: str | None = None,
) -> ClientRequest:
    """A ``useChat`` request body as a typed request (``default_model`` where the body
    names none); raises `streamfn.core.UsageError` naming the field that is wrong."""
    obj = decode_body(body)
    check_fields(obj, _FIELDS, _IGNORED, "request")
    model = chosen_model(obj.get("model"), default_model, "request.model")
    trigger = optional(obj, "trigger", str, "request")
    if trigger is not None and trigger not in TRIGGERS:
        raise BadRequest(f"request.trigger: must be one of {', '.join(sorted(TRIGGERS))}")
    system = [s] if (s := optional(obj, "system", str, "request")) else []
    out: list[Message] = []
    messages = require(obj, "messages", list, "request")
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise BadRequest(f"{where}: must be an object")
        role = require(message, "role", str, where)
        parts = _parts(message, where)
        if role == "user":
            out.append(_user(parts, where))
        elif role == "assistant":
            _assistant(parts, where, out)
        elif role == "system":
            system.append(_system_text(parts, where))
        else:
            raise BadRequest(f"{where}.role: must be 'system', 'user' or 'assistant'")
    if not out:
        raise BadRequest("request.messages: holds no user or assistant message")
    # an answer after a client-side tool's output continues the last assistant message
    last = messages[-1]
    continued = last.get("id") if last.get("role") == "assistant" else None
    echo = {"messageId": continued} if isinstance(continued, str) and continued else {}
    options = Options(
        temperature=number(obj, "temperature", "request"),
        max_tokens=integer(obj, "maxOutputTokens", "request"),
    )
    check_ranges(options, "request", {"max_tokens": "maxOutputTokens"})
    context = Context(
        messages=out,
        system_prompt="\n\n".join(system) or None,
        tools=function_tools(obj.get("tools"), "request.tools", "inputSchema"),
    )
    request = ClientRequest(
        model=model, context=typed_context(context), options=options, stream=True, echo=echo
    )
    return refuse_server_tools(request, allow_server_tools)
