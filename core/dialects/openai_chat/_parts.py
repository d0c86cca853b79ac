"""Images and files in a Chat Completions body."""

from __future__ import annotations

from typing import Any

from streamfn.core._documents import data_url, document_filename
from streamfn.core._messages import DocumentContent, ImageContent

__all__ = ["openai_chat_part"]


def openai_chat_part(part: ImageContent | DocumentContent, number: int = 0) -> dict[str, Any]:
    """An ``image_url`` part (a URL or a data: URL) or a ``file`` part (file_data)."""
    if isinstance(part, ImageContent):
        return {"type": "image_url", "image_url": {"url": part.url or data_url(part)}}
    return {
        "type": "file",
        "file": {"file_data": data_url(part), "filename": document_filename(part, number)},
    }
