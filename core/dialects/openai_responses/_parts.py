"""Parts of a Responses API body the feature modules plan: images and files, and the
structured-output format."""

from __future__ import annotations

from typing import Any

from streamfn.core._messages import DocumentContent, ImageContent
from streamfn.core.content._documents import data_url, document_filename
from streamfn.core.json._schema import OutputSchema, strict_schema

__all__ = ["responses_part", "responses_text_format"]


def responses_part(part: ImageContent | DocumentContent, number: int = 0) -> dict[str, Any]:
    """An ``input_image`` (``detail`` is required by the API's type) or ``input_file``."""
    if isinstance(part, ImageContent):
        url = part.url or data_url(part)
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if part.url is not None:
        return {"type": "input_file", "file_url": part.url}
    filename = document_filename(part, number)
    return {"type": "input_file", "file_data": data_url(part), "filename": filename}


def responses_text_format(out: OutputSchema) -> dict[str, Any]:
    """Responses API ``text.format``."""
    schema, strict = strict_schema(out.schema)
    return {"type": "json_schema", "name": out.name, "schema": schema, "strict": strict}
