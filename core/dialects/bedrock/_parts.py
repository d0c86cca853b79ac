"""Parts of a Converse body the feature modules plan: documents (and the types Bedrock
takes), and the structured-output format."""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from streamfn.core._messages import DocumentContent
from streamfn.core.catalogue._capabilities import UnsupportedInput
from streamfn.core.json._schema import OutputSchema, strict_schema

__all__ = ["bedrock_document", "bedrock_text_format", "check_document"]

#: Bedrock's document formats by MIME type (Converse DocumentBlock.format)
_BEDROCK_FORMATS: Final = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}


def check_document(part: DocumentContent, where: str) -> None:
    """Refuse a document type Converse has no format for."""
    if part.mime_type.lower() not in _BEDROCK_FORMATS:
        raise UnsupportedInput(
            f"bedrock takes documents of types {', '.join(sorted(_BEDROCK_FORMATS))}, "
            f"not {part.mime_type!r} ({where}); convert it to one of them"
        )


_BEDROCK_NAME: Final = re.compile(r"[^A-Za-z0-9\-()\[\] ]+")


def bedrock_document(part: DocumentContent, number: int) -> dict[str, Any]:
    """A Converse ``document`` block; ``name`` keeps only the characters Bedrock allows
    (letters, digits, spaces, hyphens, parentheses, brackets; no double spaces)."""
    name = " ".join(_BEDROCK_NAME.sub(" ", part.title or "").split()) or f"document-{number + 1}"
    fmt = _BEDROCK_FORMATS[part.mime_type.lower()]
    return {"document": {"format": fmt, "name": name[:200], "source": {"bytes": part.data}}}


def bedrock_text_format(out: OutputSchema) -> dict[str, Any]:
    """Converse ``outputConfig.textFormat`` (the schema travels as a JSON string)."""
    schema = msgspec.json.encode(strict_schema(out.schema)[0]).decode()
    return {
        "type": "json_schema",
        "structure": {"jsonSchema": {"schema": schema, "name": out.name}},
    }
