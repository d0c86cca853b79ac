"""Which encoder answers a request, and the whole body of a non-streaming one.

The route picks the dialect: OpenAI chunks, Anthropic events, the agent
contract, the front-end protocols (the AI SDK's UI message stream, AG-UI
events) or our own events (the native proxy wire). Ids, timestamps and the
agent contract's clock come from the shell as `Stamps`, so this stays pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

from streamfn.core.dialects.agent_events import AgentEventsEncoder
from streamfn.core.dialects.agui import AGUIEncoder
from streamfn.core.dialects.anthropic import AnthropicEncoder, anthropic_message_body
from streamfn.core.dialects.openai_chat import OpenAIChatEncoder, openai_completion_body
from streamfn.core.dialects.proxy import encode_proxy_events
from streamfn.core.dialects.ui_message_stream import UIMessageStreamEncoder
from streamfn.core.dialects.ui_message_stream._encode import UI_STREAM_HEADER

from .._accumulate import accumulate
from .._events import Done, Event
from ..wire._sse import encode_sse
from ._grounding import append_sources, appending_sources
from ._inbound import ClientRequest
from ._routes import AGENT_PATH, AGUI_PATH, CHAT_PATH, MESSAGES_PATH, SOURCELESS, UI_CHAT_PATH

__all__ = [
    "KEEP_ALIVE",
    "MAX_BATCH",
    "OPENED",
    "Encoder",
    "Stamps",
    "agent_encoder",
    "each",
    "encoder_for",
    "final_body",
    "stream_headers",
]

#: the native stream's keep-alive: an SSE comment every client ignores
KEEP_ALIVE: Final = encode_sse(comment="keep-alive")
#: the first bytes of a stream whose model has not spoken yet: every SSE client ignores it
OPENED: Final = encode_sse(comment="streamfn: waiting for the model")
#: most events coalesced into one write
MAX_BATCH: Final = 256

#: (encode a list of events into one write, a keep-alive frame)
Encoder = tuple[Callable[[list[Event]], bytes], Callable[[], bytes]]


def each(encode: Callable[[Event], bytes]) -> Callable[[list[Event]], bytes]:
    """A list encoder from a per-event one: the frames of each event, in order."""
    return lambda events: b"".join([encode(event) for event in events])


class Stamps(Protocol):
    """Fresh ids and times, from the shell (this clock, this randomness)."""

    def hex_id(self) -> str:
        """24 random hex digits (a response or message id's tail)."""
        ...

    def ulid(self) -> str:
        """A new ULID (the agent contract's session and message ids)."""
        ...

    def unix_time(self) -> int:
        """Seconds since the epoch (OpenAI's ``created``)."""
        ...

    def clock(self) -> float:
        """A monotonic clock in seconds (the agent contract's ``execution_time_ms``)."""
        ...


def agent_encoder(request: ClientRequest, stamps: Stamps) -> Encoder:
    """The frame encoder and keep-alive for one agent stream.

    Text is held until after the tool calls only when the request declares
    tools (see the documented event orders in `streamfn.core.dialects.agent_events._encode`).
    """
    encoder = AgentEventsEncoder(
        session_id=stamps.ulid(),
        message_id=stamps.ulid(),
        clock=stamps.clock,
        hold_text=bool(request.context.tools),
    )
    return each(encoder.encode), encoder.keep_alive


def _native_keep_alive() -> bytes:
    return KEEP_ALIVE


def encoder_for(
    path: str, request: ClientRequest, stamps: Stamps, *, append: bool = False
) -> Encoder:
    """The stream encoder for ``path``; ``append``: web-search sources as a last text
    block where the dialect has no field for them."""
    encoder: Encoder
    if path == CHAT_PATH:
        oa = OpenAIChatEncoder(
            response_id=f"chatcmpl-{stamps.hex_id()}",
            model=request.model,
            created=stamps.unix_time(),
            include_usage=request.include_usage,
        )
        encoder = oa.encode_many, oa.keep_alive
    elif path == MESSAGES_PATH:
        an = AnthropicEncoder(message_id=f"msg_{stamps.hex_id()}", model=request.model)
        encoder = each(an.encode), an.keep_alive
    elif path == AGENT_PATH:
        encoder = agent_encoder(request, stamps)
    elif path == UI_CHAT_PATH:
        message_id = request.echo.get("messageId") or f"msg-{stamps.hex_id()}"
        ui = UIMessageStreamEncoder(message_id=message_id)
        encoder = each(ui.encode), ui.keep_alive
    elif path == AGUI_PATH:
        ag = AGUIEncoder(
            thread_id=request.echo["threadId"],
            run_id=request.echo["runId"],
            message_id=f"msg-{stamps.hex_id()}",
        )
        encoder = each(ag.encode), ag.keep_alive
    else:
        encoder = encode_proxy_events, _native_keep_alive
    if append and path in SOURCELESS:
        return appending_sources(encoder[0]), encoder[1]
    return encoder


def stream_headers(path: str) -> list[tuple[bytes, bytes]]:
    """Response headers a streaming route adds to the SSE ones (the UI message stream's
    protocol header, which the AI SDK's clients look for)."""
    return [UI_STREAM_HEADER] if path == UI_CHAT_PATH else []


def final_body(
    path: str, request: ClientRequest, events: list[Event], stamps: Stamps, *, append: bool = False
) -> dict[str, Any]:
    """A non-streaming response, built by folding the same events a stream carries."""
    if append and path in SOURCELESS:
        events = append_sources(events)
    message = accumulate(events)
    done = events[-1] if events else None
    paused = isinstance(done, Done) and done.paused is True
    if path == MESSAGES_PATH:
        return anthropic_message_body(
            message, message_id=f"msg_{stamps.hex_id()}", model=request.model, paused=paused
        )
    return openai_completion_body(
        message,
        response_id=f"chatcmpl-{stamps.hex_id()}",
        model=request.model,
        created=stamps.unix_time(),
    )
