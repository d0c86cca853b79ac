"""Parts of a Chat Completions body the feature modules plan: images and files, and
the structured-output format."""

from __future__ import annotations

from typing import Any

from streamfn.core._messages import DocumentContent, ImageContent
from streamfn.core.content._documents import data_url, document_filename
from streamfn.core.json._schema import OutputSchema, strict_schema

__all__ = ["openai_chat_part", "openai_response_format"]


def openai_chat_part(part: ImageContent | DocumentContent, number: int = 0) -> dict[str, Any]:
    """An ``image_url`` part (a URL or a data: URL) or a ``file`` part (file_data)."""
    if isinstance(part, ImageContent):
        return {"type": "image_url", "image_url": {"url": part.url or data_url(part)}}
    return {
        "type": "file",
        "file": {"file_data": data_url(part), "filename": document_filename(part, number)},
    }


def openai_response_format(out: OutputSchema) -> dict[str, Any]:
    """Chat Completions ``response_format`` (OpenAI, Mistral, the compatible family)."""
    schema, strict = strict_schema(out.schema)
    return {
        "type": "json_schema",
        "json_schema": {"name": out.name, "schema": schema, "strict": strict},
    }
