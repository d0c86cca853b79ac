"""``POST /v1/agent/stream``: the agent-server SSE contract on `streamfn serve`.

The body is the native request (``model``, ``context``, ``options``, parsed by
the same function as ``/v1/stream``); the answer is the contract of
`streamfn.core.serve.agent_events`. This module only supplies what the pure encoder
must be given: fresh ULIDs (this clock, this randomness) and the clock for
``execution_time_ms``. Errors, even one before any output, go in-stream as the
contract's ``error`` event (``stream_start, error``) with the HTTP-equivalent
status inside, which is what an ``EventSource`` front end can read; only a
request refused before streaming (malformed body, bad key, server busy) is an
HTTP error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Final

from streamfn.core.events import Event
from streamfn.core.serve.agent_events import AgentEventsEncoder, new_ulid
from streamfn.core.serve.inbound import ClientRequest

__all__ = ["AGENT_PATH", "agent_encoder", "fresh_ulid"]

AGENT_PATH: Final = "/v1/agent/stream"


def fresh_ulid() -> str:
    return new_ulid(time.time_ns() // 1_000_000, os.urandom(10))


def agent_encoder(request: ClientRequest) -> tuple[Callable[[Event], bytes], Callable[[], bytes]]:
    """The frame encoder and keep-alive for one agent stream.

    Text is held until after the tool calls only when the request declares
    tools (see the documented event orders in `streamfn.core.serve.agent_events`).
    """
    encoder = AgentEventsEncoder(
        session_id=fresh_ulid(),
        message_id=fresh_ulid(),
        clock=time.perf_counter,
        hold_text=bool(request.context.tools),
    )
    return encoder.encode, encoder.keep_alive
