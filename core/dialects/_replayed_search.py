"""Anthropic web-search blocks a client sends back in an assistant turn.

When its operator allows web search, `streamfn serve` streams an Anthropic client
the upstream's own ``server_tool_use`` (``web_search``) and ``web_search_tool_result``
blocks; the anthropic SDK sends them back on the next turn, as the Messages API
expects of a conversation. They become `OpaqueContent` of provider ``anthropic``:
an Anthropic upstream gets them as they were, any other upstream goes without them
(`streamfn.core.providers._convert`: server-tool blocks replay only to the provider
that made them; the turn's text, with what it learnt from the search, stays).

Replayed blocks are history: no search runs again. They are still the client's
bytes sent on the operator's key, so only what Anthropic documents for them (the
SDK's ``ServerToolUseBlockParam`` and ``WebSearchToolResultBlockParam``) passes,
key by key, and only where the operator allows web search at all:

- a ``server_tool_use`` is a ``web_search`` with a ``query`` and nothing else
  (not ``web_fetch`` nor ``code_execution``, which reach URLs and containers);
- a ``web_search_tool_result`` answers a search of the same turn with
  ``web_search_result`` entries or a ``web_search_tool_result_error``; a page's
  ``url`` is a label nobody fetches (its text is the ``encrypted_content``
  Anthropic made), so ``--allow-input-urls`` does not apply to it;
- ``cache_control`` is dropped, as on every block (the server places its own
  5-minute marks: a client's 1-hour TTL would bill the operator double), and a
  ``caller`` only of ``{"type": "direct"}`` (the default) is accepted and dropped.

Anything else is a 400 naming the block and what to do.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from .._messages import OpaqueContent
from ._request_fields import BadRequest, require

__all__ = ["REPLAYED_SEARCH_BLOCKS", "replayable", "replayed_search_block"]

#: the assistant block types a client may send back (with web search allowed)
REPLAYED_SEARCH_BLOCKS: Final = frozenset({"server_tool_use", "web_search_tool_result"})
#: Anthropic's web_search_tool_result_error codes (anthropic.types.WebSearchToolResultErrorCode)
_ERROR_CODES: Final = frozenset(
    {
        "invalid_tool_input",
        "unavailable",
        "max_uses_exceeded",
        "too_many_requests",
        "query_too_long",
        "request_too_large",
    }
)
#: the fields of a web_search_result besides its optional page_age
_PAGE_FIELDS: Final = frozenset({"type", "url", "title", "encrypted_content"})
#: keys either block may carry that the server drops (see the module docstring)
_DROPPED: Final = frozenset({"cache_control", "caller"})


def replayed_search_block(
    block: dict[str, Any], where: str, searches: set[str], allowed: frozenset[str]
) -> OpaqueContent:
    """``block`` (a `REPLAYED_SEARCH_BLOCKS` type) as the `OpaqueContent` an Anthropic
    upstream gets back; `BadRequest` unless web search is ``allowed`` and the block has
    exactly a documented shape. ``searches``: the ids of the turn's searches so far
    (a search adds its own; a result must answer one of them)."""
    kind = block["type"]
    if "web_search" not in allowed:
        raise BadRequest(
            f"{where}: a {kind!r} block replays a web search, and web search is off on this "
            "server; leave the turn's server_tool_use and web_search_tool_result blocks out "
            "(its operator can allow web search with --allow-server-tools web_search)"
        )
    _check_dropped(block, where)
    if kind == "server_tool_use":
        kept = _search(block, where)
        searches.add(kept["id"])
    else:
        kept = _result(block, where, searches)
    return OpaqueContent(
        provider="anthropic", block_type=kind, json=msgspec.json.encode(kept).decode()
    )


def replayable(block: OpaqueContent) -> dict[str, Any] | None:
    """The Anthropic web-search block an `OpaqueContent` from a native client carries
    (what the server's native stream gave it), for `replayed_search_block`; None for
    any other opaque block."""
    if block.provider != "anthropic" or block.block_type not in REPLAYED_SEARCH_BLOCKS:
        return None
    try:
        raw = msgspec.json.decode(block.json)
    except msgspec.DecodeError:
        return None
    return raw if isinstance(raw, dict) and raw.get("type") == block.block_type else None


def _check_dropped(block: dict[str, Any], where: str) -> None:
    caller = block.get("caller")
    if caller is not None and caller != {"type": "direct"}:
        raise BadRequest(
            f"{where}.caller: only a search the model made itself ({{'type': 'direct'}}) "
            "can be replayed through this server"
        )


def _exact(
    obj: dict[str, Any], required: frozenset[str], optional: frozenset[str], where: str
) -> None:
    """No key beyond ``required | optional``, every required one present."""
    extra = sorted(set(obj) - required - optional)
    if extra:
        raise BadRequest(
            f"{where}: unexpected field {extra[0]!r} (a replayed web-search block carries "
            "only the fields Anthropic sent)"
        )
    missing = sorted(required - set(obj))
    if missing:
        raise BadRequest(f"{where}: missing required field {missing[0]!r}")


def _search(block: dict[str, Any], where: str) -> dict[str, Any]:
    _exact(block, frozenset({"type", "id", "name", "input"}), _DROPPED, where)
    ident = require(block, "id", str, where)
    if block["name"] != "web_search":
        raise BadRequest(
            f"{where}.name: only 'web_search' server tool uses can be replayed through this "
            f"server, not {block['name']!r}; leave the block and its result out"
        )
    query_input = require(block, "input", dict, where)
    _exact(query_input, frozenset({"query"}), frozenset(), f"{where}.input")
    query = require(query_input, "query", str, f"{where}.input")
    return {"type": "server_tool_use", "id": ident, "name": "web_search", "input": {"query": query}}


def _result(block: dict[str, Any], where: str, searches: set[str]) -> dict[str, Any]:
    _exact(block, frozenset({"type", "tool_use_id", "content"}), _DROPPED, where)
    ident = require(block, "tool_use_id", str, where)
    if ident not in searches:
        raise BadRequest(
            f"{where}.tool_use_id: {ident!r} answers no web_search server_tool_use before it "
            "in this turn"
        )
    content = block["content"]
    if isinstance(content, dict):
        w = f"{where}.content"
        _exact(content, frozenset({"type", "error_code"}), frozenset(), w)
        code = content["error_code"]
        if (
            content["type"] != "web_search_tool_result_error"
            or not isinstance(code, str)  # a list or object is no code (and unhashable)
            or code not in _ERROR_CODES
        ):
            raise BadRequest(f"{w}: not a web_search_tool_result_error Anthropic documents")
        kept: Any = {"type": "web_search_tool_result_error", "error_code": code}
    elif isinstance(content, list):
        kept = [_page(page, f"{where}.content[{i}]") for i, page in enumerate(content)]
    else:
        raise BadRequest(f"{where}.content: must be a list of web_search_result or an error")
    return {"type": "web_search_tool_result", "tool_use_id": ident, "content": kept}


def _page(page: Any, where: str) -> dict[str, Any]:
    if not isinstance(page, dict) or page.get("type") != "web_search_result":
        raise BadRequest(f"{where}: must be a web_search_result object")
    _exact(page, _PAGE_FIELDS, frozenset({"page_age"}), where)
    kept: dict[str, Any] = {"type": "web_search_result"}
    for key in ("url", "title", "encrypted_content"):
        kept[key] = require(page, key, str, where)
    if page.get("page_age") is not None:
        kept["page_age"] = require(page, "page_age", str, where)
    return kept
