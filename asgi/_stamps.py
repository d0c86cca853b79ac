"""Fresh ids and times for the encoders (`streamfn.core.serve._responses.Stamps`): this
clock, this randomness; plus the agent route's encoder made with them."""

from __future__ import annotations

import os
import time
import uuid

from streamfn.core.dialects.agent_events._encode import new_ulid
from streamfn.core.serve._inbound import ClientRequest
from streamfn.core.serve._responses import Encoder
from streamfn.core.serve._responses import agent_encoder as _agent_encoder

__all__ = ["SystemStamps", "agent_encoder", "fresh_ulid"]


def fresh_ulid() -> str:
    return new_ulid(time.time_ns() // 1_000_000, os.urandom(10))


class SystemStamps:
    """Ids from `uuid4` and ``os.urandom``, times from the system clocks."""

    def hex_id(self) -> str:
        return uuid.uuid4().hex[:24]

    def ulid(self) -> str:
        return fresh_ulid()

    def unix_time(self) -> int:
        return int(time.time())

    def clock(self) -> float:
        return time.perf_counter()


def agent_encoder(request: ClientRequest) -> Encoder:
    """The agent route's encoder with this machine's ids and clock."""
    return _agent_encoder(request, SystemStamps())
