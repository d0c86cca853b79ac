"""OpenAI Chat Completions' streamed chunks as msgspec structs: only the fields we read.

Pure Python beside a compiled `_response.py`: pyproject.toml's
[tool.streamfn.compiled] says why structs stay out of compiled modules.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from streamfn.core.dialects._openai_common import WireUsage

__all__ = [
    "Choice",
    "Chunk",
    "Delta",
    "ErrorBody",
    "ErrorEnvelope",
    "Function",
    "HotChunk",
    "Part",
    "PieceChoice",
    "PieceChunk",
    "PieceDelta",
    "ReasoningDetail",
    "ToolCallDelta",
    "XGroq",
    "decode_chunk",
    "decode_error",
    "decode_hot",
    "decode_piece",
]

class Function(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct, gc=False):
    index: int | None = None
    id: str | None = None
    function: Function | None = None
    extra_content: Any = None  # Gemini's carrier of a thought signature (`call_signature`)


class Part(msgspec.Struct, gc=False):
    """Mistral's typed content chunk: ``text``, or ``thinking`` holding text chunks."""

    type: str = ""
    text: str | None = None
    thinking: list[Part] | str | None = None


class ReasoningDetail(msgspec.Struct, gc=False):
    signature: str | None = None


class Delta(msgspec.Struct, gc=False):
    content: str | list[Part] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    reasoning_details: list[ReasoningDetail] | None = None
    annotations: list[Any] | None = None  # url_citation (search models)


class Choice(msgspec.Struct, gc=False):
    index: int = 0
    delta: Delta | None = None
    finish_reason: str | None = None


class XGroq(msgspec.Struct, gc=False):
    usage: WireUsage | None = None


class ErrorBody(msgspec.Struct, gc=False):
    message: str | None = None
    code: str | int | None = None
    type: str | None = None
    status_code: int | None = None


class HotChunk(msgspec.Struct, gc=False):
    """A chunk without its id: what the hot loop decodes once the id is known."""

    choices: list[Choice] | None = None
    usage: WireUsage | None = None
    x_groq: XGroq | None = None
    error: ErrorBody | str | None = None


class Chunk(HotChunk, gc=False):
    id: str | None = None
    model: str | None = None


# A chunk that can only be more of the answer: what the hot loop decodes first. Each
# field that a chunk carrying one more piece holds as null (usage, errors, the finish,
# a refusal, citations) is typed None here, so msgspec refuses any other chunk (then
# decoded as a `HotChunk`) and the loop need not read those fields to know it.


class PieceDelta(Delta, gc=False):
    refusal: None = None
    annotations: None = None


class PieceChoice(Choice, gc=False):
    delta: PieceDelta | None = None
    finish_reason: None = None


class PieceChunk(HotChunk, gc=False):
    # narrower choices: a list is invariant to mypy, but the decoder alone writes it
    choices: list[PieceChoice] | None = None  # type: ignore[assignment]
    usage: None = None
    x_groq: None = None
    error: None = None


class ErrorEnvelope(msgspec.Struct, gc=False):
    error: ErrorBody | str | None = None


decode_chunk: Final = msgspec.json.Decoder(Chunk).decode
decode_hot: Final = msgspec.json.Decoder(HotChunk).decode
decode_piece: Final = msgspec.json.Decoder(PieceChunk).decode
decode_error: Final = msgspec.json.Decoder(ErrorEnvelope).decode
