"""Citations in Anthropic's Messages format: ``citations_delta`` (web-search result
locations, and character/page/block locations in the caller's documents)."""

from __future__ import annotations

from typing import Any, Final

from streamfn.core.content._citations import Citation, int_field, text_field

__all__ = ["anthropic_citation", "to_anthropic"]

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
        url = text_field(raw.get("url"))
        if url is None:
            return None
        return Citation(
            kind=kind,
            url=url,
            title=text_field(raw.get("title")),
            cited_text=text_field(raw.get("cited_text")),
            encrypted_index=text_field(raw.get("encrypted_index")),
        )
    span = _ANTHROPIC_SPANS.get(kind)
    if span is None:
        return None
    return Citation(
        kind=kind,
        url=text_field(raw.get("source")),
        title=text_field(raw.get("document_title")) or text_field(raw.get("title")),
        cited_text=text_field(raw.get("cited_text")),
        start=int_field(raw.get(span[0])),
        end=int_field(raw.get(span[1])),
        document_index=int_field(raw.get("document_index", raw.get("search_result_index"))),
    )


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
