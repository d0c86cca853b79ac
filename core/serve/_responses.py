"""What every route's encoder is made of: the `Encoder` pair, the `Stamps` the shell
hands in (ids, timestamps, the agent contract's clock, so this stays pure), and the
frames every stream shares. Which encoder a route uses is its record's
(`streamfn.core.serve._served`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

from streamfn.core.dialects.agent_events import AgentEventsEncoder

from .._events import Event
from ..dialects._request_fields import ClientRequest
from ..wire._sse import encode_sse

__all__ = [
    "KEEP_ALIVE",
    "MAX_BATCH",
    "OPENED",
    "Encoder",
    "Stamps",
    "agent_encoder",
    "each",
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
