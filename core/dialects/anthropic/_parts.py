"""Parts of an Anthropic Messages body the feature modules plan: images and documents
(and the documents it refuses), and the structured-output format."""

from __future__ import annotations

from typing import Any

from streamfn.core._messages import DocumentContent, ImageContent
from streamfn.core.catalogue._capabilities import UnsupportedInput
from streamfn.core.content._documents import document_text
from streamfn.core.json._schema import OutputSchema, strict_schema

__all__ = ["anthropic_output_format", "anthropic_part", "check_document"]


def anthropic_part(part: ImageContent | DocumentContent) -> dict[str, Any]:
    """An ``image`` or ``document`` block (base64, text or url source)."""
    if isinstance(part, ImageContent):
        if part.url is not None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
        return {"type": "image", "source": source}
    block: dict[str, Any] = {"type": "document"}
    if part.url is not None:
        block["source"] = {"type": "url", "url": part.url}
    elif part.mime_type.lower().startswith("text/"):
        text = document_text(part)
        block["source"] = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        block["source"] = {"type": "base64", "media_type": "application/pdf", "data": part.data}
    if part.title:
        block["title"] = part.title
    return block


def check_document(part: DocumentContent, where: str) -> None:
    """Anthropic takes PDF or text documents given as bytes (a URL it fetches itself)."""
    mime = part.mime_type.lower()
    if part.url is None and mime != "application/pdf" and not mime.startswith("text/"):
        raise UnsupportedInput(
            f"anthropic takes PDF or text documents, not {part.mime_type!r} ({where}); "
            "convert it to PDF or extract its text"
        )


def anthropic_output_format(out: OutputSchema) -> dict[str, Any]:
    """Messages API ``output_config.format`` (objects closed, as Anthropic requires)."""
    return {"type": "json_schema", "schema": strict_schema(out.schema)[0]}
