"""Events -> OpenAI Responses stream events (the inverse of the openai-responses decoder).

Every block is its own output item (``output_index`` = our content index):
text a ``message`` item, thinking a ``reasoning`` item whose summary streams,
tool calls ``function_call`` items. A thinking signature is the decoder's
reasoning JSON (``{"type": "reasoning", "encrypted_content": ..., "summary":
[...]}``); its ``encrypted_content`` goes back on the item, and another provider's
signature rides there too (`streamfn.core.dialects.openai_responses._signatures`), so a
client that replays the item hands the model its own signature back. Opaque blocks of
this API (server-tool items) are sent back as their finished item, its JSON
compacted (no line break can end an SSE frame early). Pure; the caller supplies
the response id. What the format cannot carry: redacted thinking, text and
tool-call signatures. The final
``response.completed`` (or ``response.incomplete``) lists every output item, so
it is also the whole body of a request that did not stream (`final`).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from streamfn.core._events import (
    Done,
    Error,
    Event,
    OpaqueBlock,
    Start,
    StopReason,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from streamfn.core.dialects._cut import CUT_STOP_REASONS, cut_error, unpaused
from streamfn.core.dialects._openai_citations import to_openai_annotation
from streamfn.core.dialects._openai_common import ERROR_CODES
from streamfn.core.dialects.openai_chat._encode import openai_error_type

from ._signatures import encrypted_content

__all__ = ["ResponsesEncoder", "responses_usage"]

_encoder: Final = msgspec.json.Encoder()


def responses_usage(usage: Usage) -> dict[str, Any]:
    """Our usage back into the Responses convention (cached tokens inside input)."""
    return {
        "input_tokens": usage.input + usage.cache_read + usage.cache_write,
        "input_tokens_details": {
            "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_write,
        },
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.total,
    }


class ResponsesEncoder:
    """Stateful: an item's final text and arguments are repeated at its end."""

    def __init__(
        self, *, response_id: str, model: str, created: int = 0, messages: bool = False
    ) -> None:
        """``messages``: also keep each event's JSON apart (`messages`), for a transport
        that frames them itself (a WebSocket's text messages)."""
        self._id = response_id
        self._model = model
        self._created = created
        self._sequence = 0
        self._texts: dict[int, list[str]] = {}
        self._calls: dict[int, tuple[str, str]] = {}
        #: each finished output item, by output index: the final response lists them
        self._finished: dict[int, dict[str, Any] | msgspec.Raw] = {}
        #: the response object of the last ``response.completed``/``incomplete`` frame
        self.final: dict[str, Any] | None = None
        #: each event's JSON since the caller last took them (with ``messages=True``)
        self.messages: list[bytes] | None = [] if messages else None

    def _frame(self, kind: str, **fields: Any) -> bytes:
        obj = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        data = _encoder.encode(obj)
        if self.messages is not None:
            self.messages.append(data)
        return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "response",
            "created_at": self._created,
            "model": self._model,
            "status": status,
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            **fields,
        }

    def _item_id(self, index: int) -> str:
        return f"item_{self._id}_{index}"

    def _item_added(self, index: int, item: dict[str, Any]) -> bytes:
        item = {"id": self._item_id(index), **item}
        return self._frame("response.output_item.added", output_index=index, item=item)

    def _item_done(self, index: int, item: dict[str, Any]) -> bytes:
        item = {"id": self._item_id(index), **item}
        self._finished[index] = item
        return self._frame("response.output_item.done", output_index=index, item=item)

    def _final(self, status: str, **fields: Any) -> dict[str, Any]:
        """The finished response: every output item in order, as clients fold them."""
        output = [self._finished[index] for index in sorted(self._finished)]
        self.final = self._response(status, output=output, **fields)
        return self.final

    def _at(self, index: int, **fields: Any) -> dict[str, Any]:
        """The fields that place an event on output item ``index``."""
        return {"output_index": index, "item_id": self._item_id(index), **fields}

    def encode(self, event: Event) -> bytes:
        """Bytes to write for one event (empty when the format has nothing to say)."""
        if isinstance(event, TextDelta):
            self._texts[event.index].append(event.delta)
            at = self._at(event.index, content_index=0, delta=event.delta, logprobs=[])
            return self._frame("response.output_text.delta", **at)
        if isinstance(event, ThinkingDelta):
            texts = self._texts[event.index]
            opened = b"" if texts else self._summary_part("added", event.index, "")
            texts.append(event.delta)
            at = self._at(event.index, summary_index=0, delta=event.delta)
            return opened + self._frame("response.reasoning_summary_text.delta", **at)
        if isinstance(event, ToolCallDelta):
            self._texts[event.index].append(event.delta)
            at = self._at(event.index, delta=event.delta)
            return self._frame("response.function_call_arguments.delta", **at)
        if isinstance(event, (TextStart, ThinkingStart, ToolCallStart)):
            return self._start(event)
        if isinstance(event, (TextEnd, ThinkingEnd, ToolCallEnd)):
            return self._end(event)
        if isinstance(event, OpaqueBlock):
            # its JSON without line breaks: an upstream's may hold some (JSON whitespace,
            # or data over several SSE ``data:`` lines), and one would end this frame early
            try:
                compact = msgspec.json.format(event.json.encode(), indent=-1)
            except msgspec.DecodeError:
                return b""
            raw = self._finished[event.index] = msgspec.Raw(compact)
            return self._frame("response.output_item.done", output_index=event.index, item=raw)
        if isinstance(event, Start):
            return self._frame("response.created", response=self._response("in_progress"))
        if isinstance(event, Done):
            event = unpaused(event)  # a paused turn is an incomplete response
        if isinstance(event, Done) and event.stop_reason in CUT_STOP_REASONS:
            event = cut_error(event)  # a cut answer is no "completed" response
        if isinstance(event, Done):
            usage = responses_usage(event.usage)
            if event.stop_reason == StopReason.LENGTH:
                details = {"reason": "max_output_tokens"}
                response = self._final("incomplete", usage=usage, incomplete_details=details)
                return self._frame("response.incomplete", response=response)
            response = self._final("completed", usage=usage)
            return self._frame("response.completed", response=response)
        if isinstance(event, Error):
            # The ``error`` event: its code is free text (a failed response's is a
            # closed list that has no word for most of our kinds).
            code = ERROR_CODES[event.kind] if event.kind else "server_error"
            fields: dict[str, Any] = {"code": code, "message": event.message, "param": None}
            if self.messages is not None:  # a socket's: the SDK's ResponseWsError, in ``error``
                error_type = openai_error_type(event.kind)
                fields["error"] = {"type": error_type, **fields}
            return self._frame("error", **fields)
        return b""

    def _start(self, event: TextStart | ThinkingStart | ToolCallStart) -> bytes:
        self._texts[event.index] = []
        if isinstance(event, TextStart):
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            part = {"type": "output_text", "text": "", "annotations": []}
            opened = self._item_added(event.index, item)
            at = self._at(event.index, content_index=0, part=part)
            return opened + self._frame("response.content_part.added", **at)
        if isinstance(event, ThinkingStart):
            item = {"type": "reasoning", "summary": []}
        else:
            self._calls[event.index] = (event.id, event.name)
            item = self._call_item(event.index, "", "in_progress")
        return self._item_added(event.index, item)

    def _end(self, event: TextEnd | ThinkingEnd | ToolCallEnd) -> bytes:
        index = event.index
        text = "".join(self._texts.pop(index))
        if isinstance(event, ThinkingEnd):
            return self._reasoning_done(event, text)
        if isinstance(event, ToolCallEnd):
            done = self._frame(
                "response.function_call_arguments.done",
                **self._at(index, name=self._calls[index][1], arguments=text),
            )
            return done + self._item_done(index, self._call_item(index, text, "completed"))
        annotations = [
            a for a in (to_openai_annotation(c, nested=False) for c in event.citations) if a
        ]
        added = b"".join(
            self._frame(
                "response.output_text.annotation.added",
                **self._at(index, content_index=0, annotation_index=n, annotation=annotation),
            )
            for n, annotation in enumerate(annotations)
        )
        part = {"type": "output_text", "text": text, "annotations": annotations}
        item = {"type": "message", "role": "assistant", "status": "completed", "content": [part]}
        at = self._at(index, content_index=0, text=text, logprobs=[])
        text_done = self._frame("response.output_text.done", **at)
        part_done = self._frame(
            "response.content_part.done", **self._at(index, content_index=0, part=part)
        )
        return added + text_done + part_done + self._item_done(index, item)

    def _call_item(self, index: int, arguments: str, status: str) -> dict[str, Any]:
        call_id, name = self._calls[index]
        return {
            "type": "function_call",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "status": status,
        }

    def _reasoning_done(self, event: ThinkingEnd, text: str) -> bytes:
        item: dict[str, Any] = {"type": "reasoning", "summary": []}
        if text:
            item["summary"] = [{"type": "summary_text", "text": text}]
        if event.signature and (carried := encrypted_content(event.signature)):
            item["encrypted_content"] = carried
        out = b""
        if text:
            at = self._at(event.index, summary_index=0, text=text)
            out = self._frame("response.reasoning_summary_text.done", **at)
            out += self._summary_part("done", event.index, text)
        return out + self._item_done(event.index, item)

    def _summary_part(self, which: str, index: int, text: str) -> bytes:
        """A reasoning summary part's ``added`` (before its first delta) or ``done`` frame."""
        part = {"type": "summary_text", "text": text}
        at = self._at(index, summary_index=0, part=part)
        return self._frame(f"response.reasoning_summary_part.{which}", **at)
