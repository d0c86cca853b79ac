"""Images by URL or bytes and documents (PDF, text ...) in each wire format.

What a user sends (`ImageContent`, `DocumentContent`) is one of four input
kinds (`INPUT_KINDS`): ``image`` (bytes), ``image_url``, ``document``
(bytes), ``document_url``. Which kinds a model takes is part of its
`Capabilities` (``inputs``); left unset, the wire format's defaults below
apply. `check_inputs` runs before any request is built (from
`prepare_messages`), so a kind the provider cannot take is an
`UnsupportedInput` naming the provider, the kind and what to do instead,
and nothing is sent.

URLs are never fetched here or by the shells: a URL goes to the provider,
which fetches it from its own network (Anthropic, OpenAI, Gemini). Where a
provider takes no URLs (Bedrock, Ollama) the caller fetches and passes
bytes. The per-format part builders (``anthropic_part`` ...) live here too,
so each provider module has one call for every kind.

Documents inside tool results are sent only where the format has a place
for them (Anthropic); elsewhere they are refused the same way.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Any, Final

from .._messages import (
    Context,
    DocumentContent,
    ImageContent,
    Message,
    ServerTool,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from ..catalogue._capabilities import UnsupportedInput, capabilities_for
from ._server_tools import check_server_tools

if TYPE_CHECKING:
    from ..catalogue._models import Model

__all__ = [
    "INPUT_KINDS",
    "UnsupportedInput",
    "anthropic_part",
    "bedrock_document",
    "check_inputs",
    "data_url",
    "gemini_part",
    "input_kind",
    "inputs_for",
    "openai_chat_part",
    "responses_part",
]

#: every input kind, in the order errors list them
INPUT_KINDS: Final = ("image", "image_url", "document", "document_url")

#: the kinds each wire format takes when the model's capabilities do not say
_DEFAULT_INPUTS: Final[dict[str, tuple[str, ...]]] = {
    "anthropic": INPUT_KINDS,
    "openai-responses": INPUT_KINDS,
    "gemini": INPUT_KINDS,
    "openai-chat": ("image", "image_url"),
    "bedrock": ("image", "document"),
    "ollama": ("image",),
}
#: OpenAI-compatible providers whose Chat Completions takes ``file`` parts (file_data)
_CHAT_FILE_PROVIDERS: Final = frozenset({"openai", "azure", "openrouter"})


def input_kind(part: ImageContent | DocumentContent) -> str:
    base = "image" if isinstance(part, ImageContent) else "document"
    return base + "_url" if part.url is not None else base


def inputs_for(model: Model) -> tuple[str, ...]:
    """The input kinds ``model`` takes: its capabilities' ``inputs``, else its format's."""
    declared = capabilities_for(model).inputs
    if declared is not None:
        return declared
    kinds = _DEFAULT_INPUTS.get(model.api, INPUT_KINDS)
    if model.api == "openai-chat" and model.provider in _CHAT_FILE_PROVIDERS:
        kinds = (*kinds, "document")
    return kinds


_REMEDY: Final = {
    "image_url": "fetch the image yourself and send its bytes (ImageContent.from_bytes, base64)",
    "document_url": "fetch the document yourself and send its bytes (DocumentContent.from_bytes)",
    "document": "extract its text (or render its pages as images) and send that instead",
}


def _refuse(model: Model, kind: str, where: str) -> UnsupportedInput:
    takes = ", ".join(k for k in inputs_for(model)) or "text only"
    return UnsupportedInput(
        f"{model.provider} ({model.api} API, model {model.id}) cannot take {kind} inputs "
        f"({where}); it takes: {takes}. {_REMEDY.get(kind, 'send text instead')}"
    )


def _parts(message: Message) -> list[UserContent]:
    if isinstance(message, ToolResultMessage):
        return message.content
    if isinstance(message, UserMessage) and isinstance(message.content, list):
        return message.content
    return []


def check_inputs(context: Context, model: Model) -> None:
    """Raise `UnsupportedInput` for the first input ``model`` cannot take, and for a
    `ServerTool` its format has no form for. Images are checked only where the model
    takes images at all (a text-only model has them dropped, as before)."""
    takes = inputs_for(model)
    for number, message in enumerate(context.messages):
        for part in _parts(message):
            if not isinstance(part, (ImageContent, DocumentContent)):
                continue
            if isinstance(part, ImageContent) and not model.images:
                continue
            kind = input_kind(part)
            where = f"messages[{number}]"
            if kind not in takes:
                raise _refuse(model, kind, where)
            if isinstance(part, DocumentContent):
                if isinstance(message, ToolResultMessage) and model.api != "anthropic":
                    raise UnsupportedInput(
                        f"{model.provider} ({model.api} API) takes no documents inside tool "
                        f"results ({where}); send the document in a user message instead"
                    )
                _check_document_type(part, model, where)
    check_server_tools([t for t in context.tools if isinstance(t, ServerTool)], model)


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


def _check_document_type(part: DocumentContent, model: Model, where: str) -> None:
    mime = part.mime_type.lower()
    if model.api == "bedrock" and mime not in _BEDROCK_FORMATS:
        raise UnsupportedInput(
            f"bedrock takes documents of types {', '.join(sorted(_BEDROCK_FORMATS))}, "
            f"not {part.mime_type!r} ({where}); convert it to one of them"
        )
    if (
        model.api == "anthropic"
        and part.url is None
        and mime != "application/pdf"
        and not mime.startswith("text/")
    ):
        raise UnsupportedInput(
            f"anthropic takes PDF or text documents, not {part.mime_type!r} ({where}); "
            "convert it to PDF or extract its text"
        )


def data_url(part: ImageContent | DocumentContent) -> str:
    return f"data:{part.mime_type};base64,{part.data}"


_EXTENSIONS: Final = {
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/csv": "csv",
    "text/html": "html",
}


def _filename(part: DocumentContent, number: int = 0) -> str:
    if part.title:
        return part.title
    ext = _EXTENSIONS.get(part.mime_type.lower(), part.mime_type.rsplit("/", 1)[-1] or "bin")
    return f"document-{number + 1}.{ext}"


# -- one builder per wire format -------------------------------------------------------


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
        block["source"] = {"type": "text", "media_type": "text/plain", "data": _text(part)}
    else:
        block["source"] = {"type": "base64", "media_type": "application/pdf", "data": part.data}
    if part.title:
        block["title"] = part.title
    return block


def _text(part: DocumentContent) -> str:
    try:
        return base64.b64decode(part.data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise UnsupportedInput(
            f"a {part.mime_type} document must be UTF-8 text in base64 ``data``"
        ) from None


def openai_chat_part(part: ImageContent | DocumentContent, number: int = 0) -> dict[str, Any]:
    """An ``image_url`` part (a URL or a data: URL) or a ``file`` part (file_data)."""
    if isinstance(part, ImageContent):
        return {"type": "image_url", "image_url": {"url": part.url or data_url(part)}}
    return {
        "type": "file",
        "file": {"file_data": data_url(part), "filename": _filename(part, number)},
    }


def responses_part(part: ImageContent | DocumentContent, number: int = 0) -> dict[str, Any]:
    """An ``input_image`` (``detail`` is required by the API's type) or ``input_file``."""
    if isinstance(part, ImageContent):
        url = part.url or data_url(part)
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if part.url is not None:
        return {"type": "input_file", "file_url": part.url}
    return {"type": "input_file", "file_data": data_url(part), "filename": _filename(part, number)}


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


_BEDROCK_NAME: Final = re.compile(r"[^A-Za-z0-9\-()\[\] ]+")


def bedrock_document(part: DocumentContent, number: int) -> dict[str, Any]:
    """A Converse ``document`` block; ``name`` keeps only the characters Bedrock allows
    (letters, digits, spaces, hyphens, parentheses, brackets; no double spaces)."""
    name = " ".join(_BEDROCK_NAME.sub(" ", part.title or "").split()) or f"document-{number + 1}"
    fmt = _BEDROCK_FORMATS[part.mime_type.lower()]
    return {"document": {"format": fmt, "name": name[:200], "source": {"bytes": part.data}}}
