"""Citations in the OpenAI-style formats: ``url_citation`` annotations (Chat Completions
``delta.annotations``, Responses ``response.output_text.annotation.added``)."""

from __future__ import annotations

from typing import Any

from streamfn.core.content._citations import Citation, int_field, text_field

__all__ = ["openai_citation", "to_openai_annotation"]


def openai_citation(annotation: Any) -> Citation | None:
    """An OpenAI ``url_citation`` annotation (Chat Completions nests the fields
    under ``url_citation``; Responses puts them on the annotation itself)."""
    if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
        return None
    fields = annotation.get("url_citation")
    fields = fields if isinstance(fields, dict) else annotation
    url = text_field(fields.get("url"))
    if url is None:
        return None
    return Citation(
        kind="url_citation",
        url=url,
        title=text_field(fields.get("title")),
        start=int_field(fields.get("start_index")),
        end=int_field(fields.get("end_index")),
    )


#: Anthropic location fields, by citation type: (start, end) field names


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
