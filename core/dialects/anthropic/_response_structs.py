"""Anthropic Messages' streamed events as msgspec structs: only the fields we read.

Pure Python beside a compiled `_response.py`: pyproject.toml's
[tool.streamfn.compiled] says why structs stay out of compiled modules.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = [
    "NO_RAW",
    "BlockHead",
    "Delta",
    "ErrorBody",
    "HotDelta",
    "HotJson",
    "HotText",
    "HotThinking",
    "Message",
    "Usage",
    "WireEvent",
    "decode_event",
    "decode_head",
    "decode_hot",
]

NO_RAW: Final = msgspec.Raw()


class Delta(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None
    citation: Any = None


class Usage(msgspec.Struct, gc=False):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class Message(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    usage: Usage | None = None


class ErrorBody(msgspec.Struct, gc=False):
    type: str = ""
    message: str = ""


class WireEvent(msgspec.Struct, gc=False):
    type: str
    index: int | None = None
    delta: Delta | None = None
    content_block: msgspec.Raw = NO_RAW  # empty when absent (Raw cannot be Optional)
    message: Message | None = None
    usage: Usage | None = None
    error: ErrorBody | None = None


class BlockHead(msgspec.Struct, gc=False):
    """The ``content_block`` of ``content_block_start``, for the block types we interpret."""

    type: str
    text: str = ""
    thinking: str = ""
    signature: str = ""
    data: str = ""
    id: str = ""
    name: str = ""
    input: msgspec.Raw = NO_RAW
    citations: list[Any] | None = None


# The hot loop's event: a text, thinking or tool-argument delta, nearly every event of
# a stream. Tagged by ``type``, so msgspec checks the types and fills nothing else; any
# other event (or delta type) fails this decode and is read as a `WireEvent`. Each
# delta's string is ``piece``, whatever the wire names it.


class HotText(msgspec.Struct, tag_field="type", tag="text_delta", gc=False):
    piece: str = msgspec.field(name="text")


class HotThinking(msgspec.Struct, tag_field="type", tag="thinking_delta", gc=False):
    piece: str = msgspec.field(name="thinking")


class HotJson(msgspec.Struct, tag_field="type", tag="input_json_delta", gc=False):
    piece: str = msgspec.field(name="partial_json")


class HotDelta(msgspec.Struct, tag_field="type", tag="content_block_delta", gc=False):
    index: int
    delta: HotText | HotThinking | HotJson


decode_event: Final = msgspec.json.Decoder(WireEvent).decode
decode_hot: Final = msgspec.json.Decoder(HotDelta).decode
decode_head: Final = msgspec.json.Decoder(BlockHead).decode
