"""Images and documents in a Gemini body: inline bytes or a file URI."""

from __future__ import annotations

import re
from typing import Any, Final

from streamfn.core._messages import DocumentContent, ImageContent

__all__ = ["gemini_part"]

_IMAGE_EXTENSIONS: Final = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "pdf": "application/pdf",
}
_EXTENSION: Final = re.compile(r"\.([A-Za-z0-9]+)(?:[?#].*)?$")


def _url_mime(part: ImageContent | DocumentContent) -> str | None:
    """The declared MIME type, else one guessed from the URL's extension."""
    if part.mime_type:
        return part.mime_type
    match = _EXTENSION.search(part.url or "")
    return _IMAGE_EXTENSIONS.get(match.group(1).lower()) if match else None


def gemini_part(part: ImageContent | DocumentContent) -> dict[str, Any]:
    """``inlineData`` for bytes, ``fileData`` (``fileUri``) for a URL."""
    if part.url is not None:
        data: dict[str, Any] = {"fileUri": part.url}
        mime = _url_mime(part)
        if mime:
            data["mimeType"] = mime
        return {"fileData": data}
    return {"inlineData": {"mimeType": part.mime_type, "data": part.data}}
