"""AG-UI ``RunAgentInput`` -> `ClientRequest` (see `inbound` for the rules).

The body an AG-UI client (``HttpAgent``) posts to run an agent: ``threadId``
and ``runId`` (echoed on ``RUN_STARTED`` and ``RUN_FINISHED``), ``messages``,
``tools`` (``{name, description, parameters}``: tools the front end runs),
``context`` (``{description, value}`` entries, given to the model after the
system prompt), ``state`` and ``forwardedProps``. The model comes from
``forwardedProps.model``, else the server's default; other
``forwardedProps`` keys are a 400 (a client chooses what to generate, never
how the server runs). ``state`` is the application's and is not sent to the
model; ``resume`` answers interrupts, which this server never raises, so a
non-empty one is a 400.

Messages: ``system`` and ``developer`` join the system prompt; ``user``
content is a string or parts (text, image, document: inline ``data`` or,
where the operator allows them, an http(s) ``url``; audio, video and
provider file handles are 400s); ``assistant`` content and ``toolCalls``;
``tool`` results (``error`` marks a failed one). ``reasoning`` and
``activity`` messages are the client's record and are not sent to the model
(a provider accepts reasoning back only with its own signature).
"""

from __future__ import annotations

from typing import Any, Final

from streamfn.core._accumulate import parse_arguments
from streamfn.core._messages import (
    AssistantContent,
    AssistantMessage,
    Context,
    Message,
    TextContent,
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
    chosen_model,
    client_url,
    decode_body,
    function_tools,
    image_or_document,
    optional,
    refuse_server_tools,
    require,
    typed_context,
)

__all__ = ["parse_agui_request"]

_FIELDS: Final = frozenset(
    {"threadId", "runId", "messages", "tools", "context", "state", "forwardedProps", "resume"}
)
#: accepted and not acted on: run bookkeeping of the client's
_IGNORED: Final = frozenset({"parentRunId", "protocolVersion"})
_FORWARDED: Final = frozenset({"model"})
_SKIPPED_ROLES: Final = frozenset({"reasoning", "activity"})


def _part(part: Any, where: str) -> UserContent:
    if not isinstance(part, dict):
        raise BadRequest(f"{where}: must be an object")
    kind = part.get("type")
    if kind == "text":
        return TextContent(text=require(part, "text", str, where))
    if kind not in ("image", "document"):
        raise BadRequest(f"{where}.type: {kind!r} parts are not accepted (text, image, document)")
    image = kind == "image"
    source = require(part, "source", dict, where)
    w = f"{where}.source"
    value = require(source, "value", str, w)
    if source.get("type") == "data":
        return image_or_document(
            image, w, data=value, mime_type=require(source, "mimeType", str, w)
        )
    if source.get("type") == "url":
        mime = optional(source, "mimeType", str, w)
        typed = {"mime_type": mime} if mime else {}
        return image_or_document(image, w, url=client_url(value, f"{w}.value"), **typed)
    raise BadRequest(
        f"{w}.type: only 'data' and 'url' sources are accepted (a provider file handle would be read with the server's credentials)"
    )


def _content(value: Any, where: str) -> list[UserContent]:
    if value is None:
        return []
    if isinstance(value, str):
        return [TextContent(text=value)]
    if not isinstance(value, list):
        raise BadRequest(f"{where}: must be a string or a list of parts")
    return [_part(p, f"{where}[{j}]") for j, p in enumerate(value)]


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"{where}: must be a string")
    return value


def _assistant(msg: dict[str, Any], where: str, names: dict[str, str]) -> AssistantMessage:
    content: list[AssistantContent] = []
    text = _text(msg.get("content"), f"{where}.content")
    if text:
        content.append(TextContent(text=text))
    for j, call in enumerate(optional(msg, "toolCalls", list, where) or []):
        w = f"{where}.toolCalls[{j}]"
        if not isinstance(call, dict):
            raise BadRequest(f"{w}: must be an object")
        fn = require(call, "function", dict, w)
        args_json = require(fn, "arguments", str, f"{w}.function")
        name = require(fn, "name", str, f"{w}.function")
        call_id = require(call, "id", str, w)
        arguments, unparsed = parse_arguments(args_json)
        if unparsed is not None:
            raise BadRequest(
                f"{w}.function.arguments (tool call {call_id!r} of {name!r}): {unparsed}; "
                "send the arguments the call was made with, a JSON object"
            )
        names[call_id] = name
        content.append(
            ToolCall(id=call_id, name=name, arguments=arguments, arguments_json=args_json)
        )
    return AssistantMessage(content=content)


