"""Events -> the agent-server SSE contract (``stream_start`` ... ``stream_end``), and ULIDs.

The contract is an agent server's SSE contract, what front ends written for an
agent server consume: ``stream_start`` with session and message ids (ULIDs),
``message_delta`` for answer text, ``tool_call_start`` / ``tool_call_args`` /
``tool_call_end`` (with a ``status``), ``stream_end`` with token usage and
``execution_time_ms``, ``error`` as an RFC 9457 problem-details object with an
HTTP-equivalent status, and ``: keepalive`` comments. `streamfn serve` speaks
it on ``POST /v1/agent/stream``; the ``agent-events`` wire format
(`streamfn.core.dialects.agent_events._client`) reads it back.

Pure: the caller passes the ids (`new_ulid` builds one from a time and random
bytes the caller supplies) and a monotonic clock for ``execution_time_ms``.

Event orders. The contract documents three:

1. ``stream_start, message_delta*, stream_end``
2. ``stream_start, (tool_call_start, tool_call_args*, tool_call_end)+, message_delta*, stream_end``
3. ``stream_start, message_delta*, error``

Together (with 3 after tool calls too): ``stream_start (tool call)* message_delta*
(stream_end | error)``, which `AGENT_ORDER` matches. Models often write text
*before* a tool call ("Let me look that up"), which no documented order
allows, so with ``hold_text`` (the server sets it when the request declares
tools, the only case in which a provider calls one) the answer text is held
and sent after the tool calls, at the end of the stream. Without tools text
streams as it comes. A tool call still open when the stream fails ends with
``status: "error"`` before the ``error`` event.

What the contract has no field for is dropped: thinking, opaque provider
blocks, signatures, cache-write counts (inside ``prompt_tokens``). Two
extension members, allowed by the contract's JSON objects, keep a round trip
honest: ``stop_reason`` on ``stream_end`` and ``retry_after`` on ``error``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import msgspec

from streamfn.core._accumulate import parse_arguments
from streamfn.core._events import (
    Done,
    Error,
    Event,
    Start,
    StopReason,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from streamfn.core.dialects._cut import unpaused
from streamfn.core.dialects._statuses import OWN_STATUSES, STATUS_FOR_KIND
from streamfn.core.dialects.openai_chat._encode import openai_usage
from streamfn.core.wire._sse import encode_sse

__all__ = [
    "AGENT_ORDER",
    "ERROR_TYPE_BASE",
    "AgentEventsEncoder",
    "new_ulid",
    "problem_details",
]

_CROCKFORD: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

#: every encoded stream's event names, joined with spaces, match this
AGENT_ORDER: Final = re.compile(
    r"stream_start( tool_call_start( tool_call_args)* tool_call_end)*( message_delta)*"
    r" (stream_end|error)"
)

#: where the ``type`` URIs of our problem details point; the kind is appended
ERROR_TYPE_BASE: Final = "https://streamfn.dev/errors/"

#: an error without a kind that the caller caused by going away (nginx's 499)
_ABORTED_STATUS: Final = 499

_json: Final = msgspec.json.Encoder()
KEEP_ALIVE: Final = encode_sse(comment="keepalive")


def new_ulid(timestamp_ms: int, randomness: bytes) -> str:
    """A ULID: 48 bits of milliseconds since the epoch, 80 random bits, Crockford base32.

    The caller passes both (the core reads no clock and draws no random numbers):
    ``new_ulid(int(time.time() * 1000), os.urandom(10))``.
    """
    if not 0 <= timestamp_ms < 1 << 48:
        raise ValueError("a ULID timestamp is 48 bits of milliseconds")
    if len(randomness) != 10:
        raise ValueError("a ULID needs exactly 10 random bytes")
    value = (timestamp_ms << 80) | int.from_bytes(randomness, "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def problem_details(error: Error, *, type_base: str = ERROR_TYPE_BASE) -> dict[str, Any]:
    """``error`` as RFC 9457 problem details: type URI, title, HTTP-equivalent status, detail."""
    if error.stop_reason == StopReason.ABORTED:
        slug, status = "aborted", _ABORTED_STATUS
    elif error.kind is None:
        slug, status = "error", 500
    else:
        slug = error.kind.value.replace("_", "-")
        # the server's own statuses (an unknown model, shutting down) stay as they are,
        # as they do on every other route
        own = error.status if error.status in OWN_STATUSES else None
        status = own or STATUS_FOR_KIND.get(error.kind, 502)
    problem: dict[str, Any] = {
        "type": type_base + slug,
        "title": slug.replace("-", " ").capitalize(),
        "status": status,
        "detail": error.message,
    }
    if error.retry_after is not None:
        problem["retry_after"] = error.retry_after
    return problem


class AgentEventsEncoder:
    """Our events in, the contract's SSE frames out (see the module docstring).

    ``clock`` is a monotonic clock in seconds; the time from construction to
    the terminal event is ``execution_time_ms``.
    """

    def __init__(
        self,
        *,
        session_id: str,
        message_id: str,
        clock: Callable[[], float],
        hold_text: bool = False,
        error_type_base: str = ERROR_TYPE_BASE,
    ) -> None:
        self.session_id = session_id
        self.message_id = message_id
        self._clock = clock
        self._began = clock()
        self._hold = hold_text
        self._held: list[str] = []
        self._type_base = error_type_base
        self._calls: dict[int, str] = {}  # open tool calls: index -> tool_call_id
        self._args: dict[int, list[str]] = {}
        self._tool_calls = 0
        # Parallel calls go out one after another (the contract has no interleaving):
        # the first open call streams live, the frames of the others wait their turn.
        self._lane: list[int] = []  # calls not yet fully sent, in order of their start
        self._waiting: dict[int, list[bytes]] = {}
        self._ended: set[int] = set()

    def keep_alive(self) -> bytes:
        return KEEP_ALIVE

    def encode(self, event: Event) -> bytes:
        """The frames for one event (empty for what the contract does not carry)."""
        if isinstance(event, TextDelta):
            if self._hold:
                self._held.append(event.delta)
                return b""
            return self._text(event.delta)
        if isinstance(event, ToolCallDelta):
            call_id = self._calls.get(event.index)
            if call_id is None:
                return b""
            self._args[event.index].append(event.delta)
            args = {"tool_call_id": call_id, "args_delta": event.delta}
            return self._in_turn(event.index, self._frame("tool_call_args", args))
        if isinstance(event, ToolCallStart):
            self._calls[event.index] = event.id
            self._args[event.index] = []
            self._tool_calls += 1
            self._lane.append(event.index)
            self._waiting[event.index] = []
            started = {"tool_call_id": event.id, "name": event.name, "message_id": self.message_id}
            return self._in_turn(event.index, self._frame("tool_call_start", started))
        if isinstance(event, ToolCallEnd):
            if event.index not in self._calls:
                return b""
            arguments = "".join(self._args.pop(event.index, []))
            ok = parse_arguments(arguments)[1] is None
            frame = self._end_frame(event.index, "success" if ok else "error")
            if self._lane[0] != event.index:
                self._waiting[event.index].append(frame)
                self._ended.add(event.index)
                return b""
            self._lane.pop(0)
            del self._waiting[event.index]
            return frame + self._next_in_lane()
        if isinstance(event, Start):
            ids = {"session_id": self.session_id, "message_id": self.message_id}
            return self._frame("stream_start", ids)
        if isinstance(event, Done):
            stop = unpaused(event).stop_reason  # a paused turn is "length", not "stop"
            if stop == StopReason.STOP and self._tool_calls:
                stop = StopReason.TOOL_USE
            payload: dict[str, Any] = {
                "message_id": self.message_id,
                "tokens_used": openai_usage(event.usage),
                "execution_time_ms": self._elapsed_ms(),
                "stop_reason": stop.value,
            }
            return self._flush() + self._frame("stream_end", payload)
        if isinstance(event, Error):
            cut = b""
            for index in self._lane:  # calls cut off end with status "error", in order
                cut += b"".join(self._waiting.pop(index))
                if index not in self._ended:
                    cut += self._end_frame(index, "error")
            self._lane = []
            problem = problem_details(event, type_base=self._type_base)
            return cut + self._flush() + self._frame("error", problem)
        return b""  # thinking, text block bounds, opaque blocks: no field for them

    def _text(self, delta: str) -> bytes:
        if not delta:
            return b""
        return self._frame("message_delta", {"delta": delta, "message_id": self.message_id})

    def _flush(self) -> bytes:
        held, self._held = "".join(self._held), []
        return self._text(held)

    def _end_frame(self, index: int, status: str) -> bytes:
        call_id = self._calls.pop(index)
        return self._frame("tool_call_end", {"tool_call_id": call_id, "status": status})

    def _in_turn(self, index: int, frame: bytes) -> bytes:
        """``frame`` now if its call is the one streaming, else kept for its turn."""
        if self._lane[0] == index:
            return frame
        self._waiting[index].append(frame)
        return b""

    def _next_in_lane(self) -> bytes:
        """The frames of the calls whose turn came: whole ones, then the next open one."""
        out = b""
        while self._lane:
            index = self._lane[0]
            out += b"".join(self._waiting[index])
            self._waiting[index] = []
            if index not in self._ended:
                break
            self._ended.discard(index)
            self._lane.pop(0)
            del self._waiting[index]
        return out

    def _elapsed_ms(self) -> int:
        return max(0, round((self._clock() - self._began) * 1000))

    @staticmethod
    def _frame(name: str, payload: dict[str, Any]) -> bytes:
        return encode_sse(_json.encode(payload).decode(), event=name)
