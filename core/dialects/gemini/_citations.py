"""Citations in Gemini's format: ``groundingMetadata`` (grounding chunks and the
answer segments they support)."""

from __future__ import annotations

from typing import Any

from streamfn.core.content._citations import Citation, int_field, text_field

__all__ = ["gemini_citations", "to_gemini_grounding"]


def gemini_citations(metadata: Any) -> list[Citation]:
    """Gemini ``groundingMetadata``: one `Citation` per (supported segment, web source);
    sources no segment points at are listed once each, with no span."""
    if not isinstance(metadata, dict):
        return []
    chunks = metadata.get("groundingChunks")
    sources: list[tuple[str, str | None]] = []
    for chunk in chunks if isinstance(chunks, list) else []:
        web = chunk.get("web") if isinstance(chunk, dict) else None
        url = text_field(web.get("uri")) if isinstance(web, dict) else None
        sources.append((url or "", text_field(web.get("title")) if isinstance(web, dict) else None))
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
                    cited_text=text_field(segment.get("text")),
                    start=int_field(
                        segment.get("startIndex", 0 if "endIndex" in segment else None)
                    ),
                    end=int_field(segment.get("endIndex")),
                )
            )
    for number, (url, title) in enumerate(sources):
        if url and number not in cited:
            out.append(Citation(kind="grounding", url=url, title=title))
    return out


# -- writers: what a client of each format receives ------------------------------


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
