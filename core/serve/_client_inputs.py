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
  them on (``--allow-input-urls``), and even then only a public host, however its
  address is spelled (`input_urls`): the text of each URL is judged here, and the
  addresses its DNS name resolves to are judged by `check_resolved_hosts` once the
  shell has resolved the names `hosts_to_resolve` lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from .._messages import (
    Context,
    DocumentContent,
    ImageContent,
    ServerTool,
    ToolResultMessage,
    UserMessage,
)
from ..dialects._request_fields import BadRequest, ClientRequest
from ._input_urls import FILE_HOSTS, host_to_resolve, resolved_problem, url_problem

__all__ = [
    "FILE_HOSTS",
    "MAX_INPUT_URLS",
    "MAX_SERVER_TOOL_USES",
    "SERVER_TOOL_CONFIG",
    "check_client_inputs",
    "check_resolved_hosts",
    "hosts_to_resolve",
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


def _input_urls(context: Context) -> list[tuple[int, str]]:
    """(message number, URL) of every image and document URL in ``context``."""
    return [
        (number, part.url)
        for number, message in enumerate(context.messages)
        if isinstance(message, (UserMessage, ToolResultMessage))
        and isinstance(message.content, list)
        for part in message.content
        if isinstance(part, (ImageContent, DocumentContent)) and part.url is not None
    ]


def _check_urls(context: Context, allowed: bool) -> None:
    urls = _input_urls(context)
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
        problem = url_problem(url)
        if problem:
            raise BadRequest(f"messages[{number}]: {problem}")


def hosts_to_resolve(request: ClientRequest) -> dict[str, int]:
    """The DNS names in ``request``'s input URLs (each with the first message naming it)
    that the shell must resolve and hand to `check_resolved_hosts` before any upstream
    call. Empty when every URL host is an IP literal, or there are none."""
    names: dict[str, int] = {}
    for number, url in _input_urls(request.context):
        name = host_to_resolve(url)
        if name is not None:
            names.setdefault(name, number)
    return names


def check_resolved_hosts(names: Mapping[str, int], resolved: Mapping[str, Sequence[str]]) -> None:
    """`BadRequest` unless every name in ``names`` resolved (``resolved``: the addresses
    the shell found, none for a name that failed) to public addresses only."""
    for name, number in names.items():
        problem = resolved_problem(name, resolved.get(name, ()))
        if problem:
            raise BadRequest(f"messages[{number}]: {problem}")