def _message(
    msg: Any, i: int, system: list[str], out: list[Message], names: dict[str, str]
) -> None:
    where = f"messages[{i}]"
    if not isinstance(msg, dict):
        raise BadRequest(f"{where}: must be an object")
    role = require(msg, "role", str, where)
    if role in ("system", "developer"):
        system.append(_text(msg.get("content"), f"{where}.content"))
    elif role == "user":
        out.append(UserMessage(content=_content(msg.get("content"), f"{where}.content")))
    elif role == "assistant":
        out.append(_assistant(msg, where, names))
    elif role == "tool":
        call_id = require(msg, "toolCallId", str, where)
        error = optional(msg, "error", str, where)
        content = _content(msg.get("content"), f"{where}.content")
        if error and not content:
            content = [TextContent(text=error)]
        out.append(
            ToolResultMessage(
                tool_call_id=call_id,
                tool_name=names.get(call_id, ""),
                content=content,
                is_error=bool(error),
            )
        )
    elif role not in _SKIPPED_ROLES:
        raise BadRequest(f"{where}.role: unknown role {role!r}")


def _context_text(value: Any) -> str | None:
    entries = []
    for i, entry in enumerate(value or ()):
        w = f"request.context[{i}]"
        if not isinstance(entry, dict):
            raise BadRequest(f"{w}: must be an object")
        entries.append(
            f"{require(entry, 'description', str, w)}:\n{require(entry, 'value', str, w)}"
        )
    return "\n\n".join(entries) or None


def _forwarded_model(value: Any, default: str | None) -> str:
    props = {} if value is None else value
    if not isinstance(props, dict):
        raise BadRequest("request.forwardedProps: must be an object")
    for key in props:
        if key not in _FORWARDED:
            raise BadRequest(
                f"request.forwardedProps.{key}: not accepted by this server (it reads only "
                "'model'; how a request is run is the server's configuration)"
            )
    return chosen_model(props.get("model"), default, "request.forwardedProps.model")


def parse_agui_request(
    body: bytes,
    *,
    allow_server_tools: frozenset[str] = frozenset(),
    default_model: str | None = None,
) -> ClientRequest:
    """An AG-UI ``RunAgentInput`` body as a typed request (``default_model`` where
    the body names none); raises `streamfn.core.UsageError` naming the field that
    is wrong."""
    obj = decode_body(body)
    check_fields(obj, _FIELDS, _IGNORED, "request")
    thread_id = require(obj, "threadId", str, "request")
    run_id = require(obj, "runId", str, "request")
    model = _forwarded_model(obj.get("forwardedProps"), default_model)
    if optional(obj, "resume", list, "request"):
        raise BadRequest(
            "request.resume: this server raises no interrupts, so there is none to resume"
        )
    system: list[str] = []
    out: list[Message] = []
    names: dict[str, str] = {}
    for i, msg in enumerate(require(obj, "messages", list, "request")):
        _message(msg, i, system, out, names)
    if not out:
        raise BadRequest("request.messages: holds no user, assistant or tool message")
    context_text = _context_text(optional(obj, "context", list, "request"))
    if context_text:
        system.append(context_text)
    context = Context(
        messages=out,
        system_prompt="\n\n".join(s for s in system if s) or None,
        tools=function_tools(obj.get("tools"), "request.tools", "parameters"),
    )
    request = ClientRequest(
        model=model,
        context=typed_context(context),
        options=Options(),
        stream=True,
        echo={"threadId": thread_id, "runId": run_id},
    )
    return refuse_server_tools(request, allow_server_tools)
