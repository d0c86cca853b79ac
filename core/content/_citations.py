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

The ``*_citation`` readers below turn one provider object into a `Citation`
(None for anything unrecognised: a new citation type is skipped, never an
error); the ``to_*`` writers are what the server's encoders send a client,
where its format can express a citation.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = [
    "Citation",
    "anthropic_citation",
    "gemini_citations",
    "openai_citation",
    "to_anthropic",
    "to_gemini_grounding",
    "to_openai_annotation",
]


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


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def openai_citation(annotation: Any) -> Citation | None:
    """An OpenAI ``url_citation`` annotation (Chat Completions nests the fields
    under ``url_citation``; Responses puts them on the annotation itself)."""
    if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
        return None
    fields = annotation.get("url_citation")
    fields = fields if isinstance(fields, dict) else annotation
    url = _str(fields.get("url"))
    if url is None:
        return None
    return Citation(
        kind="url_citation",
        url=url,
        title=_str(fields.get("title")),
        start=_int(fields.get("start_index")),
        end=_int(fields.get("end_index")),
    )


#: Anthropic location fields, by citation type: (start, end) field names
_ANTHROPIC_SPANS: Final = {
    "char_location": ("start_char_index", "end_char_index"),
    "page_location": ("start_page_number", "end_page_number"),
    "content_block_location": ("start_block_index", "end_block_index"),
    "search_result_location": ("start_block_index", "end_block_index"),
}


def anthropic_citation(raw: Any) -> Citation | None:
    """One citation of an Anthropic ``citations_delta`` (or a text block's ``citations``)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return None
    kind = raw["type"]
    if kind == "web_search_result_location":
        url = _str(raw.get("url"))
        if url is None:
            return None
        return Citation(
            kind=kind,
            url=url,
            title=_str(raw.get("title")),
            cited_text=_str(raw.get("cited_text")),
            encrypted_index=_str(raw.get("encrypted_index")),
        )
    span = _ANTHROPIC_SPANS.get(kind)
    if span is None:
        return None
    return Citation(
        kind=kind,
        url=_str(raw.get("source")),
        title=_str(raw.get("document_title")) or _str(raw.get("title")),
        cited_text=_str(raw.get("cited_text")),
        start=_int(raw.get(span[0])),
        end=_int(raw.get(span[1])),
        document_index=_int(raw.get("document_index", raw.get("search_result_index"))),
    )


def gemini_citations(metadata: Any) -> list[Citation]:
    """Gemini ``groundingMetadata``: one `Citation` per (supported segment, web source);
    sources no segment points at are listed once each, with no span."""
    if not isinstance(metadata, dict):
        return []
    chunks = metadata.get("groundingChunks")
    sources: list[tuple[str, str | None]] = []
    for chunk in chunks if isinstance(chunks, list) else []:
        web = chunk.get("web") if isinstance(chunk, dict) else None
        url = _str(web.get("uri")) if isinstance(web, dict) else None
        sources.append((url or "", _str(web.get("title")) if isinstance(web, dict) else None))
    out: list[Citation] = []
    cited: set[int] = set()
    supports = metadata.get("groundingSupports")
    for support in supports if isinstance(supports, list) else []:
        if not isinstance(support, dict):
            continue
        segment = support.get("segment")
        segment = segment if isinstance(segment, dict) else {}
        indices = support.get("groundingChunkIndices")
        for number in indices if isinstance(indices, list) else []:
            if type(number) is not int or not 0 <= number < len(sources) or not sources[number][0]:
                continue
            cited.add(number)
            url, title = sources[number]
            out.append(
                Citation(
                    kind="grounding",
                    url=url,
                    title=title,
                    cited_text=_str(segment.get("text")),
                    start=_int(segment.get("startIndex", 0 if "endIndex" in segment else None)),
                    end=_int(segment.get("endIndex")),
                )
            )
    for number, (url, title) in enumerate(sources):
        if url and number not in cited:
            out.append(Citation(kind="grounding", url=url, title=title))
    return out


# -- writers: what a client of each format receives ------------------------------


def to_openai_annotation(
    citation: Citation, *, nested: bool, offset: int = 0
) -> dict[str, Any] | None:
    """A ``url_citation`` annotation (``nested``: Chat Completions' shape); None when
    the citation has no URL (OpenAI annotations always point at one). ``offset``: the
    characters before this block in the message the annotation's span counts in."""
    if citation.url is None:
        return None
    # Only OpenAI's own spans count the answer's characters; others' are not moved over.
    own = citation.kind == "url_citation"
    fields: dict[str, Any] = {
        "url": citation.url,
        "title": citation.title or citation.url,
        "start_index": (citation.start or 0) + offset if own else 0,
        "end_index": (citation.end or 0) + offset if own else 0,
    }
    if nested:
        return {"type": "url_citation", "url_citation": fields}
    return {"type": "url_citation", **fields}


def to_anthropic(citation: Citation) -> dict[str, Any] | None:
    """An Anthropic citation object, for the kinds its format has; None for the rest
    (a web-search location needs the ``encrypted_index`` only Anthropic issues)."""
    if citation.kind == "web_search_result_location":
        if citation.url is None or citation.encrypted_index is None:
            return None
        return {
            "type": citation.kind,
            "url": citation.url,
            "title": citation.title,
            "cited_text": citation.cited_text or "",
            "encrypted_index": citation.encrypted_index,
        }
    span = _ANTHROPIC_SPANS.get(citation.kind)
    if span is None or citation.document_index is None:
        return None
    out: dict[str, Any] = {
        "type": citation.kind,
        "cited_text": citation.cited_text or "",
        "document_index": citation.document_index,
        "document_title": citation.title,
        span[0]: citation.start or 0,
        span[1]: citation.end or 0,
    }
    if citation.kind == "search_result_location":
        out["search_result_index"] = out.pop("document_index")
        out["source"] = citation.url or ""
        out["title"] = out.pop("document_title")
    return out


def to_gemini_grounding(citations: list[Citation]) -> dict[str, Any] | None:
    """``groundingMetadata`` for the citations that have a URL (None when none do)."""
    urls: dict[str, int] = {}
    chunks: list[dict[str, Any]] = []
    supports: list[dict[str, Any]] = []
    for citation in citations:
        if citation.url is None:
            continue
        number = urls.get(citation.url)
        if number is None:
            number = urls[citation.url] = len(chunks)
            web = {"uri": citation.url, "title": citation.title or citation.url}
            chunks.append({"web": web})
        if citation.end is not None:
            segment: dict[str, Any] = {"startIndex": citation.start or 0, "endIndex": citation.end}
            if citation.cited_text is not None and citation.kind == "grounding":
                segment["text"] = citation.cited_text
            supports.append({"segment": segment, "groundingChunkIndices": [number]})
    if not chunks:
        return None
    out: dict[str, Any] = {"groundingChunks": chunks}
    if supports:
        out["groundingSupports"] = supports
    return out
