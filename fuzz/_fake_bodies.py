"""The fake provider's response bodies: a short answer in every wire format.

Each builder, in its format's room (``WireFormat.sample_body``), writes the bytes a
provider sends for one text answer (the words given), with the ids, usage and
terminal event real providers send, so `replay` of a body is the oracle for what
a shell must yield. Written out by hand rather than by the server encoders (`streamfn.core.serve`): those make
fresh ids and a different event set, and the fault suite pins these bytes
(`UNFINISHED` cuts them at a known event).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from streamfn.core._wire_formats import API_MODULES, wire_format
from streamfn.core.dialects._samples import WORDS, sse
from streamfn.core.dialects.anthropic._sample import anthropic_body
from streamfn.core.dialects.bedrock._sample import bedrock_body
from streamfn.core.dialects.gemini._sample import gemini_body
from streamfn.core.dialects.ollama._sample import ollama_body
from streamfn.core.dialects.openai_chat._sample import openai_body
from streamfn.core.dialects.openai_responses._sample import responses_body
from streamfn.core.wire import encode_message

__all__ = [
    "ANTHROPIC_BODY",
    "EVENTSTREAM",
    "OPENAI_BODY",
    "UNFINISHED",
    "WIRE_FORMATS",
    "WORDS",
    "WRONG_WORDS",
    "anthropic_body",
    "bedrock_body",
    "first_unit",
    "gemini_body",
    "ollama_body",
    "openai_body",
    "oversized_unit",
    "responses_body",
    "sse",
]


#: the text of the response a misbehaving server writes after the real one
WRONG_WORDS = ["ANOTHER", " CALLER'S", " ANSWER"]


OPENAI_BODY = openai_body()
ANTHROPIC_BODY = anthropic_body()

EVENTSTREAM = "application/vnd.amazon.eventstream"
#: every wire format the shells drive -> (body builder, content type), as its room says
WIRE_FORMATS: dict[str, tuple[Callable[[list[str]], bytes], str]] = {
    api: (builder, wire_format(api).content_type)
    for api in API_MODULES
    if (builder := wire_format(api).sample_body) is not None
}


def first_unit(body: bytes, ctype: str) -> bytes:
    """The body's first event, line or frame: a prefix the decoder accepts whole."""
    if ctype == EVENTSTREAM:
        return body[: struct.unpack(">I", body[:4])[0]]
    end = b"\n\n" if ctype == "text/event-stream" else b"\n"
    return body[: body.index(end) + len(end)]


def oversized_unit(ctype: str, size: int) -> bytes:
    """One wire unit (line or frame) of ``size`` bytes: over any small line or event cap."""
    if ctype == EVENTSTREAM:
        headers = {":event-type": "contentBlockDelta", ":message-type": "event"}
        return encode_message(headers, b"x" * size)
    if ctype == "text/event-stream":
        return b"data: " + b"x" * size
    return b'{"message": "' + b"x" * size


#: the body minus its terminal marker: a stream the provider never finished (the
#: formats whose room says where to cut, ``WireFormat.sample_cut``)
def _unfinished(api: str) -> bytes:
    room = wire_format(api)
    assert room.sample_body is not None
    return room.sample_body().split(room.sample_cut)[0]  # its own words: the pinned bytes


UNFINISHED = {api: _unfinished(api) for api in WIRE_FORMATS if wire_format(api).sample_cut}
