"""Citations as data: the sources a provider says support a text block.

Providers report them four ways: OpenAI's ``url_citation`` annotations (Chat
Completions ``delta.annotations``, Responses
``response.output_text.annotation.added``), Anthropic's ``citations_delta``
(web-search result locations, and character/page/block locations in the
caller's documents) and Gemini's ``groundingMetadata`` (grounding chunks and
the answer segments they support). Each becomes a `Citation`; a decoder
hands them to its `Emitter` (``cite``) and they arrive on the text block's
`TextEnd` (``citations``), so the event grammar is unchanged, every chunking
of the same bytes gives the same citations, and the fold puts them on
`TextContent.citations`.

Each wire format's room reads its provider objects into a `Citation` (None
for anything unrecognised: a new citation type is skipped, never an error)
and writes what the server's encoders send a client, where its format can
express a citation; this module holds the record and the field readers they share.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Citation", "int_field", "text_field"]


class Citation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """One source for part of a text block.

    - ``kind``: the provider's name for it (``url_citation``,
      ``web_search_result_location``, ``char_location``, ``page_location``,
      ``content_block_location``, ``grounding``).
    - ``url``/``title``: the source (for a document citation, ``title`` is the
      document's title).
    - ``cited_text``: the quoted passage (Anthropic) or the supported segment
      of the answer (Gemini).
    - ``start``/``end``: where the cited span is, as the provider counts:
      the answer's characters (OpenAI ``start_index``/``end_index``), UTF-8
      bytes of the answer (Gemini segments), or characters/pages/blocks of
      the caller's document (Anthropic ``*_location``).
    - ``document_index``: which of the caller's documents (Anthropic).
    - ``encrypted_index``: Anthropic's opaque reference to a search result,
      needed to send a web-search citation back to Anthropic.
    """

    kind: str
    url: str | None = None
    title: str | None = None
    cited_text: str | None = None
    start: int | None = None
    end: int | None = None
    document_index: int | None = None
    encrypted_index: str | None = None


def text_field(value: Any) -> str | None:
    """A provider object's member as a string, None when it is not one."""
    return value if isinstance(value, str) else None


def int_field(value: Any) -> int | None:
    """A provider object's member as an integer (not a bool), None when it is not one."""
    return value if type(value) is int else None
