"""What a gateway client may make the server do with its credentials beyond a normal request.

The dialect parsers turn a client's request into our types; this is the policy
applied to the result before any upstream call, for every route:

- **Server tools** run and bill on the server's key. Beyond `refuse_server_tools`'
  type allowlist (``--allow-server-tools``), a tool's ``config`` may hold only the
  keys listed here for its type: anything else could swap the tool for another
  (``{"type": "mcp", "server_url": ...}`` sends the conversation to a server the
  client picked), reach the operator's files or containers, or set a 1-hour cache
  TTL. ``cache_control`` is dropped (the dialect already maps it to
  ``cache="auto"``, whose marks the server places); ``max_uses`` is capped; one
  tool per type.
- **Input URLs** (images, documents) are fetched by the upstream, not by this
  server; but an upstream on the operator's network (vLLM, llama.cpp) would fetch
  an intranet or cloud-metadata address for the client, a provider's own file
  URL reads the operator's uploads, and a URL bills far more input than
  ``--max-body-bytes`` lets through. So they are off unless the operator turns
  them on (``--allow-input-urls``), and even then never a loopback, private or
  link-local address, ``localhost``, or a provider's file host.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec

from ..messages import (
    Context,
    DocumentContent,
    ImageContent,
    ServerTool,
    ToolResultMessage,
    UserMessage,
)
from .request_fields import BadRequest, ClientRequest

__all__ = [
    "FILE_HOSTS",
    "MAX_INPUT_URLS",
    "MAX_SERVER_TOOL_USES",
    "SERVER_TOOL_CONFIG",
    "check_client_inputs",
]

#: the config keys a client may set per server-tool type (provider docs: Anthropic
#: web_search_20250305, OpenAI Responses web_search, Gemini googleSearch)
SERVER_TOOL_CONFIG: Final[dict[str, frozenset[str]]] = {
    "web_search": frozenset(
        {"max_uses", "allowed_domains", "blocked_domains", "user_location", "search_context_size"}
    ),
    "code_execution": frozenset(),
}
#: keys the dialects carry into ``config`` that the server handles itself
_DROPPED: Final = frozenset({"cache_control"})
#: the most searches one request may ask for (each is billed to the operator)
MAX_SERVER_TOOL_USES: Final = 10
#: the most image and document URLs one request may carry
MAX_INPUT_URLS: Final = 16
#: hosts whose URLs name a provider's stored files (the operator's uploads)
FILE_HOSTS: Final = frozenset(
    {
        "generativelanguage.googleapis.com",
        "storage.googleapis.com",
        "api.openai.com",
        "api.anthropic.com",
        "files.openai.com",
    }
)


def check_client_inputs(request: ClientRequest, *, allow_input_urls: bool) -> ClientRequest:
    """``request`` with its server tools' configs checked (and ``cache_control`` dropped),
    or `BadRequest` naming what the server will not do on the client's behalf."""
    _check_urls(request.context, allow_input_urls)
    tools = _checked_tools(request.context)
    if tools is None:
        return request
    context = msgspec.structs.replace(request.context, tools=tools)
    return msgspec.structs.replace(request, context=context)


def _checked_tools(context: Context) -> list[Any] | None:
    if not any(isinstance(tool, ServerTool) for tool in context.tools):
        return None
    seen: set[str] = set()
    out: list[Any] = []
    for number, tool in enumerate(context.tools):
        if not isinstance(tool, ServerTool):
            out.append(tool)
            continue
        where = f"tools[{number}] ({tool.type})"
        if tool.type in seen:
            raise BadRequest(f"{where}: one server tool of each type per request")
        seen.add(tool.type)
        config = {k: v for k, v in tool.config.items() if k not in _DROPPED}
        extra = sorted(set(config) - SERVER_TOOL_CONFIG.get(tool.type, frozenset()))
        if extra:
            raise BadRequest(
                f"{where}: {', '.join(extra)} cannot be set by a client of this server "
                "(server tools run on its credentials)"
            )
        uses = config.get("max_uses")
        if uses is not None and (type(uses) is not int or not 1 <= uses <= MAX_SERVER_TOOL_USES):
            raise BadRequest(
                f"{where}: max_uses must be an integer from 1 to {MAX_SERVER_TOOL_USES}"
            )
        out.append(ServerTool(type=tool.type, config=config))
    return out


def _check_urls(context: Context, allowed: bool) -> None:
    urls = [
        (number, part.url)
        for number, message in enumerate(context.messages)
        if isinstance(message, (UserMessage, ToolResultMessage))
        and isinstance(message.content, list)
        for part in message.content
        if isinstance(part, (ImageContent, DocumentContent)) and part.url is not None
    ]
    if not urls:
        return
    if not allowed:
        raise BadRequest(
            f"messages[{urls[0][0]}]: image and document URLs are off on this server; send "
            "the bytes (base64), or its operator can allow URLs with --allow-input-urls"
        )
    if len(urls) > MAX_INPUT_URLS:
        raise BadRequest(f"at most {MAX_INPUT_URLS} image and document URLs per request")
    for number, url in urls:
        problem = _url_problem(url)
        if problem:
            raise BadRequest(f"messages[{number}]: {problem}")


def _url_problem(url: str) -> str | None:
    """Why ``url`` may not go upstream for a client, or None."""
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return "not a valid URL"
    if not host:
        return "a URL needs a host"
    if host == "localhost" or host.endswith(".localhost"):
        return "a URL on this machine (localhost) is not passed on"
    if host in FILE_HOSTS:
        return f"{host} holds provider files (the operator's uploads); send the bytes"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if not address.is_global:
        return f"{host} is not a public address (loopback, private or link-local)"
    return None
