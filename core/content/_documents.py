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
bytes. What a wire format takes, and how a part is written in its body, is
said in its room (its `WireFormat` and part builders); this module decides
*what* and names no format.

Documents inside tool results are sent only where the format has a place
for them (``WireFormat.documents_in_tool_results``); elsewhere they are refused
the same way.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Final

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
from .._wire_formats import wire_format
from ..catalogue._capabilities import UnsupportedInput, capabilities_for
from ._server_tools import check_server_tools

if TYPE_CHECKING:
    from ..catalogue._models import Model

__all__ = [
    "INPUT_KINDS",
    "UnsupportedInput",
    "check_inputs",
    "data_url",
    "document_filename",
    "document_text",
    "input_kind",
    "inputs_for",
]

#: every input kind, in the order errors list them
INPUT_KINDS: Final = ("image", "image_url", "document", "document_url")


def input_kind(part: ImageContent | DocumentContent) -> str:
    base = "image" if isinstance(part, ImageContent) else "document"
    return base + "_url" if part.url is not None else base


def inputs_for(model: Model) -> tuple[str, ...]:
    """The input kinds ``model`` takes: its capabilities' ``inputs``, else its format's."""
    declared = capabilities_for(model).inputs
    if declared is not None:
        return declared
    return wire_format(model.api).input_kinds(model)


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
    room = wire_format(model.api)
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
                if isinstance(message, ToolResultMessage) and not room.documents_in_tool_results:
                    raise UnsupportedInput(
                        f"{model.provider} ({model.api} API) takes no documents inside tool "
                        f"results ({where}); send the document in a user message instead"
                    )
                if room.check_document is not None:
                    room.check_document(part, where)
    check_server_tools([t for t in context.tools if isinstance(t, ServerTool)], model)


def data_url(part: ImageContent | DocumentContent) -> str:
    return f"data:{part.mime_type};base64,{part.data}"


_EXTENSIONS: Final = {
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/csv": "csv",
    "text/html": "html",
}


def document_filename(part: DocumentContent, number: int = 0) -> str:
    """The name a document goes by where a format wants one: its title, else a numbered
    name with its type's extension."""
    if part.title:
        return part.title
    ext = _EXTENSIONS.get(part.mime_type.lower(), part.mime_type.rsplit("/", 1)[-1] or "bin")
    return f"document-{number + 1}.{ext}"


def document_text(part: DocumentContent) -> str:
    """A text document's words (its ``data`` is base64 UTF-8), or `UnsupportedInput`."""
    try:
        return base64.b64decode(part.data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise UnsupportedInput(
            f"a {part.mime_type} document must be UTF-8 text in base64 ``data``"
        ) from None
