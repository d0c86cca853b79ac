"""Events -> the AG-UI event protocol (what an AG-UI client such as ``HttpAgent`` reads).

AG-UI sends one JSON event per SSE ``data:`` line, each with a ``type`` in
capitals and camelCase fields. Our events map one to one:

- `Start` -> ``RUN_STARTED`` (``threadId``, ``runId``: the client's own);
- a text block -> ``TEXT_MESSAGE_START`` (``messageId``, ``role: assistant``) /
  ``TEXT_MESSAGE_CONTENT`` (``delta``) / ``TEXT_MESSAGE_END``;
- a thinking block -> ``REASONING_START``, ``REASONING_MESSAGE_START``
  (``role: reasoning``), ``REASONING_MESSAGE_CONTENT``, its signature (when the
  provider gave one) as ``REASONING_ENCRYPTED_VALUE``, ``REASONING_MESSAGE_END``,
  then ``REASONING_END``;
- a tool call -> ``TOOL_CALL_START`` (``toolCallId``, ``toolCallName``,
  ``parentMessageId``), then at its end one ``TOOL_CALL_ARGS`` (``delta``: the
  whole arguments, as the tool-call checks of `streamfn.core.stages._tool_checks`
  repaired them, so they are held until the call ends) and ``TOOL_CALL_END``;
  a call the checks flagged (arguments that are not one JSON object or break the
  tool's schema) is followed by a ``CUSTOM`` event named
  ``streamfn.tool_call_error`` (``value``: ``toolCallId``, ``errors``) and is
  left out of ``pendingToolCallIds``: a client must not run it;
- `Done` -> ``RUN_FINISHED`` with a success ``outcome`` naming the tool calls the
  client is to answer (``pendingToolCallIds``), token ``usage``, and the stop
  reason in ``metadata.stopReason``. An incomplete answer is no finished run:
  AG-UI clients read ``RUN_FINISHED`` as success and know no finish reason (the
  ``metadata`` is ours), so where the other dialects say their ``length`` word this
  one says ``RUN_ERROR``: code ``length`` for an answer stopped at its token limit,
  code ``paused`` for a turn the provider paused and that was not continued
  (``Done.paused``; sending the conversation back continues it);
- `Error`, and a `Done` whose stop reason says the answer did not finish
  (`streamfn.core.dialects._cut`) -> ``RUN_ERROR`` (``message``, ``code``: the
  error kind): never a ``RUN_FINISHED``, so a cut answer is not shown as a
  whole one.

Message ids: the answer's first text block carries the message id the server
drew (tool calls name it as their parent); later text blocks add their index.
Empty deltas are not sent (the protocol requires a non-empty ``delta``).
Opaque provider blocks have no event and are left out.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from streamfn.core._accumulate import WholeToolCalls, call_problem, parse_arguments
from streamfn.core._events import (
    Done,
    Error,
    Event,
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
from streamfn.core.dialects._cut import CUT_STOP_REASONS, cut_error
from streamfn.core.wire._sse import encode_sse

__all__ = ["TOOL_CALL_ERROR", "AGUIEncoder", "agui_usage"]

#: the name of the ``CUSTOM`` event that says why a tool call must not run
TOOL_CALL_ERROR: Final = "streamfn.tool_call_error"

#: the ``RUN_ERROR`` message of a turn the provider paused and nobody continued
PAUSED: Final = (
    "the provider paused the turn before the answer was complete; send the conversation "
    "with this answer back to continue it"
)
#: the ``RUN_ERROR`` message of an answer stopped at its token limit
LENGTH: Final = (
    "the answer reached its token limit (max_tokens) before it was complete: what came "
    "is only its start; ask for a shorter answer or raise the limit"
)
_json: Final = msgspec.json.Encoder()
_KEEP_ALIVE: Final = encode_sse(comment="keep-alive")


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + _json.encode(obj) + b"\n\n"


def agui_usage(usage: Usage) -> dict[str, int]:
    """`Usage` in AG-UI's accounting: totals for input and output, cache and reasoning
    counts as parts of them (our ``input`` excludes cached tokens, theirs includes them)."""
    prompt = usage.input + usage.cache_read + usage.cache_write
    return {
        "inputTokens": prompt,
        "outputTokens": usage.output,
        "totalTokens": prompt + usage.output,
        "reasoningTokens": usage.reasoning,
        "cachedInputTokens": usage.cache_read,
        "cacheWriteInputTokens": usage.cache_write,
    }


class AGUIEncoder:
    """Our events in, AG-UI events out (see the module docstring)."""

    def __init__(self, *, thread_id: str, run_id: str, message_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.message_id = message_id
        self._texts: dict[int, str] = {}  # text block index -> its message id
        self._first_text = True
        self._calls = WholeToolCalls()
        self._called: list[str] = []  # the calls a client may run, in order

    def keep_alive(self) -> bytes:
        return _KEEP_ALIVE

    def _reasoning_id(self, index: int) -> str:
        return f"{self.message_id}-reasoning-{index}"

    def encode(self, event: Event) -> bytes:
        if isinstance(event, TextDelta):
            if not event.delta:
                return b""
            message = self._texts.get(event.index, self.message_id)
            return _event(
                {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": event.delta}
            )
        if isinstance(event, ThinkingDelta):
            if not event.delta:
                return b""
            rid = self._reasoning_id(event.index)
            return _event(
                {"type": "REASONING_MESSAGE_CONTENT", "messageId": rid, "delta": event.delta}
            )
        if isinstance(event, ToolCallDelta):
            self._calls.add(event)  # sent whole, as checked, at the call's end
            return b""
        return self._structure(event)

    def _structure(self, event: Event) -> bytes:
        if isinstance(event, TextStart):
            message = self.message_id if self._first_text else f"{self.message_id}-{event.index}"
            self._first_text = False
            self._texts[event.index] = message
            return _event({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"})
        if isinstance(event, TextEnd):
            message = self._texts.pop(event.index, self.message_id)
            return _event({"type": "TEXT_MESSAGE_END", "messageId": message})
        if isinstance(event, ThinkingStart):
            rid = self._reasoning_id(event.index)
            return _event({"type": "REASONING_START", "messageId": rid}) + _event(
                {"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"}
            )
        if isinstance(event, ThinkingEnd):
            rid = self._reasoning_id(event.index)
            out = b""
            if event.signature:
                out += _event(
                    {
                        "type": "REASONING_ENCRYPTED_VALUE",
                        "subtype": "message",
                        "entityId": rid,
                        "encryptedValue": event.signature,
                    }
                )
            out += _event({"type": "REASONING_MESSAGE_END", "messageId": rid})
            return out + _event({"type": "REASONING_END", "messageId": rid})
        if isinstance(event, ToolCallStart):
            self._calls.add(event)
            return _event(
                {
                    "type": "TOOL_CALL_START",
                    "toolCallId": event.id,
                    "toolCallName": event.name,
                    "parentMessageId": self.message_id,
                }
            )
        if isinstance(event, ToolCallEnd):
            return self._tool_end(event)
        return self._run_event(event)

    def _tool_end(self, event: ToolCallEnd) -> bytes:
        call = self._calls.end_text(event)  # as the tool-call checks repaired it
        if call is None:
            return b""
        call_id, _, text = call
        out = b""
        if text:
            out += _event({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": text})
        out += _event({"type": "TOOL_CALL_END", "toolCallId": call_id})
        problem = call_problem(event, parse_arguments(text)[1])
        if problem is None:
            self._called.append(call_id)
            return out
        value = {"toolCallId": call_id, "errors": problem}
        return out + _event({"type": "CUSTOM", "name": TOOL_CALL_ERROR, "value": value})

    def _run_event(self, event: Event) -> bytes:
        run = {"threadId": self.thread_id, "runId": self.run_id}
        if isinstance(event, Start):
            return _event({"type": "RUN_STARTED", **run})
        if isinstance(event, Done) and event.stop_reason in CUT_STOP_REASONS:
            event = cut_error(event)  # a cut answer is no successful run
        if isinstance(event, Done) and event.paused is True:
            return _event({"type": "RUN_ERROR", "message": PAUSED, "code": "paused"})
        if isinstance(event, Done) and event.stop_reason is StopReason.LENGTH:
            return _event({"type": "RUN_ERROR", "message": LENGTH, "code": "length"})
        if isinstance(event, Done):
            outcome: dict[str, Any] = {"type": "success"}
            if self._called:
                outcome["pendingToolCallIds"] = list(self._called)
            return _event(
                {
                    "type": "RUN_FINISHED",
                    **run,
                    "outcome": outcome,
                    "usage": [agui_usage(event.usage)],
                    "metadata": {"stopReason": event.stop_reason.value},
                }
            )
        if isinstance(event, Error):
            error: dict[str, Any] = {"type": "RUN_ERROR", "message": event.message}
            if event.kind is not None:
                error["code"] = event.kind.value
            return _event(error)
        return b""  # opaque blocks: no event for them
