"""Web-search grounding shown to clients whose format has no field for it.

A provider that searched the web while answering returns what it searched for
and the pages it used: Anthropic's ``server_tool_use`` (``web_search``, with
the query) and ``web_search_tool_result`` blocks, which streamfn carries as
`OpaqueBlock`. An Anthropic client gets those blocks back as they were; an
OpenAI Chat Completions client (or the agent contract) has nowhere to put
them and would silently lose the sources. `AppendSources` keeps them visible:
it passes every event through and, when the stream ends normally and a
search happened, adds one final text block listing the queries and the
numbered sources as markdown (the reference gateway's behaviour, in English).

Off by default: `streamfn serve --append-sources` turns it on for the
dialects without a citation field. Pure and incremental, like every
transform here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from .._events import (
    Done,
    Event,
    OpaqueBlock,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingStart,
    ToolCallStart,
)

__all__ = ["AppendSources", "append_sources", "appending_sources", "sources_markdown"]

_OPENS: Final = (TextStart, ThinkingStart, ToolCallStart, OpaqueBlock)


def _search(block: OpaqueBlock) -> tuple[list[str], list[tuple[str, str]]]:
    """(queries, [(title, url)]) found in one provider block; empty for anything else."""
    if block.provider != "anthropic" or block.block_type not in (
        "server_tool_use",
        "web_search_tool_result",
    ):
        return [], []
    try:
        raw: Any = msgspec.json.decode(block.json)
    except msgspec.DecodeError:
        return [], []
    if not isinstance(raw, dict):
        return [], []
    if block.block_type == "server_tool_use":
        query = (raw.get("input") or {}).get("query") if raw.get("name") == "web_search" else None
        return ([query] if isinstance(query, str) and query else []), []
    results = raw.get("content")
    sources = [
        (str(r.get("title") or r["url"]), str(r["url"]))
        for r in (results if isinstance(results, list) else [])
        if isinstance(r, dict) and isinstance(r.get("url"), str)
    ]
    return [], sources


def sources_markdown(queries: list[str], sources: list[tuple[str, str]]) -> str:
    """The appended text: the queries, then ``[n] [title](url)`` per distinct source."""
    parts = ["\n\n---"]
    if queries:
        parts.append("**Searched:** " + "; ".join(queries))
    if sources:
        lines = [f"[{i}] [{title}]({url})" for i, (title, url) in enumerate(sources, 1)]
        parts.append("**Sources:**\n" + "\n".join(lines))
    return "\n".join(parts[:1]) + "\n" + "\n\n".join(parts[1:])


class AppendSources:
    """Events in, the same events out, plus a sources text block before `Done`."""

    def __init__(self) -> None:
        self._blocks = 0
        self._queries: list[str] = []
        self._sources: list[tuple[str, str]] = []
        self._urls: set[str] = set()

    def feed(self, event: Event) -> list[Event]:
        if isinstance(event, _OPENS):
            self._blocks += 1
            if isinstance(event, OpaqueBlock):
                queries, sources = _search(event)
                self._queries += [q for q in queries if q not in self._queries]
                for source in sources:
                    if source[1] not in self._urls:
                        self._urls.add(source[1])
                        self._sources.append(source)
            return [event]
        if isinstance(event, Done) and (self._queries or self._sources):
            index = self._blocks
            text = sources_markdown(self._queries, self._sources)
            return [TextStart(index), TextDelta(index, text), TextEnd(index), event]
        return [event]


def append_sources(events: Iterable[Event]) -> list[Event]:
    """A whole stream through `AppendSources`."""
    transform = AppendSources()
    return [out for event in events for out in transform.feed(event)]


def appending_sources(
    encode: Callable[[list[Event]], bytes],
) -> Callable[[list[Event]], bytes]:
    """A list encoder that writes the sources block too (for a server's stream)."""
    feed = AppendSources().feed
    return lambda events: encode([out for event in events for out in feed(event)])
